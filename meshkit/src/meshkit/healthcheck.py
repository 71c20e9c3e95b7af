"""``python -m meshkit.healthcheck``: a container's HEALTHCHECK, with no curl in the image.

GETs ``http://127.0.0.1:$MCP_PORT/health`` and exits 0 on 200, 1 otherwise, printing one
line (Docker keeps it in ``docker inspect``'s health log). Standard library only: it runs
every few seconds in every container, so it starts in milliseconds.
"""

from __future__ import annotations

import sys
import urllib.error
import urllib.request
from collections.abc import Sequence

from meshkit.settings import ServeSettings, load_settings

TIMEOUT_S = 4.0


def probe(port: int, timeout_s: float = TIMEOUT_S) -> tuple[bool, str]:
    """Whether /health on this host's ``port`` answers 200, and a line saying what it got."""
    url = f"http://127.0.0.1:{port}/health"
    try:
        with urllib.request.urlopen(url, timeout=timeout_s) as answer:
            return answer.status == 200, f"{url}: {answer.status}"
    except urllib.error.HTTPError as error:
        return False, f"{url}: {error.code} {error.read(500).decode(errors='replace')}"
    except (OSError, TimeoutError) as error:
        return False, f"{url}: {type(error).__name__}: {error}"


def main(argv: Sequence[str] | None = None) -> None:
    del argv
    settings = load_settings(ServeSettings)
    if settings.port is None:
        print("MCP_PORT is not set: the image sets it; export MCP_PORT=<port> to probe by hand")
        raise SystemExit(1)
    healthy, line = probe(settings.port)
    print(line)
    raise SystemExit(0 if healthy else 1)


if __name__ == "__main__":
    main(sys.argv[1:])
