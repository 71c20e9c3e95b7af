#!/usr/bin/env bash
# The wheelhouse the images install from, made on the host from uv.lock: the build itself
# needs no network (an engine behind a TLS-intercepting proxy cannot verify PyPI, and a Pi
# builds faster from wheels fetched once).
#   containers/wheels.sh ARCH             ARCH: amd64 (default: the engine's) or arm64
# For each component image: containers/wheels/ARCH/pypi/<package>.txt, its locked third-party
# requirements with hashes (uv export), beside their wheels; and workspace/<package>.members,
# the workspace wheels it needs, beside them (apart: a source change leaves pypi/ as it was,
# and the image's layer that installs from it cached).
set -euo pipefail
cd "$(dirname "$0")/.."

UV=${UV:-uv}
ARCH=${1:-$(docker version -f '{{.Server.Arch}}' 2>/dev/null || echo amd64)}
OUT=containers/wheels/$ARCH
# Every component with an image: the orchestrator and each servers/<name> (found by glob).
PACKAGES=()
for project in orchestrator/pyproject.toml servers/*/pyproject.toml; do
    PACKAGES+=("$(sed -n 's/^name = "\(.*\)"/\1/p' "$project" | head -1)")
done

case "$ARCH" in
amd64) machine=x86_64 ;;
arm64) machine=aarch64 ;;
*) echo "unknown architecture $ARCH: use amd64 or arm64" >&2; exit 2 ;;
esac
# Every manylinux tag bookworm's glibc (2.36) runs, spelled out: pip does not expand one.
platform=(--platform "manylinux2014_$machine")
for minor in $(seq 36 -1 17); do platform+=(--platform "manylinux_2_${minor}_$machine"); done

# The third-party wheels are fetched again only when the lock or a project file changed.
stamp=$OUT/.stamp
want=$(cat uv.lock meshkit/pyproject.toml orchestrator/pyproject.toml servers/*/pyproject.toml \
    | sha256sum | cut -c1-16)
if [ ! -f "$stamp" ] || [ "$(cat "$stamp")" != "$want" ]; then
    rm -rf "$OUT"
    mkdir -p "$OUT/pypi"
    fetch=1
else
    fetch=0
fi

for package in "${PACKAGES[@]}"; do
    "$UV" export --quiet --locked --no-dev --package "$package" --no-header --no-annotate \
        --no-emit-workspace --format requirements-txt -o "$OUT/pypi/$package.txt"
    "$UV" export --quiet --locked --no-dev --package "$package" --no-header --no-annotate \
        --no-editable --format requirements-txt | sed -n 's|^\./||p' >"$OUT/$package.dirs"
done

# Binary wheels only, for the image's Python (3.11) and architecture; pip from a throwaway
# venv of the host's Python (uv has no download command).
if [ "$fetch" = 1 ]; then
    pipenv=$(mktemp -d /tmp/clawmesh-pip.XXXXXX)
    trap 'rm -rf "$pipenv"' EXIT
    python3 -m venv "$pipenv"
    for package in "${PACKAGES[@]}"; do
        PIP_FIND_LINKS='' "$pipenv/bin/pip" download --quiet --disable-pip-version-check \
            --no-deps --require-hashes --only-binary=:all: --python-version 3.11 \
            --implementation cp --abi cp311 --abi abi3 --abi none "${platform[@]}" \
            -d "$OUT/pypi" -r "$OUT/pypi/$package.txt"
    done
fi

# The workspace members as wheels (pure Python, built every time: sources change), named
# per component.
rm -rf "$OUT/workspace"
mkdir -p "$OUT/workspace"
for dir in $(cat "$OUT"/*.dirs | sort -u); do
    "$UV" build --quiet --wheel --out-dir "$OUT/workspace" "$dir" 2>/dev/null
done
for package in "${PACKAGES[@]}"; do
    : >"$OUT/workspace/$package.members"
    while read -r dir; do
        name=$(sed -n 's/^name = "\(.*\)"/\1/p' "$dir/pyproject.toml" | head -1 | tr '-' '_')
        (cd "$OUT/workspace" && ls "$name"-*.whl) >>"$OUT/workspace/$package.members"
    done <"$OUT/$package.dirs"
    rm "$OUT/$package.dirs"
done
echo "$want" >"$stamp"
echo "wheelhouse $OUT: $(ls "$OUT"/*/*.whl | wc -l) wheels, $(du -sh "$OUT" | cut -f1)"
