"""Proposals, approval tokens and confirm-once: nothing changes without a valid Confirm tap."""

from __future__ import annotations

import base64
import hashlib
import hmac
import json
import sqlite3
import threading
import unicodedata
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey
from pydantic import ValidationError

from meshkit.approval_keys import public_pem, read_public_key
from meshkit.errors import ModelError
from meshkit.proposals import (
    CONFIRMATIONS_SCHEMA,
    Approval,
    ApprovalRefused,
    Approvals,
    ApprovalSigner,
    confirm_once,
    payload_hash,
)
from meshkit.wire.proposals import NOT_DONE_NOTE, Proposal

KEY = Ed25519PrivateKey.from_private_bytes(b"k" * 32)
OTHER_KEY = Ed25519PrivateKey.from_private_bytes(b"o" * 32)
ACTION = "act_0123456789ab"
SERVER = "shopping"
AGENT = "clawdia"
KIND = "add_item"
PAYLOAD: dict[str, Any] = {"item": "milk", "quantity": 2}
MINTED_AT = 1_700_000_000


class SteppingClock:
    def __init__(self, now: float) -> None:
        self.now = now

    def __call__(self) -> float:
        return self.now


@pytest.fixture
def clock() -> SteppingClock:
    return SteppingClock(MINTED_AT)


@pytest.fixture
def signer(clock: SteppingClock) -> ApprovalSigner:
    """pending-actions."""
    return ApprovalSigner(KEY, clock=clock)


@pytest.fixture
def approvals(clock: SteppingClock) -> Approvals:
    """A confirm server: the public key only."""
    return Approvals(KEY.public_key(), clock=clock)


@pytest.fixture
def token(signer: ApprovalSigner) -> str:
    return signer.mint(ACTION, SERVER, KIND, PAYLOAD, agent=AGENT)


# --- Proposal ------------------------------------------------------------------------------


def test_a_proposal_defaults_to_confirm_and_cancel_buttons_for_four_hours() -> None:
    proposal = Proposal(kind="add_item", summary="Add 2 × milk", payload={"item": "milk"})

    assert proposal.confirm_label == "✅ Confirm"
    assert proposal.cancel_label == "❌ Cancel"
    assert proposal.ttl_s == 4 * 3600
    assert proposal.note == NOT_DONE_NOTE
    assert "Nothing has changed yet" in proposal.note


def test_a_proposal_survives_a_json_round_trip() -> None:
    proposal = Proposal(kind="reorder", summary="Reorder", payload={"ids": [1, 2], "é": None})

    assert Proposal.model_validate_json(proposal.model_dump_json()) == proposal


@pytest.mark.parametrize("kind", ["reorder", "add_item", "a", "x2", "a" * 40])
def test_a_lowercase_identifier_is_a_valid_kind(kind: str) -> None:
    assert Proposal(kind=kind, summary="s", payload={}).kind == kind


@pytest.mark.parametrize(
    "kind", ["Reorder", "re-order", "", "2nd", "_item", "add item", "add.item", "a" * 41]
)
def test_a_kind_that_cannot_name_a_confirm_tool_is_refused(kind: str) -> None:
    with pytest.raises(ValidationError, match="kind"):
        Proposal(kind=kind, summary="s", payload={})


@pytest.mark.parametrize("ttl_s", [1, 7 * 24 * 3600])
def test_a_ttl_from_one_second_to_a_week_is_accepted(ttl_s: int) -> None:
    assert Proposal(kind="k", summary="s", payload={}, ttl_s=ttl_s).ttl_s == ttl_s


@pytest.mark.parametrize("ttl_s", [0, -1, 7 * 24 * 3600 + 1])
def test_a_ttl_outside_one_second_to_a_week_is_refused(ttl_s: int) -> None:
    with pytest.raises(ValidationError, match="ttl_s"):
        Proposal(kind="k", summary="s", payload={}, ttl_s=ttl_s)


def test_a_summary_holds_one_to_five_hundred_characters() -> None:
    assert len(Proposal(kind="k", summary="x" * 500, payload={}).summary) == 500
    for summary in ("", "x" * 501):
        with pytest.raises(ValidationError, match="summary"):
            Proposal(kind="k", summary=summary, payload={})


