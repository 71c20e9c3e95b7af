"""Create a credential for an MCP client other than the orchestrator.

    python -m meshkit.add_client NAME [--scopes read+producer]     (or: make client NAME=...)

Prints the client's token (once: only its SHA-256 is kept) and the ``MESH_CLIENTS`` line
for ``.env``, with the entries already set kept. Restart the servers to admit the client.
"""

from __future__ import annotations

import argparse
from collections.abc import Sequence

from meshkit.credentials import DEFAULT_CLIENT_SCOPES, CredentialError, new_client
from meshkit.settings import ServeSettings, fail, load_dotenv, load_settings


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(
        prog="python -m meshkit.add_client",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("name", help="the client's name, as logs will show it (claude-desktop)")
    parser.add_argument(
        "--scopes",
        default="+".join(DEFAULT_CLIENT_SCOPES),
        help="tool classes it may call: read, producer or read+producer (the default)",
    )
    args = parser.parse_args(argv)
    load_dotenv()
    existing = load_settings(ServeSettings).clients
    if any(client.name == args.name for client in existing):
        fail(f"MESH_CLIENTS already has a client named {args.name!r}: remove it or pick a name")
    try:
        token, credential = new_client(args.name, args.scopes.split("+"))
    except CredentialError as error:
        fail(str(error))
    entries = ",".join(client.entry() for client in [*existing, credential])
    print(f"Token for {credential.name} (shown once; the client sends Authorization: Bearer ...):")
    print(f"  {token}")
    print("Set this line in .env (it keeps the clients already there), then restart the servers:")
    print(f"  MESH_CLIENTS={entries}")


if __name__ == "__main__":
    main()
