"""Shopping lists and order history in SQLite: one file, one connection, WAL.

The tables are in ``schema.py``.

A list exists while it holds items. Writes that a user approved go through
:meth:`ShoppingStore.confirm`, which runs them with :class:`Changes` inside
``meshkit.proposals.confirm_once``: the change and the record of its approval
commit together, or neither does.

Connection handling is meshkit's (``meshkit.sqlite``).
"""

from __future__ import annotations

import sqlite3
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from mcp_shopping import examples
from mcp_shopping.models import ListItem, Order, Source
from mcp_shopping.schema import SCHEMA
from meshkit.proposals import Approval, Confirmed, confirm_once
from meshkit.sqlite import SQLiteStore, row_model

# A row of these columns is its model's fields, in order (meshkit.sqlite.row_model).
_ITEM_COLUMNS = ", ".join(ListItem.model_fields)
_ORDER_COLUMNS = (
    "id, item, store, date, quantity, price, source,"
    " id IN (SELECT order_id FROM examples) AS example"
)


@dataclass(frozen=True)
class Listed:
    list_name: str
    item: ListItem


@dataclass(frozen=True)
class NewOrder:
    item: str
    store: str
    date: str
    quantity: float
    price: float | None


@dataclass(frozen=True)
class LastOrder:
    """An item of the order history: its newest order, and how many orders it has."""

    item: str
    store: str
    date: str
    quantity: float
    price: float | None
    times: int


@dataclass(frozen=True)
class Imported:
    added: int
    present: int  # rows identical to an order already stored: skipped


class ShoppingStore(SQLiteStore):
    SCHEMA = SCHEMA

    async def items(self, agent: str, list_name: str | None = None) -> list[Listed]:
        """Items of one list, or of every list, oldest first."""
        where, params = "agent = ?", [agent]
        if list_name is not None:
            where, params = "agent = ? AND list_name = ?", [agent, list_name]

        def read(db: sqlite3.Connection) -> list[Listed]:
            rows = db.execute(
                f"SELECT list_name, {_ITEM_COLUMNS} FROM list_items WHERE {where}"  # noqa: S608
                " ORDER BY list_name, id",
                params,
            ).fetchall()
            return [Listed(row[0], _item(row[1:])) for row in rows]

        return await self._run(read)

    async def list_names(self, agent: str) -> list[str]:
        def read(db: sqlite3.Connection) -> list[str]:
            rows = db.execute(
                "SELECT DISTINCT list_name FROM list_items WHERE agent = ? ORDER BY list_name",
                (agent,),
            ).fetchall()
            return [name for (name,) in rows]

        return await self._run(read)

    async def last_orders(self, agent: str) -> list[LastOrder]:
        """One row per item ordered (names compared case-insensitively)."""

        def read(db: sqlite3.Connection) -> list[LastOrder]:
            rows = db.execute(
                "SELECT item, store, date, quantity, price, times FROM ("
                " SELECT item, store, date, quantity, price,"
                "  COUNT(*) OVER (PARTITION BY lower(item)) AS times,"
                "  ROW_NUMBER() OVER (PARTITION BY lower(item) ORDER BY date DESC, id DESC) AS n"
                " FROM orders WHERE agent = ?"
                ") WHERE n = 1 ORDER BY date DESC",
                (agent,),
            ).fetchall()
            return [LastOrder(*row) for row in rows]

        return await self._run(read)

    async def orders(self, agent: str, limit: int, store: str | None = None) -> list[Order]:
        """The newest orders, of one store (case-insensitive) or of all."""
        where, params = "agent = ?", [agent]
        if store is not None:
            where, params = "agent = ? AND lower(store) = lower(?)", [agent, store]

        def read(db: sqlite3.Connection) -> list[Order]:
            rows = db.execute(
                f"SELECT {_ORDER_COLUMNS} FROM orders WHERE {where}"  # noqa: S608
                " ORDER BY date DESC, id DESC LIMIT ?",
                [*params, limit],
            ).fetchall()
            return [_order(row) for row in rows]

        return await self._run(read)

    async def import_orders(self, agent: str, orders: Sequence[NewOrder], at: float) -> Imported:
        """Store the orders in one transaction, skipping rows identical to stored ones.

        Identical rows within ``orders`` are kept apart by count: a file holding the same
        row twice imports it twice, and importing that file again adds nothing.
        """

        def write(db: sqlite3.Connection) -> Imported:
            added = 0
            stored = {order: _count_identical(db, agent, order) for order in Counter(orders)}
            for order in orders:
                if stored[order] > 0:
                    stored[order] -= 1
                    continue
                Changes(db, agent).record_order(
                    order.item,
                    order.store,
                    order.date,
                    order.quantity,
                    order.price,
                    source="import",
                    at=at,
                )
                added += 1
            return Imported(added=added, present=len(orders) - added)

        return await self.transact(write)

    async def load_examples(self, agent: str, orders: Sequence[NewOrder], at: float) -> int:
        """Example orders for ``agent``, on the first start only; how many were loaded."""
        return await self._run(lambda db: examples.load(db, agent, orders, at))

    async def forget_examples(self, agent: str) -> int:
        """Remove ``agent``'s example orders (they never come back); how many there were."""
        return await self._run(lambda db: examples.forget(db, agent))

    async def confirm(
        self,
        agent: str,
        approval: Approval,
        perform: Callable[[Changes], dict[str, Any]],
        *,
        at: float,
    ) -> Confirmed:
        """Perform an approved change once: a replayed approval returns the first result."""
        return await self._run(
            lambda db: confirm_once(db, approval, lambda db: perform(Changes(db, agent)), at=at)
        )


