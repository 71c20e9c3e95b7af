"""Example order history: loaded on a first start so a new user can try a reorder at once.

Loaded once per database (``meta.examples_loaded``), marked (``examples``: every order a
tool shows says ``example``), removed with ``python -m mcp_shopping forget-examples``
(``make forget-example-orders``) and never loaded again after that.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Sequence
from importlib.resources import files
from typing import TYPE_CHECKING

from meshkit.sqlite import transaction

if TYPE_CHECKING:  # the store imports this module
    from mcp_shopping.store import NewOrder

FILE = files("mcp_shopping") / "example_orders.csv"
_LOADED = "examples_loaded"


def load(db: sqlite3.Connection, agent: str, orders: Sequence[NewOrder], at: float) -> int:
    with transaction(db, "IMMEDIATE"):
        if db.execute("SELECT 1 FROM meta WHERE key = ?", (_LOADED,)).fetchone():
            return 0
        for order in orders:
            cursor = db.execute(
                "INSERT INTO orders (agent, item, store, date, quantity, price, source,"
                " recorded_at) VALUES (?, ?, ?, ?, ?, ?, 'import', ?)",
                (agent, order.item, order.store, order.date, order.quantity, order.price, at),
            )
            db.execute("INSERT INTO examples (order_id) VALUES (?)", (cursor.lastrowid,))
        db.execute("INSERT INTO meta (key, value) VALUES (?, ?)", (_LOADED, agent))
    return len(orders)


def forget(db: sqlite3.Connection, agent: str) -> int:
    with transaction(db, "IMMEDIATE"):
        ids = [
            order_id
            for (order_id,) in db.execute(
                "SELECT o.id FROM orders o JOIN examples e ON e.order_id = o.id WHERE o.agent = ?",
                (agent,),
            )
        ]
        db.executemany("DELETE FROM orders WHERE id = ?", [(i,) for i in ids])
        db.executemany("DELETE FROM examples WHERE order_id = ?", [(i,) for i in ids])
        db.execute("INSERT OR IGNORE INTO meta (key, value) VALUES (?, ?)", (_LOADED, agent))
    return len(ids)