@pytest.mark.parametrize("label", ["", "x" * 41])
def test_an_empty_or_overlong_button_label_is_refused(label: str) -> None:
    with pytest.raises(ValidationError, match="confirm_label"):
        Proposal(kind="k", summary="s", payload={}, confirm_label=label)
    with pytest.raises(ValidationError, match="cancel_label"):
        Proposal(kind="k", summary="s", payload={}, cancel_label=label)


# --- payload_hash --------------------------------------------------------------------------


def test_the_hash_is_sha256_of_compact_sorted_utf8_json() -> None:
    expected = hashlib.sha256('{"a":[1,"ü"],"b":{"x":null,"y":true}}'.encode()).hexdigest()

    assert payload_hash({"b": {"y": True, "x": None}, "a": [1, "ü"]}) == expected


def test_key_order_does_not_change_the_hash_at_any_depth() -> None:
    first = {"item": "milk", "quantity": 2, "meta": {"shop": "coop", "aisle": 3}}
    second = {"meta": {"aisle": 3, "shop": "coop"}, "quantity": 2, "item": "milk"}

    assert payload_hash(first) == payload_hash(second)


@pytest.mark.parametrize(
    "changed",
    [
        {"item": "milk", "quantity": 3},
        {"item": "Milk", "quantity": 2},
        {"item": "milk", "quantity": 2, "note": ""},
        {"item": "milk"},
        {"item": "milk", "quantity": "2"},
        {"item": "milk", "quantity": [2]},
    ],
)
def test_any_change_to_a_value_or_key_changes_the_hash(changed: dict[str, Any]) -> None:
    assert payload_hash(changed) != payload_hash(PAYLOAD)


def test_json_number_types_are_part_of_the_hash() -> None:
    # json writes 1 as "1", 1.0 as "1.0" and True as "true": the confirm tool must hash
    # the payload with the same number types the producer proposed.
    assert len({payload_hash({"q": 1}), payload_hash({"q": 1.0}), payload_hash({"q": True})}) == 3


def test_list_order_is_part_of_the_hash() -> None:
    assert payload_hash({"ids": [1, 2]}) != payload_hash({"ids": [2, 1]})


def test_a_unicode_payload_hashes_the_same_every_time() -> None:
    payload = {"item": "crème brûlée 🍰", "for": "Zoë", "note": "日本語"}
    canonical = '{"for":"Zoë","item":"crème brûlée 🍰","note":"日本語"}'

    assert payload_hash(payload) == payload_hash(dict(reversed(payload.items())))
    assert payload_hash(payload) == hashlib.sha256(canonical.encode("utf-8")).hexdigest()


def test_unicode_text_is_hashed_without_normalisation() -> None:
    composed = unicodedata.normalize("NFC", "café")
    decomposed = unicodedata.normalize("NFD", "café")

    assert payload_hash({"item": composed}) != payload_hash({"item": decomposed})


# --- Approvals -----------------------------------------------------------------------------


def test_a_minted_token_checks_for_the_same_change(approvals: Approvals, token: str) -> None:
    approval = approvals.check(token, SERVER, KIND, dict(reversed(PAYLOAD.items())), agent=AGENT)

    assert approval == Approval(ACTION, AGENT, SERVER, KIND, MINTED_AT + 300)


def test_a_token_reads_version_action_expiry_and_signature(token: str) -> None:
    version, action_id, expiry, signature = token.split(".")

    assert (version, action_id, expiry) == ("v3", ACTION, str(MINTED_AT + 300))
    assert len(signature) == 86  # 64 bytes of Ed25519 signature, base64url without padding
    signed = json.dumps(
        ["v3", ACTION, AGENT, SERVER, KIND, payload_hash(PAYLOAD), MINTED_AT + 300],
        separators=(",", ":"),
    )
    KEY.public_key().verify(base64.urlsafe_b64decode(signature + "=="), signed.encode())


