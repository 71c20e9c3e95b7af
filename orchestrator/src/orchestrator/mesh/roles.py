"""A client of the server that plays a role, for callers that go on without an answer."""

from __future__ import annotations

import logging
from typing import Any, TypeVar

from pydantic import BaseModel

from orchestrator.config.registry import Role
from orchestrator.mesh.errors import ToolCallError
from orchestrator.mesh.registry import Registry

logger = logging.getLogger(__name__)
M = TypeVar("M", bound=BaseModel)


class RoleClient:
    """Calls the tools of the registry's ``role`` server; no answer is None, and logged."""

    def __init__(self, registry: Registry, role: Role) -> None:
        self._registry = registry
        self._role = role
        self.server = registry.server_for(role)

    async def call(self, tool: str, arguments: dict[str, Any], model: type[M]) -> M | None:
        if self.server is None:
            logger.warning("no server with role %r: %s is unavailable", self._role, tool)
            return None
        try:
            return await self._registry.call_as(self.server, tool, arguments, model)
        except ToolCallError as error:
            logger.warning("%s: %s", self._role, error)
            return None
