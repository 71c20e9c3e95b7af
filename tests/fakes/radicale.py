"""A real CalDAV server for the tests: Radicale (a dev dependency) as its own process.

``python -m radicale`` with a config of our own: htpasswd auth with plain passwords (the
user, and an admin who makes the calendars the user may only read), filesystem storage in a
temporary directory, rights from a file (the user's own calendars; read-only ones named
``readonly-…``), a free loopback port. :func:`radicale` starts it, waits until the port
accepts a connection (with a deadline, watching that the process is still alive), and
stops it afterwards. It logs each request (level info), so a test can count what a client
asked. A calendar is a collection made with MKCALENDAR (:meth:`Radicale.make_calendar`);
another client's edits go straight to the server over HTTP (:meth:`Radicale.put`), as a
phone would make them.
"""

from __future__ import annotations

import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import httpx2

from fakes.serving import free_port

USER = "ada"
PASSWORD = "correct horse battery staple"
ADMIN = "admin"  # writes the calendars the user may only read (a shared, read-only one)
ADMIN_PASSWORD = "admin password"
READ_ONLY = "readonly-"  # the user's calendars whose id starts so are read-only for them
# First matching section wins (Radicale's rights "from_file"): R/W are principals, r/w
# calendars.
RIGHTS = f"""
[admin]
user: {ADMIN}
collection: .*
permissions: RrWw

[root]
user: .+
collection:
permissions: R

[principal]
user: .+
collection: {{user}}
permissions: RW

[read-only]
user: .+
collection: {{user}}/{READ_ONLY}[^/]+
permissions: r

[calendars]
user: .+
collection: {{user}}/[^/]+
permissions: rw
"""
START_DEADLINE_S = 30.0

_MKCALENDAR = """<?xml version="1.0" encoding="utf-8"?>
<C:mkcalendar xmlns:D="DAV:" xmlns:C="urn:ietf:params:xml:ns:caldav">
  <D:set><D:prop>
    <D:displayname>{name}</D:displayname>
    <C:supported-calendar-component-set>
      <C:comp name="{component}"/>
    </C:supported-calendar-component-set>
  </D:prop></D:set>
</C:mkcalendar>
"""


@dataclass(frozen=True)
class Radicale:
    url: str  # http://127.0.0.1:PORT/
    user: str
    password: str
    log: Path

    def _http(self, admin: bool = False) -> httpx2.Client:
        auth = (ADMIN, ADMIN_PASSWORD) if admin else (self.user, self.password)
        return httpx2.Client(base_url=self.url, auth=auth, timeout=10)

    def make_calendar(self, calendar_id: str, name: str, component: str = "VEVENT") -> str:
        """A new calendar collection (of events, or of ``component``s: VTODO for a task
        list) in the user's home; its URL. An id starting with ``readonly-`` is a calendar
        the user may read only (made by the admin)."""
        path = f"/{self.user}/{calendar_id}/"
        body = _MKCALENDAR.format(name=name, component=component)
        with self._http(admin=calendar_id.startswith(READ_ONLY)) as http:
            answer = http.request("MKCALENDAR", path, content=body)
        answer.raise_for_status()
        return f"{self.url.rstrip('/')}{path}"

    def put(self, calendar_id: str, name: str, ics: str, if_match: str | None = None) -> str:
        """Store ``ics`` as ``name`` in the calendar (another client's write); its new ETag."""
        headers = {"Content-Type": "text/calendar; charset=utf-8"}
        if if_match is not None:
            headers["If-Match"] = if_match
        with self._http(admin=calendar_id.startswith(READ_ONLY)) as http:
            answer = http.put(f"/{self.user}/{calendar_id}/{name}", content=ics, headers=headers)
        answer.raise_for_status()
        return answer.headers["ETag"]

    def delete(self, calendar_id: str, name: str) -> None:
        """Delete the object (another client's delete)."""
        with self._http() as http:
            answer = http.delete(f"/{self.user}/{calendar_id}/{name}")
        answer.raise_for_status()

    def get(self, calendar_id: str, name: str) -> tuple[str, str]:
        """The object's text and ETag as the server holds them."""
        with self._http() as http:
            answer = http.get(f"/{self.user}/{calendar_id}/{name}")
        answer.raise_for_status()
        return answer.text, answer.headers["ETag"]

    def reports(self, calendar_id: str) -> int:
        """REPORT requests (queries) the calendar has answered, as Radicale's log says."""
        wanted = f"REPORT request for '/{self.user}/{calendar_id}/'"
        return self.log.read_text().count(wanted)

    def answers(self, method: str, calendar_id: str, name: str) -> list[str]:
        """The statuses of the ``method`` requests for that object, oldest first (its log)."""
        wanted = f"{method} response status for '/{self.user}/{calendar_id}/{name}'"
        lines = self.log.read_text().splitlines()
        return [line.rsplit(": ", 1)[-1] for line in lines if wanted in line]

    def names(self, calendar_id: str) -> list[str]:
        """The object names (``x.ics``) in the calendar, as the server's storage holds them."""
        body = (
            '<?xml version="1.0"?>'
            '<D:propfind xmlns:D="DAV:"><D:prop><D:getetag/></D:prop></D:propfind>'
        )
        with self._http() as http:
            answer = http.request(
                "PROPFIND", f"/{self.user}/{calendar_id}/", content=body, headers={"Depth": "1"}
            )
        answer.raise_for_status()
        prefix = f"<href>/{self.user}/{calendar_id}/"
        text = answer.text.replace("<D:href>", "<href>").replace("</D:href>", "</href>")
        return sorted(
            part.split("</href>")[0] for part in text.split(prefix)[1:] if part.split("</href>")[0]
        )


def _config(root: Path, port: int) -> Path:
    users = root / "users"
    users.write_text(f"{USER}:{PASSWORD}\n{ADMIN}:{ADMIN_PASSWORD}\n")
    rights = root / "rights"
    rights.write_text(RIGHTS)
    (root / "collections").mkdir()
    config = root / "config"
    config.write_text(
        "[server]\n"
        f"hosts = 127.0.0.1:{port}\n"
        "[auth]\n"
        "type = htpasswd\n"
        f"htpasswd_filename = {users}\n"
        "htpasswd_encryption = plain\n"
        "[rights]\n"
        "type = from_file\n"
        f"file = {rights}\n"
        "[storage]\n"
        "type = multifilesystem\n"
        f"filesystem_folder = {root / 'collections'}\n"
        "[logging]\n"
        "level = info\n"
    )
    return config


def _wait_for_port(process: subprocess.Popen[bytes], port: int, log: Path) -> None:
    deadline = time.monotonic() + START_DEADLINE_S
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise RuntimeError(f"radicale exited: {log.read_text()[-2000:]}")
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=0.5):
                return
        except OSError:
            time.sleep(0.05)
    raise TimeoutError(f"radicale did not listen on {port}: {log.read_text()[-2000:]}")


@contextmanager
def radicale(root: Path) -> Iterator[Radicale]:
    """Radicale serving from ``root`` (a fresh directory) until the block ends."""
    root.mkdir(parents=True, exist_ok=True)
    port = free_port()
    log = root / "radicale.log"
    with log.open("wb") as sink:
        process = subprocess.Popen(
            [sys.executable, "-m", "radicale", "--config", str(_config(root, port))],
            stdout=sink,
            stderr=subprocess.STDOUT,
        )
        try:
            _wait_for_port(process, port, log)
            yield Radicale(f"http://127.0.0.1:{port}/", USER, PASSWORD, log)
        finally:
            process.terminate()
            try:
                process.wait(timeout=10)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait()
