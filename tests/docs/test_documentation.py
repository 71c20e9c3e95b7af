"""The README and docs/ say what the code does: every variable a settings class reads is
documented, every make target a person runs is named, every link lands, and the README
stays a page a person reads first."""

from __future__ import annotations

import importlib
import inspect
import re
from pathlib import Path

import pytest
from pydantic_settings import BaseSettings

from meshkit.settings import env_name

ROOT = Path(__file__).resolve().parents[2]
PAGES = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]


def text() -> str:
    return "\n".join(page.read_text(encoding="utf-8") for page in PAGES)


def settings_modules() -> list[str]:
    servers = sorted(ROOT.glob("servers/*/src/mcp_*/settings.py"))
    return [
        "meshkit.settings",
        "orchestrator.settings",
        *(f"{p.parent.name}.settings" for p in servers),
    ]


def variables() -> dict[str, str]:
    """Every environment variable a settings class reads → the class that reads it."""
    found: dict[str, str] = {}
    for name in settings_modules():
        module = importlib.import_module(name)
        for cls in vars(module).values():
            if inspect.isclass(cls) and issubclass(cls, BaseSettings) and cls.__module__ == name:
                for field in cls.model_fields:
                    found.setdefault(env_name(cls, field), f"{name}.{cls.__name__}")
    return found


def test_every_variable_a_settings_class_reads_is_documented() -> None:
    docs = text()
    missing = {
        variable: where
        for variable, where in variables().items()
        if not re.search(rf"\b{variable}\b", docs)
    }
    assert not missing, f"document these in docs/configuration.md or docs/servers.md: {missing}"


def test_every_make_target_a_person_runs_is_documented() -> None:
    makefile = (ROOT / "Makefile").read_text(encoding="utf-8")
    phony = re.search(r"^\.PHONY:(.*?)(?<!\\)$", makefile, re.M | re.S)
    assert phony
    targets = phony.group(1).replace("\\", " ").split()
    docs = text()
    missing = [target for target in targets if not re.search(rf"make[^`\n]* {target}\b", docs)]
    assert not missing, f"name these make targets in the README or docs/: {missing}"


def anchors(page: Path) -> set[str]:
    """GitHub's anchors of a page's headings."""
    headings = re.findall(r"^#+ (.+)$", page.read_text(encoding="utf-8"), re.M)
    return {re.sub(r"[^\w\- ]", "", h.lower()).replace(" ", "-") for h in headings}


@pytest.mark.parametrize("page", PAGES, ids=[page.name for page in PAGES])
def test_every_link_between_the_pages_lands(page: Path) -> None:
    for target in re.findall(r"\]\(([^)\s]+)\)", page.read_text(encoding="utf-8")):
        if re.match(r"[a-z]+:", target):
            continue
        path, _, anchor = target.partition("#")
        linked = (page.parent / path).resolve() if path else page
        assert linked.exists(), f"{page.name}: {target}"
        if anchor:
            assert anchor in anchors(linked), f"{page.name}: {target}"


def test_the_readme_starts_with_the_two_commands_and_stays_short() -> None:
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    first_block = readme.split("```bash\n", 1)[1].split("```", 1)[0].splitlines()
    assert [line.split("#")[0].split()[-2:] for line in first_block] == [
        ["make", "run"],
        ["make", "test"],
    ]
    assert len(readme.splitlines()) < 250
