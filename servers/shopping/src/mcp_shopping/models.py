"""What the shopping tools return, and the payloads their proposals carry.

Dates are ``YYYY-MM-DD``; ``added_at`` is server time in Unix seconds. Quantities are
numbers (``2``, ``0.5``) with an optional unit (``kg``, ``pack``).
"""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

Source = Literal["import", "reorder"]

SERVER = "shopping"  # as approval tokens name it
ADD = "add_to_list"  # proposal kinds: each performed by confirm_<kind>
REMOVE = "remove_from_list"
REORDER = "reorder"
CART_PREFIX = "cart:"  # a store's cart is the list "cart:<store>"


class ListItem(BaseModel):
    id: int = Field(description="The item's id on its list")
    name: str
    quantity: float
    unit: str | None = None
    store: str | None = Field(default=None, description="Where to buy it, if the user said")
    note: str | None = None
    added_at: float = Field(description="When it was added (Unix seconds)")


class ShoppingList(BaseModel):
    name: str = Field(description="The list's name, e.g. 'groceries' or 'cart:costco'")
    items: list[ListItem] = Field(description="Oldest first; empty when the list is empty")


class Lists(BaseModel):
    lists: list[ShoppingList]
    available: list[str] = Field(
        description="Every list of this user that holds items (carts are 'cart:<store>')"
    )


class KnownItem(BaseModel):
    name: str = Field(description="The item as ordered or listed")
    score: float = Field(description="How well it matches the query, 0 to 1")
    times_ordered: int = Field(description="Orders of it in the history; 0 if only on a list")
    last_store: str | None = Field(description="Store of the last order, null if never ordered")
    last_date: str | None = Field(description="Date of the last order (YYYY-MM-DD)")
    last_quantity: float | None
    last_price: float | None = Field(description="Price paid last time, null when unknown")
    on_lists: list[str] = Field(description="Lists it is on now")


class ItemMatches(BaseModel):
    query: str
    matches: list[KnownItem] = Field(description="Best match first")
    message: str | None = Field(
        default=None, description="Says so plainly when nothing matched, null otherwise"
    )


class Order(BaseModel):
    id: int
    item: str
    store: str
    date: str = Field(description="YYYY-MM-DD")
    quantity: float
    price: float | None = Field(description="Price paid, null when unknown (reorders)")
    source: Source = Field(description="'import' from a store's order file, or 'reorder' here")
    example: bool = Field(
        default=False,
        description="example data loaded on the first start, not the user's own orders",
    )


class RecentOrders(BaseModel):
    orders: list[Order] = Field(description="Newest first")
    message: str | None = Field(
        default=None, description="Says so plainly when there are none, null otherwise"
    )


# Proposal payloads: what a confirm tool receives back, checked after the approval.


class Payload(BaseModel):
    model_config = ConfigDict(extra="forbid")

    agent: str = Field(min_length=1, max_length=200)


class AddPayload(Payload):
    list_name: str
    name: str
    quantity: float = Field(gt=0)
    unit: str | None
    store: str | None
    note: str | None


class RemovePayload(Payload):
    list_name: str
    item_id: int
    name: str


class ReorderPayload(Payload):
    item: str
    store: str
    quantity: float = Field(gt=0)


# What the confirm tools return. A replayed approval returns the first result.


class Confirmed(BaseModel):
    message: str = Field(description="One line for the user: what was done")
    replayed: bool = Field(
        description="This approval was used before: the first result, nothing done now"
    )


class AddedToList(Confirmed):
    list_name: str
    item: ListItem = Field(description="The item as it now stands on the list")


class RemovedFromList(Confirmed):
    list_name: str
    item_id: int
    name: str


class Reordered(Confirmed):
    cart: str = Field(description="The cart list it was added to, 'cart:<store>'")
    item: ListItem = Field(description="The item as it now stands in the cart")
    order: Order = Field(description="The order recorded in the history")
