"""Serve the shopping tools, or import order history.

    python -m mcp_shopping                     Streamable HTTP at /mcp on $MCP_PORT (default
                                               8103; needs MESH_TOKEN_SHA256)
    python -m mcp_shopping --stdio             stdio, for local MCP clients
    python -m mcp_shopping import FILE [--agent NAME]
                                               load a CSV of orders (date,item,store,quantity,
                                               price) into NAME's history (default "default");
                                               see `python -m mcp_shopping import --help`
    python -m mcp_shopping forget-examples [--agent NAME]
                                               remove the example orders loaded on the first
                                               start (SHOPPING_EXAMPLE_AGENT); default clawdia

Data lives in $DATA_DIR/shopping.sqlite3. Approval tokens are checked with pending-actions'
public key: MESH_APPROVAL_PUBLIC_KEY_FILE, else $DATA_DIR/approval_public_key.
"""

from __future__ import annotations

import sys
from collections.abc import Sequence

from mcp_shopping import importer
from mcp_shopping.server import build_server
from mcp_shopping.settings import ShoppingSettings
from meshkit.serve import run_server
from meshkit.settings import load_dotenv


def main(argv: Sequence[str] | None = None) -> None:
    args = list(sys.argv[1:] if argv is None else argv)
    if args[:1] == ["import"]:
        load_dotenv()
        raise SystemExit(importer.main(args[1:]))
    if args[:1] == ["forget-examples"]:
        load_dotenv()
        raise SystemExit(importer.forget_examples(args[1:]))
    run_server(
        ShoppingSettings,
        build_server,
        name="shopping",
        default_port=8103,
        argv=args,
        description=__doc__,
        secrets=lambda settings: [settings.relay_credential],
    )


if __name__ == "__main__":
    main()
