"""Shopping: lists, order history, and changes that wait for the user's Confirm tap.

Reads answer at once. A ``propose_*`` call checks what it can (the item to remove is
on the list, the item to reorder is in the history), then returns a
:class:`~meshkit.wire.proposals.Proposal` and changes nothing; the change itself waits for
the user's tap (``mcp_shopping.changes``).
"""

from __future__ import annotations

from mcp_shopping import matching
from mcp_shopping.errors import Ambiguous, InvalidRequest, NoMatch
from mcp_shopping.models import (
    ADD,
    REMOVE,
    REORDER,
    AddPayload,
    ItemMatches,
    KnownItem,
    ListItem,
    Lists,
    RecentOrders,
    RemovePayload,
    ReorderPayload,
    ShoppingList,
)
from mcp_shopping.settings import MAX_LIST_NAME, ShoppingSettings
from mcp_shopping.store import LastOrder, Listed, ShoppingStore
from meshkit.wire.proposals import Proposal

MAX_CANDIDATES = 5  # listed in an error that asks the model to let the user choose
MAX_QUANTITY = 10_000.0


class ShoppingService:
    def __init__(self, settings: ShoppingSettings, store: ShoppingStore) -> None:
        self._settings = settings
        self._store = store

    # --- reads ----------------------------------------------------------------------------

    async def get_list(self, agent: str, list_name: str | None) -> Lists:
        """One list (empty if it holds nothing), or every list when ``list_name`` is None."""
        agent = _agent(agent)
        names = await self._store.list_names(agent)
        if list_name is None:
            listed = await self._store.items(agent)
            return Lists(
                lists=[ShoppingList(name=name, items=_on(listed, name)) for name in names],
                available=names,
            )
        name = list_key(list_name)
        items = [entry.item for entry in await self._store.items(agent, name)]
        return Lists(lists=[ShoppingList(name=name, items=items)], available=names)

    async def find_item(self, agent: str, query: str, limit: int) -> ItemMatches:
        """Known items (ordered before, or on a list) that match the words, best first."""
        agent, query = _agent(agent), _required("query", query)
        known = await self._known(agent)
        ranked = matching.rank(query, known, lambda item: item.name)
        matches = [item.model_copy(update={"score": value}) for item, value in ranked[:limit]]
        if matches:
            return ItemMatches(query=query, matches=matches)
        if not known:
            message = f"No match for {query!r}: this user has no order history or list items yet."
        else:
            message = f"Nothing in the order history or on the lists matches {query!r}."
        return ItemMatches(query=query, matches=[], message=message)

    async def recent_orders(self, agent: str, limit: int, store: str | None) -> RecentOrders:
        agent, store = _agent(agent), _optional(store)
        orders = await self._store.orders(agent, limit, store)
        if orders:
            return RecentOrders(orders=orders)
        where = f" at {store}" if store else ""
        return RecentOrders(orders=[], message=f"No orders{where} in the history.")

    # --- proposals: they change nothing -------------------------------------------------

    async def propose_add(
        self,
        agent: str,
        name: str,
        *,
        quantity: float,
        unit: str | None,
        store: str | None,
        note: str | None,
        list_name: str,
    ) -> Proposal:
        change = AddPayload(
            agent=_agent(agent),
            list_name=list_key(list_name),
            name=_required("name", name),
            quantity=_quantity(quantity),
            unit=_optional(unit),
            store=_optional(store),
            note=_optional(note),
        )
        at_store = f" (at {change.store})" if change.store else ""
        return Proposal(
            kind=ADD,
            summary=f"Add {amount(change.quantity, change.unit, change.name)} "
            f"to {change.list_name}{at_store}",
            payload=change.model_dump(),
            confirm_label="➕ Add",
            cancel_label="Skip",
        )

    async def propose_remove(self, agent: str, name: str, list_name: str) -> Proposal:
        agent, name, key = _agent(agent), _required("name", name), list_key(list_name)
        items = [entry.item for entry in await self._store.items(agent, key)]
        if not items:
            raise NoMatch(f"{key} is empty: there is nothing to remove.")
        chosen = next((item for item in items if name.lstrip("#") == str(item.id)), None)
        ranked = matching.rank(name, items, lambda item: item.name)
        chosen = chosen or matching.pick(name, ranked, lambda item: item.name)
        if chosen is None and not ranked:
            holds = ", ".join(item.name for item in items[:20])
            raise NoMatch(f"Nothing on {key} matches {name!r}. It holds: {holds}.")
        if chosen is None:
            choices = ", ".join(
                f"{item.name!r} (id {item.id})" for item, _ in ranked[:MAX_CANDIDATES]
            )
            raise Ambiguous(
                f"Several items on {key} match {name!r}: {choices}. Ask the user which one "
                "they mean, then call again with its exact name or id."
            )
        change = RemovePayload(agent=agent, list_name=key, item_id=chosen.id, name=chosen.name)
        return Proposal(
            kind=REMOVE,
            summary=f"Remove {chosen.name} from {key}",
            payload=change.model_dump(),
            confirm_label="🗑 Remove",
            cancel_label="Keep",
        )

    async def propose_reorder(
        self, agent: str, item: str, quantity: float | None, store: str | None
    ) -> Proposal:
        agent, item = _agent(agent), _required("item", item)
        history = await self._store.last_orders(agent)
        if not history:
            raise NoMatch(
                "There is no order history yet, so nothing to reorder. To buy it anyway, "
                "propose adding it to a list."
            )
        ranked = matching.rank(item, history, lambda order: order.item)
        last = matching.pick(item, ranked, lambda order: order.item)
        if last is None and not ranked:
            raise NoMatch(
                f"No ordered item matches {item!r}. Look with find_item, or propose adding "
                "it to a list instead."
            )
        if last is None:
            choices = ", ".join(_ordered(order) for order, _ in ranked[:MAX_CANDIDATES])
            raise Ambiguous(
                f"Several ordered items match {item!r}: {choices}. Ask the user which one "
                "they mean, then call again with its full name."
            )
        known_stores = {order.store.casefold(): order.store for order in history}
        wanted = _optional(store)
        at = known_stores.get(wanted.casefold(), wanted) if wanted else last.store
        change = ReorderPayload(
            agent=agent,
            item=last.item,
            store=at,
            quantity=last.quantity if quantity is None else _quantity(quantity),
        )
        return Proposal(
            kind=REORDER,
            summary=f"Reorder {change.quantity:g} × {change.item} at {at} "
            f"(last: {self._last(last, at)})",
            payload=change.model_dump(),
            confirm_label="🛒 Add to cart",
            cancel_label="Skip",
        )

    def _last(self, order: LastOrder, store: str) -> str:
        """'$4.99 on 2026-10-02', '$4.99 at Costco on 2026-10-02', '2026-10-02'."""
        price = None if order.price is None else f"{self._settings.currency}{order.price:.2f}"
        where = None if same_store(order.store, store) else f"at {order.store}"
        if price is None and where is None:
            return order.date
        return " ".join(part for part in (price, where, f"on {order.date}") if part)

    async def check(self) -> None:
        """Health: the database answers."""
        await self._store.ping()

    async def _known(self, agent: str) -> list[KnownItem]:
        """Every item ordered or listed, once (names compared ignoring case), unscored."""
        known: dict[str, KnownItem] = {}
        for order in await self._store.last_orders(agent):
            known.setdefault(matching.key(order.item), _from_history(order))
        for entry in await self._store.items(agent):
            item = known.setdefault(matching.key(entry.item.name), _from_list(entry))
            if entry.list_name not in item.on_lists:
                item.on_lists.append(entry.list_name)
        return list(known.values())


