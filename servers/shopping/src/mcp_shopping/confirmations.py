"""Confirmations: an approved proposal performed once, and only with its approval.

Each ``confirm_*`` checks the approval token against the payload exactly as it was
proposed and the agent it acts on, the payload's ``agent`` (meshkit's
:class:`~meshkit.proposals.Approvals`): a token minted for an action staged by another
agent is refused. Then it reads the payload into its model, then performs the change
inside the store's confirm-once transaction: a replayed approval returns the first result
and changes nothing twice. A change that can no longer be made (the item left the list)
fails and records nothing.

A reorder puts the item in that store's cart list (``cart:<store>``) and records the
order with today's date and no price; no retailer is contacted, nothing is bought.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from datetime import date
from typing import Any, TypeVar

from mcp_shopping.errors import NotOnList
from mcp_shopping.models import (
    ADD,
    CART_PREFIX,
    REMOVE,
    REORDER,
    SERVER,
    AddedToList,
    AddPayload,
    Payload,
    RemovedFromList,
    RemovePayload,
    Reordered,
    ReorderPayload,
)
from mcp_shopping.service import amount, list_key
from mcp_shopping.store import Changes, ShoppingStore
from meshkit.proposals import Approvals, approved_payload, payload_agent

PayloadT = TypeVar("PayloadT", bound=Payload)


class Confirmations:
    def __init__(
        self,
        store: ShoppingStore,
        approvals: Approvals,
        *,
        clock: Callable[[], float] = time.time,
        today: Callable[[], date] | None = None,
    ) -> None:
        self._store = store
        self._approvals = approvals
        self._clock = clock
        self._today = today or (lambda: date.fromtimestamp(clock()))

    async def add(self, payload: dict[str, Any], approval: str) -> AddedToList:
        """Put the item on the list, or add to the quantity of the same item there."""
        granted = self._approvals.check(
            approval, SERVER, ADD, payload, agent=payload_agent(payload)
        )
        change = approved_payload(AddPayload, ADD, payload)
        now = self._clock()

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

        done = await self._store.confirm(change.agent, granted, perform, at=now)
        return AddedToList.model_validate({**done.result, "replayed": done.replayed})

    async def remove(self, payload: dict[str, Any], approval: str) -> RemovedFromList:
        """Take the item off the list; NotOnList when it is gone already."""
        granted = self._approvals.check(
            approval, SERVER, REMOVE, payload, agent=payload_agent(payload)
        )
        change = approved_payload(RemovePayload, REMOVE, payload)

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

        done = await self._store.confirm(change.agent, granted, perform, at=self._clock())
        return RemovedFromList.model_validate({**done.result, "replayed": done.replayed})

    async def reorder(self, payload: dict[str, Any], approval: str) -> Reordered:
        """Put the item in the store's cart and record today's order."""
        granted = self._approvals.check(
            approval, SERVER, REORDER, payload, agent=payload_agent(payload)
        )
        change = approved_payload(ReorderPayload, REORDER, payload)
        now, today = self._clock(), self._today().isoformat()
        cart = list_key(CART_PREFIX + change.store)

        def perform(changes: Changes) -> dict[str, Any]:
            item, _ = changes.add_item(
                cart, change.item, change.quantity, store=change.store, at=now
            )
            order = changes.record_order(
                change.item, change.store, today, change.quantity, None, source="reorder", at=now
            )
            return {
                "message": f"Added {change.quantity:g} × {change.item} to the {change.store} "
                "cart and recorded the order",
                "cart": cart,
                "item": item.model_dump(),
                "order": order.model_dump(),
            }

        done = await self._store.confirm(change.agent, granted, perform, at=now)
        return Reordered.model_validate({**done.result, "replayed": done.replayed})
