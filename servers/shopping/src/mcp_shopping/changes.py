"""The shopping changes, declared once (``meshkit.consent``): each performed once, and only
with an approval pending-actions signed for exactly its payload and agent.

Each executor runs inside the store's confirm-once transaction: a replayed approval returns
the first result and changes nothing twice. A change that can no longer be made (the item
left the list) fails and records nothing.

A reorder puts the item in that store's cart list (``cart:<store>``) and records the
order with today's date and no price; no retailer is contacted, nothing is bought.
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import date
from typing import Any

from mcp_shopping.errors import NotOnList
from mcp_shopping.models import (
    ADD,
    CART_PREFIX,
    REMOVE,
    REORDER,
    AddedToList,
    AddPayload,
    RemovedFromList,
    RemovePayload,
    Reordered,
    ReorderPayload,
)
from mcp_shopping.service import amount, list_key
from mcp_shopping.store import Changes, ShoppingStore
from meshkit.consent import ChangeKind
from meshkit.proposals import Approval, Confirmed


def change_kinds(
    store: ShoppingStore, clock: Callable[[], float], today: Callable[[], date]
) -> tuple[ChangeKind[Any], ...]:
    """add_to_list, remove_from_list and reorder, performed in ``store``."""

    async def add(change: AddPayload, approval: Approval) -> Confirmed:
        """Put the item on the list, or add to the quantity of the same item there."""
        now = clock()

        def perform(changes: Changes) -> dict[str, Any]:
            item, merged = changes.add_item(
                change.list_name,
                change.name,
                change.quantity,
                unit=change.unit,
                store=change.store,
                note=change.note,
                at=now,
            )
            message = (
                f"Added {amount(change.quantity, change.unit, change.name)} to {change.list_name}"
            )
            if merged:
                message += f" (now {amount(item.quantity, item.unit)})"
            return {"message": message, "list_name": change.list_name, "item": item.model_dump()}

        return await store.confirm(change.agent, approval, perform, at=now)

    async def remove(change: RemovePayload, approval: Approval) -> Confirmed:
        """Take the item off the list; NotOnList when it is gone already."""

        def perform(changes: Changes) -> dict[str, Any]:
            if changes.remove_item(change.list_name, change.item_id) is None:
                raise NotOnList(
                    f"{change.name} is no longer on {change.list_name}: nothing was removed."
                )
            return {
                "message": f"Removed {change.name} from {change.list_name}",
                "list_name": change.list_name,
                "item_id": change.item_id,
                "name": change.name,
            }

        return await store.confirm(change.agent, approval, perform, at=clock())

    async def reorder(change: ReorderPayload, approval: Approval) -> Confirmed:
        """Put the item in the store's cart and record today's order."""
        now, day = clock(), today().isoformat()
        cart = list_key(CART_PREFIX + change.store)

        def perform(changes: Changes) -> dict[str, Any]:
            item, _ = changes.add_item(
                cart, change.item, change.quantity, store=change.store, at=now
            )
            order = changes.record_order(
                change.item, change.store, day, change.quantity, None, source="reorder", at=now
            )
            return {
                "message": f"Added {change.quantity:g} × {change.item} to the {change.store} "
                "cart and recorded the order",
                "cart": cart,
                "item": item.model_dump(),
                "order": order.model_dump(),
            }

        return await store.confirm(change.agent, approval, perform, at=now)

    return (
        ChangeKind(ADD, AddPayload, AddedToList, title="Add to a list", execute=add),
        ChangeKind(
            REMOVE,
            RemovePayload,
            RemovedFromList,
            title="Remove from a list",
            execute=remove,
            destructive=True,
        ),
        ChangeKind(
            REORDER,
            ReorderPayload,
            Reordered,
            title="Reorder",
            execute=reorder,
            description="Add to the store's cart and record the order.",
        ),
    )
