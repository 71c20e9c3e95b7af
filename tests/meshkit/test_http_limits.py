"""Slow or many clients cannot hold a served server: real sockets on 127.0.0.1 against
``python -m mcp_weather`` (served as every server is), each loop bounded by a deadline."""

from __future__ import annotations

import select
import socket
import time
from collections.abc import Iterator
from pathlib import Path

import httpx2
import pytest

from fakes.serving import ServerProcess

TOKEN = "limits-test-token-0123456789"
# Open-Meteo's URLs pointed at a closed port: these servers never reach the network.
NO_FORECAST = "http://127.0.0.1:9/v1/forecast"
NO_GEOCODING = "http://127.0.0.1:9/v1/search"
HEADER_TIMEOUT_S = 1
DEADLINE_S = 15  # far beyond every limit under test: reaching it means "held for ever"


@pytest.fixture(scope="module")
def quick(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ServerProcess]:
    """Short head and body deadlines."""
    server = ServerProcess(
        "mcp_weather",
        tmp_path_factory.mktemp("quick"),
        TOKEN,
        MESH_HEADER_TIMEOUT_S=str(HEADER_TIMEOUT_S),
        MESH_BODY_TIMEOUT_S="1",
        WEATHER_FORECAST_URL=NO_FORECAST,
        WEATHER_GEOCODING_URL=NO_GEOCODING,
    )
    server.ready()
    yield server
    server.stop()


@pytest.fixture(scope="module")
def capped(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ServerProcess]:
    """Few connections, and a head deadline long enough not to be what closes them."""
    server = ServerProcess(
        "mcp_weather",
        tmp_path_factory.mktemp("capped"),
        TOKEN,
        MESH_MAX_CONNECTIONS="8",
        MESH_HEADER_TIMEOUT_S="120",
        WEATHER_FORECAST_URL=NO_FORECAST,
        WEATHER_GEOCODING_URL=NO_GEOCODING,
    )
    server.ready()
    yield server
    server.stop()


def connect(server: ServerProcess) -> socket.socket:
    return socket.create_connection(("127.0.0.1", server.port), timeout=DEADLINE_S)


def read_until_closed(sock: socket.socket, deadline_s: float = DEADLINE_S) -> bytes:
    """Everything the server sends until it closes the connection (TimeoutError if it
    keeps it open past the deadline)."""
    sock.settimeout(deadline_s)
    received = b""
    while chunk := sock.recv(4096):
        received += chunk
    return received


def test_a_connection_that_never_sends_a_byte_is_closed(quick: ServerProcess) -> None:
    with connect(quick) as sock:
        started = time.monotonic()
        assert read_until_closed(sock) == b""
        print(f"idle connection closed after {time.monotonic() - started:.2f} s")


def test_a_client_sending_its_headers_a_byte_at_a_time_gets_408_and_is_cut_off(
    quick: ServerProcess,
) -> None:
    with connect(quick) as sock:
        sock.sendall(b"POST /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Slow: ")
        sock.settimeout(0.1)  # the pace of the drip, not a guess at the server's timing
        received = b""
        deadline = time.monotonic() + DEADLINE_S
        while time.monotonic() < deadline:
            try:
                chunk = sock.recv(4096)
            except TimeoutError:
                try:
                    sock.send(b"a")
                except (BrokenPipeError, ConnectionResetError):
                    break
                continue
            if not chunk:
                break
            received += chunk
        else:
            pytest.fail("the server still held the connection of a client dripping its headers")
    assert received.startswith(b"HTTP/1.1 408 Request Timeout")


def test_a_request_whose_body_never_comes_gets_408_and_is_closed(quick: ServerProcess) -> None:
    with connect(quick) as sock:
        sock.sendall(
            b"POST /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\n"
            + f"Authorization: Bearer {TOKEN}\r\n".encode()
            + b"Content-Type: application/json\r\nAccept: application/json, text/event-stream\r\n"
            b"Content-Length: 200\r\n\r\n{"
        )
        received = read_until_closed(sock)
    assert received.startswith(b"HTTP/1.1 408 ")
    assert b"request body not received within 1 s" in received


def test_a_strangers_post_with_a_body_that_never_comes_holds_no_request(
    quick: ServerProcess,
) -> None:
    with connect(quick) as sock:
        sock.sendall(b"POST /health HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Length: 500\r\n\r\n")
        received = read_until_closed(sock)
    assert received.startswith(b"HTTP/1.1 405 ")  # at once, not after waiting for the body


