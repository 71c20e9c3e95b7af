"""The approval key pair: pending-actions' private key, made once per DATA_DIR or read from
MESH_APPROVAL_SIGNING_KEY_FILE, and the public key, all a confirm server ever holds."""

from __future__ import annotations

import stat
import threading
from pathlib import Path

import pytest
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey
from cryptography.hazmat.primitives.serialization import Encoding, PublicFormat

from mcp_calendar.settings import CalendarSettings
from mcp_memory.settings import MemorySettings
from mcp_pending_actions.settings import PendingSettings
from mcp_scheduler.settings import SchedulerSettings
from mcp_shopping.settings import ShoppingSettings
from meshkit.approval_keys import (
    KeyFileError,
    load_signing_key,
    public_key,
    public_pem,
    read_public_key,
    signing_pem,
)
from meshkit.settings import ApprovalSettings, DataSettings, ServeSettings

CONFIRM_SERVERS = [CalendarSettings, ShoppingSettings, SchedulerSettings, MemorySettings]


def _raw(key: Ed25519PrivateKey) -> bytes:
    return public_pem(key.public_key())


def test_a_key_pair_is_made_in_the_data_dir_on_the_first_start(tmp_path: Path) -> None:
    data_dir = tmp_path / "data" / "nested"

    key = load_signing_key(data_dir)

    signing, public = data_dir / "approval_signing_key", data_dir / "approval_public_key"
    assert stat.S_IMODE(signing.stat().st_mode) == 0o600
    assert stat.S_IMODE(public.stat().st_mode) == 0o600
    assert signing.read_bytes() == signing_pem(key)
    assert public.read_bytes() == _raw(key)
    assert sorted(path.name for path in data_dir.iterdir()) == [
        "approval_public_key",
        "approval_signing_key",
    ]


def test_the_key_pair_is_the_same_on_every_start_and_each_data_dir_has_its_own(
    tmp_path: Path,
) -> None:
    first = load_signing_key(tmp_path / "one")

    assert signing_pem(load_signing_key(tmp_path / "one")) == signing_pem(first)
    assert signing_pem(load_signing_key(tmp_path / "two")) != signing_pem(first)


def test_servers_starting_at_the_same_moment_agree_on_one_key(tmp_path: Path) -> None:
    start = threading.Barrier(8, timeout=10)
    keys: list[bytes] = []

    def starting() -> None:
        start.wait()
        keys.append(signing_pem(load_signing_key(tmp_path)))

    threads = [threading.Thread(target=starting) for _ in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=10)

    assert len(keys) == 8
    assert len(set(keys)) == 1
    assert (tmp_path / "approval_signing_key").read_bytes() == keys[0]
    assert [p.name for p in tmp_path.iterdir() if p.name.startswith(".")] == []  # no drafts


def test_a_public_key_beside_that_is_not_the_signing_keys_is_written_again(
    tmp_path: Path,
) -> None:
    key = load_signing_key(tmp_path)
    (tmp_path / "approval_public_key").write_bytes(_raw(Ed25519PrivateKey.generate()))

    load_signing_key(tmp_path)

    assert (tmp_path / "approval_public_key").read_bytes() == _raw(key)


def test_a_configured_signing_key_file_is_used_and_nothing_is_made(tmp_path: Path) -> None:
    key = Ed25519PrivateKey.generate()
    path = tmp_path / "signing.pem"
    path.write_bytes(signing_pem(key))

    loaded = load_signing_key(tmp_path / "data", path)

    assert signing_pem(loaded) == signing_pem(key)
    assert not (tmp_path / "data").exists()


@pytest.mark.parametrize(
    ("content", "why"),
    [
        pytest.param(b"", "is not an Ed25519 public key", id="empty"),
        pytest.param(
            ec.generate_private_key(ec.SECP256R1())
            .public_key()
            .public_bytes(Encoding.PEM, PublicFormat.SubjectPublicKeyInfo),
            "is not an Ed25519 public key",
            id="an-ec-key",
        ),
        pytest.param(
            signing_pem(Ed25519PrivateKey.generate()), "holds a private key", id="the-private-key"
        ),
    ],
)
def test_a_file_without_an_ed25519_public_key_is_refused(
    tmp_path: Path, content: bytes, why: str
) -> None:
    path = tmp_path / "public.pem"
    path.write_bytes(content)

    with pytest.raises(KeyFileError, match=why):
        read_public_key(path)


def test_a_configured_public_key_is_read_at_startup(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    missing = tmp_path / "missing.pem"
    settings = ApprovalSettings(data_dir=tmp_path, approval_public_key_file=missing)

    with pytest.raises(SystemExit) as stopped:
        public_key(settings)

    [line] = capsys.readouterr().err.splitlines()
    assert stopped.value.code == 2
    assert line.startswith(
        f"configuration error: cannot read MESH_APPROVAL_PUBLIC_KEY_FILE ({missing})"
    )


def test_without_a_configured_file_the_public_key_is_read_when_needed(tmp_path: Path) -> None:
    source = public_key(ApprovalSettings(data_dir=tmp_path))  # pending-actions not yet built
    with pytest.raises(KeyFileError):
        source()

    key = load_signing_key(tmp_path)  # pending-actions starts in the same DATA_DIR

    assert public_pem(source()) == _raw(key)


@pytest.mark.parametrize(
    ("settings_cls", "keys"),
    [*((cls, ["approval_public_key_file"]) for cls in CONFIRM_SERVERS), (ServeSettings, [])],
)
def test_no_confirm_server_has_a_setting_for_a_key_that_signs(
    settings_cls: type[DataSettings],
    keys: list[str],
    monkeypatch: pytest.MonkeyPatch,
    tmp_path: Path,
) -> None:
    signing = tmp_path / "approval_signing_key"
    monkeypatch.setenv("MESH_APPROVAL_SIGNING_KEY_FILE", str(signing))
    monkeypatch.setenv("MESH_APPROVAL_KEY", "x" * 40)  # the key every confirm server held before

    dumped = settings_cls(data_dir=tmp_path).model_dump_json()

    assert [name for name in settings_cls.model_fields if "approval" in name] == keys
    assert str(signing) not in dumped
    assert "x" * 40 not in dumped


def test_only_pending_actions_reads_the_signing_key_file(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.setenv("MESH_APPROVAL_SIGNING_KEY_FILE", str(tmp_path / "signing.pem"))

    assert PendingSettings().approval_signing_key_file == tmp_path / "signing.pem"
    assert "approval_public_key_file" not in PendingSettings.model_fields


def test_a_key_file_variable_set_to_nothing_is_unset(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("MESH_APPROVAL_SIGNING_KEY_FILE", "")  # as .env.example has it
    monkeypatch.setenv("MESH_APPROVAL_PUBLIC_KEY_FILE", "")

    assert PendingSettings().approval_signing_key_file is None
    assert ApprovalSettings().approval_public_key_file is None
