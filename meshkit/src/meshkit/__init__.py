"""meshkit: what every clawmesh MCP server and the orchestrator share.

Import what you use from its module (``meshkit.server.create_server``,
``meshkit.serve.run_server``, ``meshkit.settings``...): a process loads only those, so
the embedded orchestrator, which serves no HTTP, never loads ``meshkit.serve`` or
``meshkit.http`` (uvicorn itself comes with the mcp package, which imports it).
"""
