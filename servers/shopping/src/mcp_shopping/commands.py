"""``clawmesh shopping import|forget-examples``: an agent's order history (importer.py says
the CSV format). In a container: ``docker compose exec shopping python -m mcp_shopping ...``.

    clawmesh shopping import orders.csv [--agent clawdia] [--json]   (default agent: default)
    clawmesh shopping forget-examples [--agent clawdia] [--json]
"""

from __future__ import annotations

import json
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Annotated

import anyio
from cyclopts import App, Parameter

from mcp_shopping.importer import forget_examples, import_orders, read_orders
from mcp_shopping.settings import ShoppingSettings
from meshkit.command import CliError, Json, guarded, read_file, run, settings_of

app = App(name="shopping", help="An agent's order history: import a CSV, forget the examples.")
Agent = Annotated[str, Parameter(help="whose history")]


@app.command(name="import")
def import_(file: Path, /, *, agent: Agent = "default", as_json: Json = False) -> None:
    """Load a CSV of orders into the agent's history (make import-orders: clawdia's).

    The first row names the columns, in any order: date,item,store,quantity,price. date is
    YYYY-MM-DD; quantity a positive number (empty: 1); price the price of one item, a decimal
    number without currency sign (empty: unknown). Every row is checked first: on an error
    each problem is named with its line and nothing is imported (exit 2); a row already
    stored is skipped."""

    def run() -> None:
        who = agent.strip()
        if not who:
            raise CliError("--agent is empty", "name the agent whose history it is", code=2)
        settings = settings_of(ShoppingSettings)
        orders = read_file(file, read_orders, newline="")
        done = anyio.run(import_orders, settings.db_path, who, orders, time.time())
        if as_json:
            print(json.dumps({"agent": who, "added": done.added, "present": done.present}))
            return
        print(f"imported {done.added} orders ({done.present} already present) for agent {who}")

    guarded(run, as_json=as_json)


@app.command(name="forget-examples")
def forget(*, agent: Agent = "clawdia", as_json: Json = False) -> None:  # SHOPPING_EXAMPLE_AGENT
    """Remove the example orders loaded on the first start; they never return."""

    def run() -> None:
        settings = settings_of(ShoppingSettings)
        removed = anyio.run(forget_examples, settings.db_path, agent)
        if as_json:
            print(json.dumps({"agent": agent, "removed": removed}))
            return
        print(f"removed {removed} example orders of agent {agent}")

    guarded(run, as_json=as_json)


def main(argv: Sequence[str]) -> None:
    """``python -m mcp_shopping import|forget-examples ...``, in the server's container."""
    run(app, argv, prog="python -m mcp_shopping")
