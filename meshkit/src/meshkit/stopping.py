"""The stop signal a server's long polls listen to, apart from ``meshkit.serve``.

A server's factory takes one in both shapes; only a served process (``meshkit.serve``)
ever calls ``stop``. A module of its own, so the embedded orchestrator, which builds such
servers and serves no HTTP, does not load the HTTP serving stack (uvicorn's protocols,
httptools, ``meshkit.http``) for this one class.
"""

from __future__ import annotations

from collections.abc import Callable


class Stopping:
    """Told when a served server is asked to stop (SIGTERM, Ctrl-C), before uvicorn waits
    for the open requests: a long poll registered here ends at once instead of holding the
    shutdown. A factory gets one; in embedded mode nothing ever stops it this way."""

    def __init__(self) -> None:
        self._hooks: list[Callable[[], None]] = []

    def on_stop(self, hook: Callable[[], None]) -> None:
        self._hooks.append(hook)

    def stop(self) -> None:
        for hook in self._hooks:
            hook()
