import pytest

from scheduler.calls import KEY


@pytest.fixture(autouse=True)
def approval_key(monkeypatch: pytest.MonkeyPatch) -> str:
    monkeypatch.setenv("MESH_APPROVAL_KEY", KEY)
    return KEY