def test_a_token_checks_until_its_expiry_second_and_is_refused_after(
    signer: ApprovalSigner, approvals: Approvals, clock: SteppingClock
) -> None:
    token = signer.mint(ACTION, SERVER, KIND, PAYLOAD, ttl_s=60, agent=AGENT)

    clock.now = MINTED_AT + 60
    assert approvals.check(token, SERVER, KIND, PAYLOAD, agent=AGENT).expires_at == MINTED_AT + 60
    clock.now = MINTED_AT + 60.5
    with pytest.raises(ApprovalRefused, match="expired") as refused:
        approvals.check(token, SERVER, KIND, PAYLOAD, agent=AGENT)
    assert "Nothing was changed" in str(refused.value)


@pytest.mark.parametrize(
    ("action_id", "server", "kind"),
    [
        pytest.param(ACTION + "\n", SERVER, KIND, id="id-newline"),
        pytest.param("bad.id", SERVER, KIND, id="id-dot"),
        pytest.param(ACTION, "a\nb", KIND, id="server-newline"),
        pytest.param(ACTION, SERVER, "b\nc", id="kind-newline"),
    ],
)
def test_no_token_is_minted_for_a_malformed_change(
    signer: ApprovalSigner, action_id: str, server: str, kind: str
) -> None:
    with pytest.raises(ValueError, match="cannot mint"):
        signer.mint(action_id, server, kind, PAYLOAD, agent=AGENT)


def test_a_blank_summary_or_a_boolean_ttl_is_refused() -> None:
    with pytest.raises(ValidationError):
        Proposal(kind="add_item", summary="   ", payload={})
    with pytest.raises(ValidationError):
        Proposal(kind="add_item", summary="Add milk", payload={}, ttl_s=True)


def test_approval_refused_is_an_error_for_the_model() -> None:
    assert issubclass(ApprovalRefused, ModelError)


def _with_part(token: str, index: int, value: str) -> str:
    parts = token.split(".")
    parts[index] = value
    return ".".join(parts)


def _respelled(signature: str) -> str:
    """The same 64 bytes in base64url with the unused low bits of the last character set."""
    alphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_"
    last = alphabet.index(signature[-1])
    respelled = signature[:-1] + alphabet[last | 0b1111]
    assert base64.urlsafe_b64decode(respelled + "==") == base64.urlsafe_b64decode(signature + "==")
    return respelled


@pytest.mark.parametrize(
    ("forge", "reason"),
    [
        pytest.param(lambda t: "", "none was given", id="empty"),
        pytest.param(lambda t: "please-let-me", "none was given", id="garbage"),
        pytest.param(lambda t: t + ".extra", "none was given", id="five-parts"),
        pytest.param(lambda t: _with_part(t, 0, "v4"), "none was given", id="version"),
        pytest.param(lambda t: _with_part(t, 0, "v1"), "older format", id="version-1"),
        pytest.param(lambda t: _with_part(t, 0, "v2"), "older format", id="version-2"),
        pytest.param(lambda t: _with_part(t, 1, "act_XYZ"), "none was given", id="short-id"),
        pytest.param(
            lambda t: _with_part(t, 1, "act_0123456789AB"), "none was given", id="upper-id"
        ),
        pytest.param(lambda t: _with_part(t, 1, "0123456789ab"), "none was given", id="no-act"),
        pytest.param(lambda t: _with_part(t, 2, "17e8"), "malformed", id="expiry-letters"),
        pytest.param(lambda t: _with_part(t, 2, "-1"), "malformed", id="expiry-negative"),
        pytest.param(lambda t: _with_part(t, 2, ""), "malformed", id="expiry-empty"),
        pytest.param(lambda t: _with_part(t, 2, "\u00b2"), "malformed", id="expiry-superscript"),
        pytest.param(lambda t: _with_part(t, 2, "9" * 5000), "malformed", id="expiry-huge"),
        pytest.param(
            lambda t: _with_part(t, 2, "0" + t.split(".")[2]), "malformed", id="expiry-zero-padded"
        ),
        pytest.param(lambda t: _with_part(t, 1, ACTION + "\n"), "none was given", id="id-newline"),
        pytest.param(
            lambda t: _with_part(t, 2, str(MINTED_AT + 86_400)), "does not match", id="expiry"
        ),
        pytest.param(
            lambda t: _with_part(t, 1, "act_0123456789ac"), "does not match", id="action-id"
        ),
        pytest.param(lambda t: _with_part(t, 3, "A" * 86), "does not match", id="signature"),
        pytest.param(lambda t: _with_part(t, 3, ""), "does not match", id="no-signature"),
        pytest.param(
            lambda t: _with_part(t, 3, t.split(".")[3][:-1]), "does not match", id="cut-short"
        ),
        pytest.param(
            lambda t: _with_part(t, 3, t.split(".")[3] + "=="), "does not match", id="padded"
        ),
        pytest.param(
            lambda t: _with_part(t, 3, t.split(".")[3].replace("-", "+").replace("_", "/")),
            "does not match",
            id="standard-base64",
        ),
        pytest.param(
            lambda t: _with_part(t, 3, _respelled(t.split(".")[3])),
            "does not match",
            id="same-bytes-other-spelling",
        ),
    ],
)
def test_a_forged_or_altered_token_is_refused(
    approvals: Approvals, token: str, forge: Callable[[str], str], reason: str
) -> None:
    with pytest.raises(ApprovalRefused, match=reason) as refused:
        approvals.check(forge(token), SERVER, KIND, PAYLOAD, agent=AGENT)
    assert "Nothing was changed" in str(refused.value)


