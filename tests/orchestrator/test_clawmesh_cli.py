"""The ``clawmesh`` command's one form of error, also for a command line it does not
understand (cyclopts' own messages are put in it)."""

from __future__ import annotations

import json

import pytest

from orchestrator.cli.main import main


def test_an_unknown_option_is_one_error_line_with_its_fix(
    capsys: pytest.CaptureFixture[str],
) -> None:
    with pytest.raises(SystemExit) as ended:
        main(["agent", "stop", "clawdia", "--bogus"])
    assert ended.value.code == 2
    out, err = capsys.readouterr()
    assert out == ""
    assert err == (
        "Error: Unknown option: --bogus. - see clawmesh --help, or clawmesh <command> --help\n"
    )


def test_a_missing_argument_with_json_is_an_error_object(
    capsys: pytest.CaptureFixture[str],
) -> None:
    with pytest.raises(SystemExit) as ended:
        main(["agent", "init", "--json"])
    assert ended.value.code == 2
    error = json.loads(capsys.readouterr().out)
    assert set(error) == {"error", "suggestion"}
    assert "requires an argument" in error["error"]
