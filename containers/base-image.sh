#!/usr/bin/env bash
# A minimal Debian bookworm with Python 3.11 from Debian's own packages, imported as a Docker
# image: the base for an engine that can reach no image registry (this project's CI). Users
# never need it: the Dockerfile's default base is the official python:3.11-slim-bookworm.
#   containers/base-image.sh [TAG [ARCH]]   (skips when TAG already exists)
# ARCH arm64 on an amd64 machine needs qemu user-mode emulation registered with binfmt_misc
# (Debian: qemu-user-static binfmt-support), as the Pi's image is tried here.
set -euo pipefail

TAG=${1:-clawmesh/base:bookworm-py311}
ARCH=${2:-$(dpkg --print-architecture 2>/dev/null || echo amd64)}
MIRROR=${DEBIAN_MIRROR:-http://deb.debian.org/debian}
SUITE=bookworm

if docker image inspect "$TAG" >/dev/null 2>&1; then
    echo "base image $TAG exists (docker rmi $TAG to rebuild)"
    exit 0
fi
if ! command -v debootstrap >/dev/null 2>&1; then
    echo "installing debootstrap (Debian's package)"
    if [ "$(id -u)" -eq 0 ]; then SUDO=(); else SUDO=(sudo); fi
    "${SUDO[@]}" apt-get update -qq
    "${SUDO[@]}" env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq debootstrap >/dev/null
fi

start=$(date +%s)
rootfs=$(mktemp -d /tmp/clawmesh-rootfs.XXXXXX)
trap 'rm -rf "$rootfs"' EXIT

# minbase: dpkg, apt and the essentials; python3-venv brings ensurepip (the builder stage
# makes a venv for uv from it); ca-certificates for TLS to the LLM, Telegram and Open-Meteo.
debootstrap --arch="$ARCH" --variant=minbase --include=python3,python3-venv,ca-certificates \
    "$SUITE" "$rootfs" "$MIRROR" >"$rootfs.log" 2>&1 || {
    tail -20 "$rootfs.log" >&2
    echo "debootstrap failed (full log: $rootfs.log)" >&2
    exit 1
}
rm -f "$rootfs.log"

# What an image never needs: package lists, caches, docs, man pages, locales but C.
rm -rf "$rootfs"/var/lib/apt/lists/* "$rootfs"/var/cache/apt/* "$rootfs"/var/cache/debconf/*-old \
    "$rootfs"/usr/share/doc/* "$rootfs"/usr/share/man/* "$rootfs"/usr/share/info/* \
    "$rootfs"/var/log/*.log
find "$rootfs"/usr/share/locale -mindepth 1 -maxdepth 1 ! -name 'C*' -exec rm -rf {} +

# python: the name the official image gives the interpreter (the Dockerfile uses python3).
tar -C "$rootfs" -c . | docker import --platform "linux/$ARCH" \
    --change 'ENV LANG=C.UTF-8' \
    --change 'ENV PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin' \
    --change 'CMD ["python3"]' \
    - "$TAG" >/dev/null
# Docker 20.10 ignores `import --platform`: the image claims the engine's architecture.
# Rewrite its config (save, patch, load) so builds FROM it know it is ARCH.
if [ "$(docker image inspect -f '{{.Architecture}}' "$TAG")" != "$ARCH" ]; then
    saved=$(mktemp -d /tmp/clawmesh-save.XXXXXX)
    docker save "$TAG" | tar -C "$saved" -x
    python3 - "$saved" "$ARCH" <<'PATCH'
import json, pathlib, sys
root, arch = pathlib.Path(sys.argv[1]), sys.argv[2]
config = root / json.loads((root / "manifest.json").read_text())[0]["Config"]
image = json.loads(config.read_text())
image["architecture"] = arch
if arch == "arm64":
    image["variant"] = "v8"
config.write_text(json.dumps(image))
PATCH
    tar -C "$saved" -c . | docker load >/dev/null
    rm -rf "$saved"
fi
echo "base image $TAG built in $(( $(date +%s) - start )) s ($(docker image inspect -f '{{.Size}}' "$TAG" | awk '{printf "%.0f MB", $1/1e6}'))"
