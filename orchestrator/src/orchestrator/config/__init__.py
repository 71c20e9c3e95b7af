"""The orchestrator's configuration files: the registry (config/mcp_servers.yaml), the fleet
(config/agents.yaml: agents, consent, allowances) and its prices.

``${VAR}`` is substituted as in Compose (see ``meshkit.yaml_config``). Every error
names the file, the key and the fix, and stops the process with exit code 2.
"""

from meshkit.yaml_config import ConfigError
from orchestrator.config.fleet import (
    Agent,
    AgentEntry,
    AllowanceEntry,
    Amount,
    Persona,
    Unit,
    load_fleet,
)
from orchestrator.config.prices import ModelPrice, Prices, load_prices
from orchestrator.config.registry import (
    Role,
    ServerEntry,
    check_server_name,
    load_registry,
    mesh_credentials,
    qualified_name,
)

__all__ = [
    "Agent",
    "AgentEntry",
    "AllowanceEntry",
    "Amount",
    "ConfigError",
    "ModelPrice",
    "Persona",
    "Prices",
    "Role",
    "ServerEntry",
    "Unit",
    "check_server_name",
    "load_fleet",
    "load_prices",
    "load_registry",
    "mesh_credentials",
    "qualified_name",
]
