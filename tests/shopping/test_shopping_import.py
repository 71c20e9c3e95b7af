"""``clawmesh shopping import``: a CSV of orders goes in whole, or not at all."""

import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import anyio.to_thread
import pytest
from fastmcp import Client

from fakes.tool_calls import call
from mcp_shopping import commands, importer
from mcp_shopping.__main__ import main as shopping_main
from mcp_shopping.settings import ShoppingSettings
from meshkit.errors import BadFile
from shopping.calls import ORDERS_CSV, WATER, snapshot

pytestmark = pytest.mark.anyio

EXAMPLE = Path(__file__).parents[2] / "servers/shopping/src/mcp_shopping/example_orders.csv"


@pytest.fixture
def data_dir(settings: ShoppingSettings, monkeypatch: pytest.MonkeyPatch) -> Path:
    """DATA_DIR for the command, the same the client's server uses."""
    monkeypatch.setenv("DATA_DIR", str(settings.data_dir))
    return settings.data_dir


def write(tmp_path: Path, text: str, name: str = "orders.csv") -> Path:
    path = tmp_path / name
    path.write_text(text, encoding="utf-8")
    return path


async def run_import(capsys: pytest.CaptureFixture[str], *argv: str | Path) -> tuple[int, str, str]:
    """The command in-process (in a thread: it runs its own event loop), as the shopping
    container's ``python -m mcp_shopping import`` runs it."""

    def run() -> int:
        try:
            commands.main(["import", *map(str, argv)])
        except SystemExit as exited:
            return int(exited.code or 0)
        return 0

    code = await anyio.to_thread.run_sync(run)
    out, err = capsys.readouterr()
    return code, out, err


