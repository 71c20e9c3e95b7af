"""A container's HEALTHCHECK: ``GET /health`` on its own port, exit 0 on 200, 1 otherwise.

Docker runs it every few seconds in every container, inside the container's CPU quota, so it
is a script of the standard library alone that the image runs without site-packages:

    python -I -S /app/healthcheck.py            (the image's copy of this file)
    python -m meshkit.healthcheck               (the same, by hand in a venv)

Started that way it costs about 17 ms of CPU and a few MiB; importing the settings through
pydantic, as a module of meshkit normally would, cost 300 ms of CPU at each probe (0.6 s
with ``cpus: 0.5``) and 20-25 MiB, in each container every interval. Hence it reads its one
setting, ``MCP_PORT`` (the image sets it), from the environment itself, and speaks HTTP/1.1
over a plain socket. It prints one line (Docker keeps it in ``docker inspect``'s health
log): the status, with the start of the body when it is not 200 (what failed).
"""

from __future__ import annotations

import os
import socket

TIMEOUT_S = 4.0
READ_LIMIT = 64 * 1024  # a /health answer is a few hundred bytes
SHOWN = 500  # bytes of a failing answer's body in the line


def _exchange(port: int, timeout_s: float) -> bytes:
    """The whole answer to ``GET /health`` (the server closes: Connection: close)."""
    request = (
        f"GET /health HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nAccept: application/json\r\n"
        "Connection: close\r\n\r\n"
    )
    answer = b""
    with socket.create_connection(("127.0.0.1", port), timeout=timeout_s) as connection:
        connection.sendall(request.encode("ascii"))
        while len(answer) < READ_LIMIT and (chunk := connection.recv(4096)):
            answer += chunk
    return answer


def probe(port: int, timeout_s: float = TIMEOUT_S) -> tuple[bool, str]:
    """Whether /health on this host's ``port`` answers 200, and a line saying what it got."""
    url = f"http://127.0.0.1:{port}/health"
    try:
        answer = _exchange(port, timeout_s)
    except OSError as error:  # refused, reset, timed out (TimeoutError is an OSError)
        return False, f"{url}: {type(error).__name__}: {error}"
    head, _, body = answer.partition(b"\r\n\r\n")
    status = head.split(b"\r\n", 1)[0].split(b" ", 2)
    if len(status) < 2 or not status[0].startswith(b"HTTP/") or not status[1].isdigit():
        return False, f"{url}: not an HTTP answer: {head[:100]!r}"
    code = int(status[1])
    if code == 200:
        return True, f"{url}: 200"
    return False, f"{url}: {code} {body[:SHOWN].decode(errors='replace')}"


def main() -> None:
    port = os.environ.get("MCP_PORT", "")
    if not port.isdigit():
        print("MCP_PORT is not set: the image sets it; export MCP_PORT=<port> to probe by hand")
        raise SystemExit(1)
    healthy, line = probe(int(port))
    print(line)
    raise SystemExit(0 if healthy else 1)


if __name__ == "__main__":
    main()
