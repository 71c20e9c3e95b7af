"""The shopping database's tables (every row belongs to one agent).

list_items     (id, agent, list_name, name, quantity, unit, store, note, added_at)
orders         (id, agent, item, store, date, quantity, price, source, recorded_at)
examples       the orders that are example data (loaded on a first start)
meta           what happened once (examples_loaded)
confirmations  meshkit's confirm-once record: approved actions already performed
"""

from __future__ import annotations

from meshkit.proposals import CONFIRMATIONS_SCHEMA

SCHEMA = (
    """
CREATE TABLE IF NOT EXISTS list_items (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    agent TEXT NOT NULL,
    list_name TEXT NOT NULL,
    name TEXT NOT NULL,
    quantity REAL NOT NULL DEFAULT 1,
    unit TEXT,
    store TEXT,
    note TEXT,
    added_at REAL NOT NULL
);
CREATE INDEX IF NOT EXISTS list_items_by_list ON list_items (agent, list_name, id);
CREATE TABLE IF NOT EXISTS orders (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    agent TEXT NOT NULL,
    item TEXT NOT NULL,
    store TEXT NOT NULL,
    date TEXT NOT NULL,
    quantity REAL NOT NULL DEFAULT 1,
    price REAL,
    source TEXT NOT NULL CHECK (source IN ('import', 'reorder')),
    recorded_at REAL NOT NULL
);
CREATE INDEX IF NOT EXISTS orders_by_date ON orders (agent, date, id);
CREATE TABLE IF NOT EXISTS examples (order_id INTEGER PRIMARY KEY);  -- example data: orders
CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
"""
    + CONFIRMATIONS_SCHEMA
)
