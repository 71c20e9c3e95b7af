#!/usr/bin/env bash
# The wheelhouse the images install from, made on the host from uv.lock: the build itself
# needs no network (an engine behind a TLS-intercepting proxy cannot verify PyPI, and a Pi
# builds faster from wheels fetched once).
#   containers/wheels.sh ARCH             ARCH: amd64 (default: the engine's) or arm64
# For each component image: containers/wheels/ARCH/pypi/<package>.txt, its locked third-party
# requirements with hashes (uv export), beside their wheels; and workspace/<package>.members,
# the workspace wheels it needs, beside them (apart: a source change leaves pypi/ as it was,
# and the image's layer that installs from it cached). The wheels are fetched by one pip
# download of the whole workspace's locked requirements (every image's at once: each wheel
# once, not once per image), and only when the lock changed. Each step says what it does.
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

say() { echo "wheels.sh: $*" >&2; }

say "the locked requirements of ${#PACKAGES[@]} images (uv export)"
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
    # Every image's requirements in one file (one lock: one version of each package).
    "$UV" export --quiet --locked --no-dev --all-packages --no-header --no-annotate \
        --no-emit-workspace --format requirements-txt -o "$pipenv/all.txt"
    wanted=$(grep -c '^[A-Za-z0-9]' "$pipenv/all.txt")
    say "downloading $wanted locked wheels for $ARCH from PyPI, once (the next run reuses them"
    say "until uv.lock changes); pip's progress follows"
    python3 -m venv "$pipenv/venv"
    PIP_FIND_LINKS='' PYTHONUNBUFFERED=1 "$pipenv/venv/bin/pip" download --progress-bar off \
        --disable-pip-version-check --no-deps --require-hashes --only-binary=:all: \
        --python-version 3.11 --implementation cp --abi cp311 --abi abi3 --abi none \
        "${platform[@]}" -d "$OUT/pypi" -r "$pipenv/all.txt" \
        | awk -v n="$wanted" '/^(Saved|File was already downloaded) / {
            sub(/.*\//, ""); printf "  [%d/%d] %s\n", ++i, n, $0; fflush() }' >&2
else
    say "the third-party wheels of $OUT are those of this uv.lock: kept"
fi

# The workspace members as wheels (pure Python, built every time: sources change), named
# per component.
say "building the workspace's own wheels (meshkit, the orchestrator, the servers)"
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

# Each capability's wheels, from its own lock (config/capabilities/<name>.lock, or under
# CLAWMESH_CONFIG) alone, into
# capabilities/<name>/ with the lock beside them (requirements.txt): fetched when the lock
# changed; a capability no longer in the registry loses its folder.
mkdir -p "$OUT/capabilities"
config=${CLAWMESH_CONFIG:-config}
for lock in "$config"/capabilities/*.lock; do
    [ -e "$lock" ] || continue
    name=$(basename "$lock" .lock)
    dir=$OUT/capabilities/$name
    locked=$(sha256sum "$lock" | cut -c1-16)
    if [ -f "$dir/.stamp" ] && [ "$(cat "$dir/.stamp")" = "$locked" ]; then
        continue
    fi
    rm -rf "$dir"
    mkdir -p "$dir"
    cp "$lock" "$dir/requirements.txt"
    say "downloading the locked wheels of capability $name for $ARCH"
    capenv=$(mktemp -d /tmp/clawmesh-pip.XXXXXX)
    python3 -m venv "$capenv/venv"
    # 3.11.2: the oldest Python the images run (Debian bookworm's), as the lock was made for.
    PIP_FIND_LINKS='' "$capenv/venv/bin/pip" download --quiet --progress-bar off \
        --disable-pip-version-check --no-deps --require-hashes --only-binary=:all: \
        --python-version 3.11.2 --implementation cp --abi cp311 --abi abi3 --abi none \
        "${platform[@]}" -d "$dir" -r "$dir/requirements.txt" >&2
    rm -rf "$capenv"
    echo "$locked" >"$dir/.stamp"
done
for dir in "$OUT"/capabilities/*/; do
    [ -d "$dir" ] || continue
    [ -f "$config/capabilities/$(basename "$dir").lock" ] || rm -rf "$dir"
done
echo "wheelhouse $OUT: $(ls "$OUT"/*/*.whl | wc -l) wheels, $(du -sh "$OUT" | cut -f1)"
