"""A task group's one failure, raised as itself.

anyio wraps whatever escapes a task group in an exception group, even a single exception, so
``except ToolCallError`` around it would miss it. Entered before a task group
(``async with as_itself(), anyio.create_task_group() as tasks:``), :func:`as_itself` raises a
group of one exception (nested or not) as that exception, with its own traceback, cause and
context; a group of several stays a group.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager


@asynccontextmanager
async def as_itself() -> AsyncIterator[None]:
    """Raise an exception group of one exception as that exception."""
    try:
        yield
    except BaseExceptionGroup as group:
        error: BaseException = group
        while isinstance(error, BaseExceptionGroup) and len(error.exceptions) == 1:
            error = error.exceptions[0]
        context = error.__context__
        try:
            raise error
        finally:
            error.__context__ = context  # not the group it came in, as if raised directly
