"""The orchestrator's configuration files: the registry (config/mcp_servers.yaml), the fleet
(config/agents.yaml: agents, consent, allowances) and its prices.

``${VAR}`` is substituted as in Compose (see ``meshkit.yaml_config``). Every error
names the file, the key and the fix, and stops the process with exit code 2.
Import from the module that holds a name: ``config.registry``, ``config.fleet``,
``config.prices`` (``ConfigError`` is ``meshkit.yaml_config``'s).
"""