def test_a_request_head_over_64_kib_gets_431(quick: ServerProcess) -> None:
    with connect(quick) as sock:
        sock.sendall(b"GET /health HTTP/1.1\r\nHost: 127.0.0.1\r\n")
        for n in range(80):  # 80 headers of 1 KiB, never the blank line that ends the head
            sock.sendall(f"X-Pad-{n}: {'p' * 1000}\r\n".encode())
        received = read_until_closed(sock)
    assert received.startswith(b"HTTP/1.1 431 ")


def test_keep_alive_requests_still_work_within_the_limits(quick: ServerProcess) -> None:
    with httpx2.Client(base_url=quick.url, timeout=5) as http:
        for _ in range(3):
            assert http.get("/health").status_code == 200


def test_idle_connections_beyond_the_limit_give_way_to_a_real_client(
    capped: ServerProcess, tmp_path: Path
) -> None:
    idle = [connect(capped) for _ in range(40)]
    try:
        response = httpx2.get(f"{capped.url}/health", timeout=5)
        assert response.status_code == 200
        closed = _closed_by_server(idle, wanted=40 - 8)
    finally:
        for sock in idle:
            sock.close()
    # The server keeps at most 8 open: of the 40 idle ones, the oldest 33 (one more for
    # the real client) were closed, the newest stay.
    assert len(closed) >= 40 - 8
    assert idle[-1] not in closed


def _closed_by_server(socks: list[socket.socket], *, wanted: int) -> set[socket.socket]:
    closed: set[socket.socket] = set()
    deadline = time.monotonic() + DEADLINE_S
    while len(closed) < wanted and time.monotonic() < deadline:
        readable, _, _ = select.select([s for s in socks if s not in closed], [], [], 0.5)
        for sock in readable:
            sock.settimeout(1)
            if sock.recv(4096) == b"":
                closed.add(sock)
    return closed


def test_when_every_connection_is_serving_a_request_a_new_one_gets_503(
    capped: ServerProcess,
) -> None:
    # A request whose body is still coming is being served: 8 of them fill the server.
    # "Expect: 100-continue" makes it observable: the server says "100 Continue" once
    # the request is being served and its body is awaited.
    busy = [connect(capped) for _ in range(8)]
    try:
        for sock in busy:
            sock.sendall(
                b"POST /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\n"
                + f"Authorization: Bearer {TOKEN}\r\n".encode()
                + b"Content-Type: application/json\r\nContent-Length: 100\r\n"
                b"Expect: 100-continue\r\n\r\n"
            )
            assert sock.recv(4096).startswith(b"HTTP/1.1 100 Continue")
        with connect(capped) as extra:
            assert read_until_closed(extra).startswith(b"HTTP/1.1 503 ")
    finally:
        for sock in busy:
            sock.close()
    assert _eventually_healthy(capped)


def _eventually_healthy(server: ServerProcess) -> bool:
    """The server serves again once the busy clients are gone (they close asynchronously)."""
    deadline = time.monotonic() + DEADLINE_S
    while time.monotonic() < deadline:
        try:
            if httpx2.get(f"{server.url}/health", timeout=5).status_code == 200:
                return True
        except httpx2.TransportError:
            pass
    return False


@pytest.mark.parametrize("pieces", [1, 2, 70], ids=["whole", "in-two", "kib-by-kib"])
def test_a_request_head_over_64_kib_gets_431_however_it_is_cut(
    quick: ServerProcess, pieces: int
) -> None:
    padding = b"".join(f"X-Pad-{n}: {'p' * 1000}\r\n".encode() for n in range(70))
    head = b"GET /health HTTP/1.1\r\nHost: 127.0.0.1\r\n" + padding + b"\r\n"
    size = -(-len(head) // pieces)
    with connect(quick) as sock:
        for start in range(0, len(head), size):
            sock.sendall(head[start : start + size])
        received = read_until_closed(sock)
    assert received.startswith(b"HTTP/1.1 431 ")


def test_a_request_head_just_under_64_kib_is_served(quick: ServerProcess) -> None:
    padding = b"".join(f"X-Pad-{n}: {'p' * 1000}\r\n".encode() for n in range(60))
    head = b"GET /health HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n" + padding + b"\r\n"
    with connect(quick) as sock:
        sock.sendall(head[:30_000])
        sock.sendall(head[30_000:])
        received = read_until_closed(sock)
    assert received.startswith(b"HTTP/1.1 200 ")