@pytest.mark.parametrize(
    ("server", "kind", "payload"),
    [
        pytest.param("pantry", KIND, PAYLOAD, id="another-server"),
        pytest.param(SERVER, "remove_item", PAYLOAD, id="another-kind"),
        pytest.param(SERVER, KIND, {"item": "milk", "quantity": 20}, id="tampered-quantity"),
        pytest.param(SERVER, KIND, {"item": "milk", "quantity": 2.0}, id="float-quantity"),
        pytest.param(SERVER, KIND, {**PAYLOAD, "extra": True}, id="added-field"),
    ],
)
def test_a_token_for_another_change_is_refused(
    approvals: Approvals, token: str, server: str, kind: str, payload: dict[str, Any]
) -> None:
    with pytest.raises(ApprovalRefused, match="does not match") as refused:
        approvals.check(token, server, kind, payload, agent=AGENT)
    assert "Nothing was changed" in str(refused.value)


@pytest.mark.parametrize(
    "agent",
    [
        pytest.param("bob", id="another-agent"),
        pytest.param("", id="no-agent"),
        pytest.param(f'{AGENT}","{SERVER}', id="agent-spelling-other-parts"),
    ],
)
def test_a_token_for_an_action_of_another_agent_is_refused(
    approvals: Approvals, token: str, agent: str
) -> None:
    with pytest.raises(ApprovalRefused, match="another agent") as refused:
        approvals.check(token, SERVER, KIND, PAYLOAD, agent=agent)
    assert "Nothing was changed" in str(refused.value)


def test_no_token_is_minted_without_an_agent(signer: ApprovalSigner) -> None:
    with pytest.raises(ValueError, match="cannot mint"):
        signer.mint(ACTION, SERVER, KIND, PAYLOAD, agent="")


def test_a_token_signed_with_another_ed25519_key_is_refused(
    approvals: Approvals, clock: SteppingClock
) -> None:
    foreign = ApprovalSigner(OTHER_KEY, clock=clock).mint(
        ACTION, SERVER, KIND, PAYLOAD, agent=AGENT
    )

    with pytest.raises(ApprovalRefused, match="another key") as refused:
        approvals.check(foreign, SERVER, KIND, PAYLOAD, agent=AGENT)
    assert "Nothing was changed" in str(refused.value)


