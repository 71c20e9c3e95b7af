#!/usr/bin/env bash
# The wheelhouse the images install from, made on the host from uv.lock: the build itself
# needs no network (an engine behind a TLS-intercepting proxy cannot verify PyPI, and a Pi
# builds faster from wheels fetched once).
#   containers/wheels.sh ARCH             ARCH: amd64 (default: the engine's) or arm64
# For each component image: containers/wheels/ARCH/<package>.txt, its locked third-party
# requirements with hashes (uv export), and <package>.members, the workspace wheels it needs.
set -euo pipefail
cd "$(dirname "$0")/.."

UV=${UV:-uv}
ARCH=${1:-$(docker version -f '{{.Server.Arch}}' 2>/dev/null || echo amd64)}
OUT=containers/wheels/$ARCH
PACKAGES=(clawmesh-orchestrator mcp-weather mcp-shopping mcp-memory mcp-pending-actions
    mcp-telegram-io)

case "$ARCH" in
amd64) machine=x86_64 ;;
arm64) machine=aarch64 ;;
*) echo "unknown architecture $ARCH: use amd64 or arm64" >&2; exit 2 ;;
esac
# Every manylinux tag bookworm's glibc (2.36) runs, spelled out: pip does not expand one.
platform=(--platform "manylinux2014_$machine")
for minor in $(seq 36 -1 17); do platform+=(--platform "manylinux_2_${minor}_$machine"); done

stamp=$OUT/.stamp
want=$(cat uv.lock meshkit/pyproject.toml orchestrator/pyproject.toml servers/*/pyproject.toml \
    | sha256sum | cut -c1-16)
sources=$(find meshkit/src orchestrator/src servers/*/src -newer "$stamp" -type f 2>/dev/null \
    | head -1 || true)
if [ -f "$stamp" ] && [ "$(cat "$stamp")" = "$want" ] && [ -z "$sources" ]; then
    exit 0
fi
rm -rf "$OUT"
mkdir -p "$OUT"

# pip for the download (uv has none): a throwaway venv, from the host's Python.
pipenv=$(mktemp -d /tmp/clawmesh-pip.XXXXXX)
trap 'rm -rf "$pipenv"' EXIT
python3 -m venv "$pipenv"

all=$OUT/all.txt
: >"$all"
for package in "${PACKAGES[@]}"; do
    "$UV" export --quiet --locked --no-dev --package "$package" --no-header --no-annotate \
        --no-emit-workspace --format requirements-txt -o "$OUT/$package.txt"
    cat "$OUT/$package.txt" >>"$all"
    "$UV" export --quiet --locked --no-dev --package "$package" --no-header --no-annotate \
        --no-editable --format requirements-txt | sed -n 's|^\./||p' >"$OUT/$package.dirs"
done

# One download for the union (the same pins everywhere); binary wheels only, for the
# image's Python (3.11) and architecture.
sort -u "$all" -o "$all"
for package in "${PACKAGES[@]}"; do
    "$pipenv/bin/pip" download --quiet --disable-pip-version-check --no-deps --require-hashes \
        --only-binary=:all: --python-version 3.11 --implementation cp --abi cp311 --abi abi3 --abi none \
        "${platform[@]}" -d "$OUT" -r "$OUT/$package.txt"
done

# The workspace members as wheels (pure Python), named per component.
for dir in $(cat "$OUT"/*.dirs | sort -u); do
    "$UV" build --quiet --wheel --out-dir "$OUT" "$dir" 2>/dev/null
done
for package in "${PACKAGES[@]}"; do
    : >"$OUT/$package.members"
    while read -r dir; do
        name=$(sed -n 's/^name = "\(.*\)"/\1/p' "$dir/pyproject.toml" | head -1 | tr '-' '_')
        (cd "$OUT" && ls "$name"-*.whl) >>"$OUT/$package.members"
    done <"$OUT/$package.dirs"
    rm "$OUT/$package.dirs"
done
rm -f "$all"
echo "$want" >"$stamp"
echo "wheelhouse $OUT: $(ls "$OUT"/*.whl | wc -l) wheels, $(du -sh "$OUT" | cut -f1)"
