from pathlib import Path

import pytest

from fakes.approval_keys import PUBLIC_ENV, write_public_key


@pytest.fixture(autouse=True)
def approval_public_key(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Path:
    """pending-actions' public key (the tests' key pair), as every confirm server gets it."""
    path = write_public_key(tmp_path / "keys")
    monkeypatch.setenv(PUBLIC_ENV, str(path))
    return path
