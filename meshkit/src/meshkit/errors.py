"""Errors written for the model, turned into tool errors once, for every tool of every server.

    ToolError (fastmcp)        its message reaches the client verbatim, with is_error
     └── ModelError            a failure the model can act on
          └── (per server)     WeatherError → UnknownLocation, InvalidRequest, ...

A ``service.py`` raises these without importing the MCP library, and a tool simply
awaits the service: fastmcp answers any ``ToolError`` a tool raises as a tool error with
its message (its documented contract), while every other exception is masked
(``create_server`` sets ``mask_error_details``), so internals never reach a client.
Being the model's business, not the operator's, they are logged at INFO.

:class:`BadFile` is the operator's: a file to import refused whole (``meshkit.command``'s
``read_file`` prints its problems).
"""

from __future__ import annotations

import logging

from fastmcp.exceptions import ToolError


class ModelError(ToolError):
    """A failure the model can act on (unknown place, bad date, try again later)."""

    def __init__(self, *args: object) -> None:
        super().__init__(*args, log_level=logging.INFO)


class BadFile(Exception):
    """The file cannot be imported: one line per problem, each with its line number."""

    def __init__(self, problems: list[str]) -> None:
        super().__init__("\n".join(problems))
        self.problems = problems
