"""Order history from a CSV file (``clawmesh shopping import FILE``: commands.py).

The file is UTF-8 CSV. Its first row names the columns, in any order:

    date,item,store,quantity,price
    2026-10-02,Kirkland Signature Purified Water 40pk,Costco,1,4.99
    2026-10-05,Bananas,Trader Joe's,6,
    2026-10-05,"Milk, whole 1 gal",Trader Joe's,,3.49

    date      YYYY-MM-DD                                        required
    item      the product's name                                required
    store     where it was bought                               required
    quantity  a positive number (2, 0.5); empty means 1         optional column
    price     the price of ONE item (the unit price), a decimal optional column
              number without currency sign (4.99); empty means  (may be named
              unknown                                           unit_price)

Any other column is refused. Every row is checked first: when one is wrong, each
problem is named with its line number ("line 7: date '2026-13-01' is not
YYYY-MM-DD") and nothing is imported. Otherwise all rows go in one transaction. A row
identical to an order already stored (same item, store, date, quantity and price) is
skipped and counted, so importing a file again adds nothing.

The orders belong to one agent (--agent, default clawdia), in $DATA_DIR/shopping.sqlite3.
"""

from __future__ import annotations

import csv
import re
from collections.abc import Iterable, Sequence
from datetime import date
from pathlib import Path

from mcp_shopping.store import Imported, NewOrder, ShoppingStore
from meshkit.errors import BadFile

COLUMNS = ("date", "item", "store", "quantity", "price")
REQUIRED = ("date", "item", "store")
MAX_NAME = 200
MAX_STORE = 100
_DATE = re.compile(r"\d{4}-\d{2}-\d{2}")
_NUMBER = re.compile(r"\d+(\.\d*)?|\.\d+")


def read_orders(lines: Iterable[str]) -> list[NewOrder]:
    """Every order of the file, or BadFile naming every problem found."""
    reader = csv.reader(lines)
    problems: list[str] = []
    orders: list[NewOrder] = []
    try:
        header = next(reader, None)
        if header is None:
            raise BadFile([f"line 1: the file is empty; it must start with {','.join(COLUMNS)}"])
        columns = [_column(name) for name in header]
        problems.extend(_header_problems(columns))
        if problems:
            raise BadFile(problems)
        for row in reader:
            if not any(cell.strip() for cell in row):
                continue  # a blank line
            line = reader.line_num
            if len(row) != len(columns):
                problems.append(
                    f"line {line}: {len(row)} fields, but the header names {len(columns)}"
                )
                continue
            order = _order(line, dict(zip(columns, row, strict=True)), problems)
            if order is not None:
                orders.append(order)
    except csv.Error as error:
        problems.append(f"line {reader.line_num}: not valid CSV ({error})")
    if problems:
        raise BadFile(problems)
    return orders


async def import_orders(
    db_path: Path, agent: str, orders: Sequence[NewOrder], at: float
) -> Imported:
    store = ShoppingStore(db_path)
    try:
        return await store.import_orders(agent, orders, at)
    finally:
        await store.aclose()


async def forget_examples(db_path: Path, agent: str) -> int:
    """Remove ``agent``'s example order history; how many orders went."""
    store = ShoppingStore(db_path)
    try:
        return await store.forget_examples(agent)
    finally:
        await store.aclose()


def _column(name: str) -> str:
    """The column a header cell names; ``unit_price`` is the price column's plain name."""
    column = name.strip().casefold()
    return "price" if column == "unit_price" else column


def _header_problems(columns: list[str]) -> list[str]:
    expected = ",".join(COLUMNS)
    problems = [
        f"line 1: unknown column {name!r}; the columns are {expected}"
        for name in columns
        if name not in COLUMNS
    ]
    problems += [
        f"line 1: column {name!r} appears more than once"
        for name in COLUMNS
        if columns.count(name) > 1
    ]
    problems += [f"line 1: no {name!r} column" for name in REQUIRED if name not in columns]
    return problems


def _order(line: int, cells: dict[str, str], problems: list[str]) -> NewOrder | None:
    """The row's order; None when a problem was added to ``problems``."""
    found = len(problems)
    day = cells["date"].strip()
    if not _DATE.fullmatch(day) or not _is_date(day):
        problems.append(f"line {line}: date {day!r} is not YYYY-MM-DD")
    item = _text(line, "item", cells["item"], MAX_NAME, problems)
    store = _text(line, "store", cells["store"], MAX_STORE, problems)
    quantity = cells.get("quantity", "").strip()
    if quantity and (not _NUMBER.fullmatch(quantity) or float(quantity) == 0):
        problems.append(f"line {line}: quantity {quantity!r} is not a positive number")
    price = cells.get("price", "").strip()
    if price and not _NUMBER.fullmatch(price):
        problems.append(
            f"line {line}: price {price!r} is not a decimal number like 4.99 (no currency sign)"
        )
    if len(problems) > found:
        return None
    return NewOrder(
        item=item,
        store=store,
        date=day,
        quantity=float(quantity) if quantity else 1.0,
        price=float(price) if price else None,
    )


def _text(line: int, column: str, value: str, limit: int, problems: list[str]) -> str:
    text = " ".join(value.split())
    if not text:
        problems.append(f"line {line}: {column} is empty")
    elif len(text) > limit:
        problems.append(f"line {line}: {column} is longer than {limit} characters")
    return text


def _is_date(text: str) -> bool:
    try:
        date.fromisoformat(text)
    except ValueError:
        return False
    return True