def list_key(name: str) -> str:
    """A list's name as stored: lowercase, single spaces."""
    key = matching.key(name)
    if not 1 <= len(key) <= MAX_LIST_NAME:
        raise InvalidRequest(f"A list name needs 1 to {MAX_LIST_NAME} characters.")
    return key


def amount(quantity: float, unit: str | None, name: str = "") -> str:
    """'2 kg apples', '3 lemons', 'milk' (a single item without unit), '4 kg'."""
    if unit:
        return f"{quantity:g} {unit} {name}".rstrip()
    if quantity == 1 and name:
        return name
    return f"{quantity:g} {name}".rstrip()


def same_store(a: str, b: str) -> bool:
    return a.casefold() == b.casefold()


def _on(listed: list[Listed], name: str) -> list[ListItem]:
    return [entry.item for entry in listed if entry.list_name == name]


def _from_history(order: LastOrder) -> KnownItem:
    return KnownItem(
        name=order.item,
        score=0,
        times_ordered=order.times,
        last_store=order.store,
        last_date=order.date,
        last_quantity=order.quantity,
        last_price=order.price,
        on_lists=[],
    )


def _from_list(entry: Listed) -> KnownItem:
    return KnownItem(
        name=entry.item.name,
        score=0,
        times_ordered=0,
        last_store=None,
        last_date=None,
        last_quantity=None,
        last_price=None,
        on_lists=[],
    )


def _ordered(order: LastOrder) -> str:
    return f"{order.item!r} (last at {order.store} on {order.date})"


def _agent(agent: str) -> str:
    if not agent.strip():
        raise InvalidRequest("agent must not be empty.")
    return agent


def _required(what: str, text: str) -> str:
    cleaned = " ".join(text.split())
    if not cleaned:
        raise InvalidRequest(f"{what} must not be empty.")
    return cleaned


def _optional(text: str | None) -> str | None:
    cleaned = " ".join((text or "").split())
    return cleaned or None


def _quantity(quantity: float) -> float:
    if not 0 < quantity <= MAX_QUANTITY:
        raise InvalidRequest(f"quantity must be more than 0 and at most {MAX_QUANTITY:g}.")
    return float(quantity)
