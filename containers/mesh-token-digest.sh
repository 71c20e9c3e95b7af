#!/usr/bin/env bash
# The SHA-256 (hex) of the orchestrator's MESH_TOKEN: all the servers' containers get
# (compose.yaml's MESH_TOKEN_SHA256), never the token. The token is read the way compose
# reads it (the environment, else .env), by asking compose for the orchestrator's resolved
# environment, so the digest always matches what the orchestrator sends. Prints nothing
# when compose cannot resolve it (compose then says what is missing).
#   containers/mesh-token-digest.sh COMPOSE...      e.g. containers/mesh-token-digest.sh docker compose
set -u
cd "$(dirname "$0")/.."
[ $# -gt 0 ] || { echo "usage: $0 COMPOSE... (e.g. docker compose)" >&2; exit 2; }

MESH_TOKEN_SHA256=$(printf '0%.0s' {1..64}) "$@" config --format json 2>/dev/null | python3 -c '
import hashlib, json, sys
try:
    token = json.load(sys.stdin)["services"]["orchestrator"]["environment"]["MESH_TOKEN"]
except (ValueError, KeyError, TypeError):
    sys.exit(0)
if token:
    print(hashlib.sha256(token.encode()).hexdigest())
'