def _hmac_token(key: bytes, version: str) -> str:
    """A token made the way v2 was (an HMAC-SHA256 over the same array), with ``key``."""
    expiry = MINTED_AT + 300
    parts = [version, ACTION, AGENT, SERVER, KIND, payload_hash(PAYLOAD), expiry]
    message = json.dumps(parts, separators=(",", ":")).encode()
    mac = base64.urlsafe_b64encode(hmac.new(key, message, hashlib.sha256).digest())
    return f"{version}.{ACTION}.{expiry}.{mac.rstrip(b'=').decode()}"


@pytest.mark.parametrize(("version", "reason"), [("v2", "older format"), ("v3", "does not match")])
def test_a_token_made_with_the_public_key_as_an_hmac_key_is_refused(
    approvals: Approvals, version: str, reason: str
) -> None:
    public = public_pem(KEY.public_key())

    with pytest.raises(ApprovalRefused, match=reason) as refused:
        approvals.check(_hmac_token(public, version), SERVER, KIND, PAYLOAD, agent=AGENT)
    assert "Nothing was changed" in str(refused.value)


def test_a_v2_token_from_the_old_shared_key_is_refused_as_an_older_format(
    approvals: Approvals,
) -> None:
    old = _hmac_token(b"k" * 32, "v2")

    with pytest.raises(ApprovalRefused, match="older format, minted before an update"):
        approvals.check(old, SERVER, KIND, PAYLOAD, agent=AGENT)


def test_a_refused_token_is_a_model_error(approvals: Approvals) -> None:
    with pytest.raises(ModelError, match="Nothing was changed"):
        approvals.check("", SERVER, KIND, PAYLOAD, agent=AGENT)


def test_an_expired_token_is_refused_even_with_a_valid_mac(
    approvals: Approvals, token: str, clock: SteppingClock
) -> None:
    clock.now = MINTED_AT + 301

    with pytest.raises(ApprovalRefused, match="tap Confirm again"):
        approvals.check(token, SERVER, KIND, PAYLOAD, agent=AGENT)


def test_a_confirm_server_without_its_public_key_yet_refuses_with_a_worded_error(
    token: str, clock: SteppingClock, tmp_path: Path
) -> None:
    approvals = Approvals(lambda: read_public_key(tmp_path / "approval_public_key"), clock=clock)

    with pytest.raises(ApprovalRefused, match="no key to check approvals with yet") as refused:
        approvals.check(token, SERVER, KIND, PAYLOAD, agent=AGENT)
    assert "Nothing was changed" in str(refused.value)

    (tmp_path / "approval_public_key").write_bytes(public_pem(KEY.public_key()))
    assert approvals.check(token, SERVER, KIND, PAYLOAD, agent=AGENT).action_id == ACTION


# --- confirm_once --------------------------------------------------------------------------

APPROVAL = Approval(ACTION, AGENT, SERVER, KIND, MINTED_AT + 300)


def _connect(path: Path) -> sqlite3.Connection:
    db = sqlite3.connect(path, isolation_level=None, check_same_thread=False)
    db.execute("PRAGMA busy_timeout = 5000")
    return db


@pytest.fixture
def db_path(tmp_path: Path) -> Path:
    path = tmp_path / "shop.sqlite3"
    db = _connect(path)
    db.execute("PRAGMA journal_mode = WAL")
    db.executescript(CONFIRMATIONS_SCHEMA)
    db.execute("CREATE TABLE items (name TEXT NOT NULL, quantity INTEGER NOT NULL)")
    db.close()
    return path


@pytest.fixture
def db(db_path: Path) -> Iterator[sqlite3.Connection]:
    db = _connect(db_path)
    yield db
    db.close()


class AddMilk:
    """A perform callable that counts its calls."""

    def __init__(self) -> None:
        self.calls = 0
        self._lock = threading.Lock()

    def __call__(self, db: sqlite3.Connection) -> dict[str, Any]:
        with self._lock:
            self.calls += 1
        db.execute("INSERT INTO items (name, quantity) VALUES ('milk', 2)")
        return {"added": "milk", "quantity": 2, "total": _count(db, "items")}


def _count(db: sqlite3.Connection, table: str) -> int:
    row = db.execute(f"SELECT count(*) FROM {table}").fetchone()
    return int(row[0])


