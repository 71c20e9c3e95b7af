"""The agents' consent policies, read from the fleet file (``CLAWMESH_AGENTS``).

The rules are ``meshkit.consent_policy``'s, the orchestrator's too. The file is read again
when its modification time changes, so an edited policy holds from the next proposal on, with
no restart. A file that is not there means everyone asks for everything (the default rule).
A file that cannot be read stops the start (one line naming the key); one broken later keeps
the rules last read, and the log says why, once per change of the file.
"""

from __future__ import annotations

import logging
from pathlib import Path

from meshkit.consent_policy import DEFAULT_RULE, Policies, Rule, agent_policies
from meshkit.yaml_config import ConfigError

logger = logging.getLogger(__name__)

Stamp = tuple[int, int] | None  # (mtime_ns, size), None: no file


class FleetPolicies:
    def __init__(self, path: Path) -> None:
        self._path = path
        self._stamp: Stamp = None
        self._agents: dict[str, Policies] | None = None  # None: no fleet file, anyone asks
        self._stamp = self._stat()
        self._agents = self._read()  # after the stamp: None there means no file

    def rule(self, agent: str, server: str, kind: str) -> Rule:
        """The rule in force for ``agent`` and ``server``'s change ``kind``."""
        self._refresh()
        policies = (self._agents or {}).get(agent)
        return DEFAULT_RULE if policies is None else policies.rule(server, kind)

    def knows(self, agent: str) -> bool:
        """Whether ``agent`` is in the fleet (any agent, when there is no fleet file)."""
        self._refresh()
        return self._agents is None or agent in self._agents

    def _refresh(self) -> None:
        stamp = self._stat()
        if stamp == self._stamp:
            return
        self._stamp = stamp
        try:
            self._agents = self._read()
        except ConfigError as error:
            logger.warning("consent policies: kept the rules read before: %s", error)

    def _read(self) -> dict[str, Policies] | None:
        return None if self._stamp is None else agent_policies(self._path)

    def _stat(self) -> Stamp:
        try:
            found = self._path.stat()
        except FileNotFoundError:
            return None
        return found.st_mtime_ns, found.st_size
