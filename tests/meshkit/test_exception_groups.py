"""as_itself: a task group's one failure comes out as itself; several stay a group."""

from collections.abc import Callable, Coroutine
from typing import Any

import anyio
import pytest

from meshkit.exception_groups import as_itself

pytestmark = pytest.mark.anyio


async def in_task_group(*tasks: Callable[[], Coroutine[Any, Any, None]]) -> None:
    async with as_itself(), anyio.create_task_group() as group:
        for task in tasks:
            group.start_soon(task)


async def wrapped_key_error() -> None:
    empty: dict[str, int] = {}
    try:
        empty["missing"]
    except KeyError as error:
        raise KeyError("wrapped") from error


async def test_the_one_failure_of_a_task_group_is_raised_as_itself_with_its_cause() -> None:
    with pytest.raises(KeyError) as raised:
        await in_task_group(wrapped_key_error)
    assert isinstance(raised.value.__cause__, KeyError)
    assert not isinstance(raised.value.__context__, BaseExceptionGroup)


async def test_a_failure_inside_nested_task_groups_is_raised_as_itself() -> None:
    async def nested() -> None:
        await in_task_group(wrapped_key_error)

    with pytest.raises(KeyError, match="wrapped"):
        await in_task_group(nested)


async def test_two_failures_at_once_stay_a_group() -> None:
    both = anyio.Event()
    started: list[int] = []

    async def fail() -> None:
        started.append(1)
        if len(started) == 2:
            both.set()
        await both.wait()
        raise ValueError(len(started))

    with pytest.raises(ExceptionGroup) as raised:
        await in_task_group(fail, fail)
    assert len(raised.value.exceptions) == 2


async def test_a_task_group_without_failure_passes_through() -> None:
    done: list[bool] = []

    async def succeed() -> None:
        done.append(True)

    await in_task_group(succeed)
    assert done == [True]