def test_the_first_confirmation_performs_and_records_the_action(db: sqlite3.Connection) -> None:
    perform = AddMilk()

    confirmed = confirm_once(db, APPROVAL, perform, at=123.5)

    assert confirmed.replayed is False
    assert confirmed.result == {"added": "milk", "quantity": 2, "total": 1}
    assert perform.calls == 1
    assert _count(db, "items") == 1
    rows = db.execute("SELECT action_id, kind, at FROM confirmations").fetchall()
    assert rows == [(ACTION, KIND, 123.5)]
    assert not db.in_transaction


def test_a_replayed_approval_returns_the_first_result_and_does_nothing(
    db: sqlite3.Connection,
) -> None:
    perform = AddMilk()
    first = confirm_once(db, APPROVAL, perform, at=1.0)

    again = confirm_once(db, APPROVAL, perform, at=2.0)

    assert again.replayed is True
    assert again.result == first.result
    assert perform.calls == 1
    assert _count(db, "items") == 1
    assert _count(db, "confirmations") == 1
    assert not db.in_transaction


def test_another_action_is_performed_again(db: sqlite3.Connection) -> None:
    perform = AddMilk()
    confirm_once(db, APPROVAL, perform, at=1.0)

    other = Approval("act_ba9876543210", AGENT, SERVER, KIND, MINTED_AT + 300)
    confirmed = confirm_once(db, other, perform, at=2.0)

    assert confirmed.replayed is False
    assert confirmed.result["total"] == 2
    assert perform.calls == 2


def test_a_failing_perform_leaves_nothing_behind_and_a_later_call_performs(
    db: sqlite3.Connection,
) -> None:
    def write_then_fail(db: sqlite3.Connection) -> dict[str, Any]:
        db.execute("INSERT INTO items (name, quantity) VALUES ('milk', 2)")
        raise RuntimeError("shop is closed")

    with pytest.raises(RuntimeError, match="shop is closed"):
        confirm_once(db, APPROVAL, write_then_fail, at=1.0)

    assert not db.in_transaction
    assert _count(db, "items") == 0
    assert _count(db, "confirmations") == 0

    perform = AddMilk()
    confirmed = confirm_once(db, APPROVAL, perform, at=2.0)
    assert confirmed.replayed is False
    assert perform.calls == 1
    assert _count(db, "items") == 1


def test_a_result_that_cannot_be_stored_rolls_back_the_change(db: sqlite3.Connection) -> None:
    def unstorable(db: sqlite3.Connection) -> dict[str, Any]:
        db.execute("INSERT INTO items (name, quantity) VALUES ('milk', 2)")
        return {"at": object()}

    with pytest.raises(TypeError):
        confirm_once(db, APPROVAL, unstorable, at=1.0)

    assert _count(db, "items") == 0
    assert _count(db, "confirmations") == 0


def test_the_confirmation_is_visible_to_another_connection(
    db: sqlite3.Connection, db_path: Path
) -> None:
    perform = AddMilk()
    confirm_once(db, APPROVAL, perform, at=1.0)

    other = _connect(db_path)
    try:
        replay = confirm_once(other, APPROVAL, perform, at=2.0)
    finally:
        other.close()

    assert replay.replayed is True
    assert perform.calls == 1


def test_two_threads_confirming_the_same_action_perform_it_once(db_path: Path) -> None:
    perform = AddMilk()
    start = threading.Barrier(2, timeout=5)
    results: list[bool] = []
    errors: list[BaseException] = []

    def confirm() -> None:
        db = _connect(db_path)
        try:
            start.wait()
            results.append(confirm_once(db, APPROVAL, perform, at=1.0).replayed)
        except BaseException as error:
            errors.append(error)
        finally:
            db.close()

    threads = [threading.Thread(target=confirm) for _ in range(2)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=10)
        assert not thread.is_alive()

    assert errors == []
    assert sorted(results) == [False, True]
    assert perform.calls == 1
    check = _connect(db_path)
    try:
        assert _count(check, "items") == 1
        assert _count(check, "confirmations") == 1
    finally:
        check.close()