@pytest.mark.usefixtures("data_dir")
async def test_a_good_file_is_imported_and_a_second_import_adds_nothing(
    client: Client[Any], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = write(tmp_path, ORDERS_CSV)
    grown = write(tmp_path, ORDERS_CSV + "2026-10-19,Bananas,Safeway,,1.14\n", "grown.csv")

    first = await run_import(capsys, path, "--agent", "clawdia")
    again = await run_import(capsys, path, "--agent", "clawdia")
    more = await run_import(capsys, grown, "--agent", "clawdia")

    assert first == (0, "imported 8 orders (0 already present) for agent clawdia\n", "")
    assert again == (0, "imported 0 orders (8 already present) for agent clawdia\n", "")
    assert more == (0, "imported 1 orders (8 already present) for agent clawdia\n", "")
    found = await call(client, "find_item", query="the kirkland water", agent="clawdia")
    assert (found["matches"][0]["name"], found["matches"][0]["times_ordered"]) == (WATER, 3)
    bananas = await call(client, "get_recent_orders", limit=1, agent="clawdia")
    assert bananas["orders"][0] | {"id": 0} == {
        "id": 0,
        "item": "Bananas",
        "store": "Safeway",
        "date": "2026-10-19",
        "quantity": 1,
        "price": 1.14,
        "source": "import",
        "example": False,
    }
    assert (await call(client, "get_recent_orders"))["orders"] == []  # agent "default"


async def test_a_row_repeated_in_the_file_is_two_orders_and_is_still_imported_once(
    data_dir: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    row = "2026-10-01,Bananas,Safeway,1,1.14\n"
    path = write(tmp_path, "date,item,store,quantity,price\n" + row + row)

    first = await run_import(capsys, path)
    again = await run_import(capsys, path)

    assert first[1] == "imported 2 orders (0 already present) for agent default\n"
    assert again[1] == "imported 0 orders (2 already present) for agent default\n"
    assert len(snapshot(data_dir / "shopping.sqlite3")["orders"]) == 2


@pytest.mark.usefixtures("data_dir")
async def test_columns_may_come_in_any_order_and_quantity_and_price_may_be_left_out(
    client: Client[Any], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = write(tmp_path, "\ufeffStore, Item ,DATE\nCostco,Avocados,2026-10-03\n")

    assert (await run_import(capsys, path))[0] == 0
    [order] = (await call(client, "get_recent_orders"))["orders"]
    assert (order["item"], order["quantity"], order["price"]) == ("Avocados", 1, None)


def test_a_file_with_two_bad_rows_reports_both_and_imports_nothing(tmp_path: Path) -> None:
    path = write(
        tmp_path,
        "date,item,store,quantity,price\n"
        "2026-10-01,Bananas,Safeway,6,1.14\n"
        "2026-13-01,Whole Milk 1 gal,Safeway,1,4.29\n"
        "2026-10-02,Eggs,Costco,1,8.79\n"
        "2026-10-02,Kirkland Water,Costco,1,$4.99\n",
    )
    data_dir = tmp_path / "data"
    env = {**os.environ, "DATA_DIR": str(data_dir)}

    done = subprocess.run(
        [
            Path(sys.executable).with_name("clawmesh"),
            "shopping",
            "import",
            str(path),
            "--agent",
            "clawdia",
        ],
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )

    assert done.returncode == 2
    assert done.stdout == ""
    assert done.stderr.splitlines() == [
        "line 3: date '2026-13-01' is not YYYY-MM-DD",
        "line 5: price '$4.99' is not a decimal number like 4.99 (no currency sign)",
        f"Error: nothing was imported from {path} - fix the lines above",
    ]
    assert not (data_dir / "shopping.sqlite3").exists()


@pytest.mark.parametrize(
    ("text", "problems"),
    [
        ("", ["line 1: the file is empty; it must start with date,item,store,quantity,price"]),
        (
            "date,item,store,notes\n",
            ["line 1: unknown column 'notes'; the columns are date,item,store,quantity,price"],
        ),
        ("date,item,quantity\n", ["line 1: no 'store' column"]),
        ("date,item,store,date\n", ["line 1: column 'date' appears more than once"]),
        (
            "date,item,store,quantity,price\n"
            "10/02/2026,Eggs,Costco,1,1\n"
            ",Eggs,Costco,1,1\n"
            "2026-02-30,Eggs,Costco,1,1\n",
            [
                "line 2: date '10/02/2026' is not YYYY-MM-DD",
                "line 3: date '' is not YYYY-MM-DD",
                "line 4: date '2026-02-30' is not YYYY-MM-DD",
            ],
        ),
        (
            "date,item,store,quantity,price\n"
            "2026-10-02, ,Costco,two,1\n"
            "2026-10-02,Eggs,,0,-1\n"
            "2026-10-02,Eggs,Costco,nan,1e3\n"
            "2026-10-02,Eggs,Costco\n",
            [
                "line 2: item is empty",
                "line 2: quantity 'two' is not a positive number",
                "line 3: store is empty",
                "line 3: quantity '0' is not a positive number",
                "line 3: price '-1' is not a decimal number like 4.99 (no currency sign)",
                "line 4: quantity 'nan' is not a positive number",
                "line 4: price '1e3' is not a decimal number like 4.99 (no currency sign)",
                "line 5: 3 fields, but the header names 5",
            ],
        ),
    ],
    ids=["empty", "extra-column", "missing-column", "twice", "dates", "cells"],
)
def test_every_problem_is_reported_with_its_line(text: str, problems: list[str]) -> None:
    with pytest.raises(BadFile) as raised:
        importer.read_orders(text.splitlines(keepends=True))

    assert raised.value.problems == problems


def test_quantities_and_prices_are_plain_decimals() -> None:
    [order] = importer.read_orders(
        ["date,item,store,quantity,price\n", "2026-10-02, Eggs  18ct ,Costco,0.5,.99\n"]
    )

    assert (order.item, order.quantity, order.price) == ("Eggs 18ct", 0.5, 0.99)


@pytest.mark.usefixtures("data_dir")
async def test_a_missing_file_is_reported(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code, out, err = await run_import(capsys, tmp_path / "nope.csv")

    assert (code, out) == (1, "")
    assert err.startswith(f"Error: cannot read {tmp_path / 'nope.csv'}: No such file")


def test_help_documents_the_format(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exited:
        shopping_main(["import", "--help"])
    import_help = capsys.readouterr().out
    with pytest.raises(SystemExit) as helped:
        shopping_main(["--help"])
    main_help = capsys.readouterr().out

    assert exited.value.code == 0
    assert helped.value.code == 0
    said = " ".join(import_help.split())
    assert "date,item,store,quantity,price" in said
    assert "YYYY-MM-DD" in said
    assert "without currency sign" in said
    assert "clawmesh shopping import|forget-examples" in " ".join(main_help.split())


def test_the_example_file_is_valid() -> None:
    with EXAMPLE.open(encoding="utf-8") as lines:
        orders = importer.read_orders(lines)

    assert WATER in {order.item for order in orders}
    assert {order.store for order in orders} >= {"Costco"}


def test_make_import_orders_imports_the_readmes_example_and_names_its_usage(
    tmp_path: Path,
) -> None:
    root = Path(__file__).resolve().parents[2]
    env = {**os.environ, "DATA_DIR": str(tmp_path / "data")}

    def make(*args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            ["make", "-s", "import-orders", *args],
            cwd=root,
            env=env,
            capture_output=True,
            text=True,
            timeout=120,
            check=False,
        )

    done = make("FILE=servers/shopping/src/mcp_shopping/example_orders.csv", "AGENT=clawdia")
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith("imported ")
    assert "for agent clawdia" in done.stdout
    assert (tmp_path / "data" / "shopping.sqlite3").is_file()
    missing = make()
    assert missing.returncode == 2
    assert "usage: make import-orders FILE=orders.csv [AGENT=clawdia]" in missing.stderr