class Changes:
    """The writes of one agent's approved change, inside its confirm transaction."""

    def __init__(self, db: sqlite3.Connection, agent: str) -> None:
        self._db = db
        self._agent = agent

    def add_item(
        self,
        list_name: str,
        name: str,
        quantity: float,
        *,
        unit: str | None = None,
        store: str | None = None,
        note: str | None = None,
        at: float,
    ) -> tuple[ListItem, bool]:
        """Add the item, or add to the quantity of the same item (name, unit and store
        alike, ignoring case) already on the list; True when it was already there."""
        found = self._db.execute(
            "SELECT id FROM list_items WHERE agent = ? AND list_name = ? AND lower(name) = lower(?)"
            " AND lower(unit) IS lower(?) AND lower(store) IS lower(?) ORDER BY id LIMIT 1",
            (self._agent, list_name, name, unit, store),
        ).fetchone()
        if found is None:
            item_id = self._db.execute(
                "INSERT INTO list_items (agent, list_name, name, quantity, unit, store, note,"
                " added_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
                (self._agent, list_name, name, quantity, unit, store, note, at),
            ).lastrowid
        else:
            (item_id,) = found
            self._db.execute(
                "UPDATE list_items SET quantity = quantity + ?, note = COALESCE(?, note)"
                " WHERE id = ?",
                (quantity, note, item_id),
            )
        row = self._db.execute(
            f"SELECT {_ITEM_COLUMNS} FROM list_items WHERE id = ?",  # noqa: S608
            (item_id,),
        ).fetchone()
        return _item(row), found is not None

    def remove_item(self, list_name: str, item_id: int) -> ListItem | None:
        """Delete the item; None when it is not on that list (any more)."""
        row = self._db.execute(
            f"DELETE FROM list_items WHERE agent = ? AND list_name = ? AND id = ?"  # noqa: S608
            f" RETURNING {_ITEM_COLUMNS}",
            (self._agent, list_name, item_id),
        ).fetchone()
        return None if row is None else _item(row)

    def record_order(
        self,
        item: str,
        store: str,
        date: str,
        quantity: float,
        price: float | None,
        *,
        source: Source,
        at: float,
    ) -> Order:
        order_id = self._db.execute(
            "INSERT INTO orders (agent, item, store, date, quantity, price, source, recorded_at)"
            " VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
            (self._agent, item, store, date, quantity, price, source, at),
        ).lastrowid
        assert order_id is not None  # an INSERT always sets it
        return Order(
            id=order_id,
            item=item,
            store=store,
            date=date,
            quantity=quantity,
            price=price,
            source=source,
        )


def _count_identical(db: sqlite3.Connection, agent: str, order: NewOrder) -> int:
    (count,) = db.execute(
        "SELECT COUNT(*) FROM orders WHERE agent = ? AND item = ? AND store = ? AND date = ?"
        " AND quantity = ? AND price IS ?",
        (agent, order.item, order.store, order.date, order.quantity, order.price),
    ).fetchone()
    return int(count)


def _item(row: Sequence[Any]) -> ListItem:
    return row_model(ListItem, row)


def _order(row: Sequence[Any]) -> Order:
    return row_model(Order, row)
