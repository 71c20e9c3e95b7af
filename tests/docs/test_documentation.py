"""The README and docs/ say what the code does: every variable a settings class reads is
documented, every make target a person runs is named, every link lands, the calendar's
limits are the numbers its code keeps, and the README stays a page a person reads first."""

from __future__ import annotations

import importlib
import inspect
import re
from pathlib import Path

import pytest
from pydantic_settings import BaseSettings

from mcp_calendar import expansion, rules, times, zone_rules
from meshkit.settings import env_name
from orchestrator.config.registry import ServerEntry

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


def test_every_registry_key_is_documented() -> None:
    configuration = (ROOT / "docs" / "configuration.md").read_text(encoding="utf-8")
    missing = [key for key in ServerEntry.model_fields if f"`{key}`" not in configuration]
    assert not missing, f"add these registry keys to docs/configuration.md's table: {missing}"


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


# What docs/servers.md says of the calendar's limits, and the constant each number is.
CALENDAR_LIMITS = {
    r"more than (\S+) occurrences a day": rules.MAX_PER_DAY,
    r"`INTERVAL` outside 1–(\S+),": rules.MAX_INTERVAL,
    r"`COUNT` over (\S+),": rules.MAX_COUNT,
    r"no date within (\S+) years": rules.SEARCH_YEARS,
    r"more than (\S+) `RDATE`s": rules.MAX_DATES,
    r"Dates are years (\d+)–": times.FIRST_YEAR,
    r"Dates are years \d+–(\d+)": times.LAST_YEAR,
    r"query stops at (\S+) occurrences": expansion.MAX_OCCURRENCES,
    r"or (\S+) s of expanding": expansion.EXPAND_BUDGET_S,
    r"changes more than (\S+) times in a year": zone_rules.MAX_CHANGES_PER_YEAR,
    r"or more than (\S+) times before": zone_rules.MAX_CHANGES,
    r"times before (\d+)": zone_rules.END.year,
}


@pytest.mark.parametrize(("said", "kept"), CALENDAR_LIMITS.items(), ids=list(CALENDAR_LIMITS))
def test_each_calendar_limit_the_docs_give_is_the_one_the_code_keeps(
    said: str, kept: float
) -> None:
    page = " ".join((ROOT / "docs" / "servers.md").read_text(encoding="utf-8").split())
    found = re.findall(said, page)
    assert found, f"docs/servers.md no longer says {said!r}"
    assert {float(number.replace(",", "")) for number in found} == {kept}, said
