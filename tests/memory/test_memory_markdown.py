"""``clawmesh memory export|import`` as real processes on a real DATA_DIR: Markdown out,
Markdown in, checked first and all or nothing."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from fastmcp import Client

from mcp_memory.server import build_server
from mcp_memory.settings import MemorySettings
from meshkit.approval_keys import load_signing_key
from meshkit.proposals import ApprovalSigner

pytestmark = pytest.mark.anyio

EXPORTED = """# Remembered by clawdia

## For everyone
- Answer in English

## About user 42
- Has a dog called Rex
- Allergic to penicillin

## About user 77
- Likes jazz
"""


def memory(data_dir: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "DATA_DIR": str(data_dir)}
    return subprocess.run(
        [Path(sys.executable).with_name("clawmesh"), "memory", *args],
        env=env, capture_output=True, text=True, check=False, timeout=60,
    )  # fmt: skip


async def remember(settings: MemorySettings, *notes: tuple[str, str, str]) -> None:
    signer = ApprovalSigner(load_signing_key(settings.data_dir))
    async with Client(build_server(settings)) as client:
        for n, (scope, user, text) in enumerate(notes):
            arguments: dict[str, Any] = {"text": text, "scope": scope, "agent": "clawdia",
                                         "user": user}  # fmt: skip
            proposal = await client.call_tool("propose_remember", arguments)
            assert proposal.structured_content is not None
            payload = proposal.structured_content["payload"]
            token = signer.mint(f"act_{n:012x}", "memory", "remember", payload, agent="clawdia")
            await client.call_tool("confirm_remember", {"payload": payload, "approval": token})


async def test_export_writes_markdown_and_import_reads_it_back_once(
    settings: MemorySettings, tmp_path: Path
) -> None:
    await remember(
        settings,
        ("agent", "42", "Answer in English"),
        ("user", "42", "Has a dog called Rex"),
        ("user", "42", "Allergic to penicillin"),
        ("user", "77", "Likes jazz"),
    )

    exported = memory(settings.data_dir, "export", "--agent", "clawdia")
    only_42 = memory(settings.data_dir, "export", "--agent", "clawdia", "--user", "42")
    file = tmp_path / "memory.md"
    file.write_text(exported.stdout)
    first = memory(settings.data_dir, "import", str(file), "--agent", "otto")
    again = memory(settings.data_dir, "import", str(file), "--agent", "otto")
    otto = memory(settings.data_dir, "export", "--agent", "otto")

    assert exported.stdout == EXPORTED, exported.stderr
    assert "Likes jazz" not in only_42.stdout
    assert "Has a dog called Rex" in only_42.stdout
    assert first.stdout == "imported 4 memories (0 already remembered) for agent otto\n"
    assert again.stdout == "imported 0 memories (4 already remembered) for agent otto\n"
    assert otto.stdout == EXPORTED.replace("clawdia", "otto")


async def test_a_file_with_a_mistake_imports_nothing_and_says_where(
    settings: MemorySettings, tmp_path: Path
) -> None:
    file = tmp_path / "memory.md"
    file.write_text(
        "# Mine\n\n## For everyone\n- Fine line\n## About you\n- x\nstray words\n- " + "y" * 301
    )

    result = memory(settings.data_dir, "import", str(file), "--agent", "clawdia")
    exported = memory(settings.data_dir, "export", "--agent", "clawdia")

    assert result.returncode == 2
    assert result.stderr.splitlines() == [
        "line 5: unknown section '## About you'; use '## For everyone' or '## About user <id>'",
        "line 6: a memory outside a section; put it under one",
        "line 7: not a '- ' memory line or a '##' section: 'stray words'",
        "line 8: a memory outside a section; put it under one",
        f"Error: nothing was imported from {file} - fix the lines above",
    ]
    assert "Traceback" not in result.stderr
    assert exported.stdout == "# Remembered by clawdia\n"


async def test_an_imported_memory_is_written_plain(
    settings: MemorySettings, tmp_path: Path
) -> None:
    file = tmp_path / "memory.md"
    file.write_text(
        "## For everyone\n- Be brief REMEMBERED＞＞＞\n- Use \u202eSI\u202c u\u200dnits\n",
        encoding="utf-8",
    )

    imported = memory(settings.data_dir, "import", str(file), "--agent", "clawdia")
    exported = memory(settings.data_dir, "export", "--agent", "clawdia")

    assert imported.returncode == 0, imported.stderr
    assert exported.stdout == (
        "# Remembered by clawdia\n\n## For everyone\n- Be brief REMEMBERED>>>\n- Use SI units\n"
    )


def exported_by_a_shell(data_dir: Path, cwd: Path) -> subprocess.CompletedProcess[str]:
    """The documented command, typed in a shell with a login's umask (022)."""
    script = 'umask 022 && "$1" -m mcp_memory export --agent clawdia > memory.md'
    return subprocess.run(
        ["sh", "-c", script, "sh", sys.executable],
        env={**os.environ, "DATA_DIR": str(data_dir)},
        cwd=cwd, capture_output=True, text=True, check=False, timeout=60,
    )  # fmt: skip


async def test_an_export_redirected_to_a_file_by_a_shell_is_private(
    settings: MemorySettings, tmp_path: Path
) -> None:
    await remember(settings, ("user", "42", "Allergic to penicillin"))

    done = exported_by_a_shell(settings.data_dir, tmp_path)

    assert done.returncode == 0, done.stderr
    assert "Allergic to penicillin" in (tmp_path / "memory.md").read_text()
    assert oct((tmp_path / "memory.md").stat().st_mode & 0o777) == "0o600"
