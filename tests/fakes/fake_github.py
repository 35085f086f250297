"""A small fake GitHub REST API on 127.0.0.1 (pull requests only) and an in-memory keyring.

``FakeGitHub(token).start()`` serves ``GET /repos/{o}/{r}/pulls?head=o:branch&state=all``,
``POST /repos/{o}/{r}/pulls`` (422 for a branch with one open already; the head's commit
from ``head_of``) and ``PUT /repos/{o}/{r}/pulls/{n}/merge``; every request needs
``Authorization: Bearer <token>`` (401 otherwise).  Tests add pull requests with
``open_pr`` and read ``requests``.  ``MemoryKeyring`` is a keyring backend to install with
``keyring.set_keyring(MemoryKeyring())``: nothing touches the real keyring.
"""

from __future__ import annotations

import json
import re
import threading
from collections.abc import Callable
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import parse_qs, urlparse

from keyring.backend import KeyringBackend
from keyring.errors import PasswordDeleteError


class MemoryKeyring(KeyringBackend):
    """A keyring that keeps passwords in a dict (tests only)."""

    priority = 1  # type: ignore[assignment]

    def __init__(self) -> None:
        super().__init__()
        self.passwords: dict[tuple[str, str], str] = {}

    def get_password(self, service: str, username: str) -> str | None:
        return self.passwords.get((service, username))

    def set_password(self, service: str, username: str, password: str) -> None:
        self.passwords[(service, username)] = password

    def delete_password(self, service: str, username: str) -> None:
        if (service, username) not in self.passwords:
            raise PasswordDeleteError(username)
        del self.passwords[(service, username)]


_PULLS = re.compile(r"^/repos/([^/]+)/([^/]+)/pulls$")
_MERGE = re.compile(r"^/repos/([^/]+)/([^/]+)/pulls/(\d+)/merge$")


class FakeGitHub:
    """The fake server: pull requests per ``owner/repo``."""

    def __init__(self, token: str = "ghp_test") -> None:
        self.token = token
        self.pulls: dict[str, list[dict[str, Any]]] = {}
        self.requests: list[tuple[str, str]] = []
        self.lock = threading.Lock()
        self._server: ThreadingHTTPServer | None = None
        self._thread: threading.Thread | None = None
        #: The commit a pushed branch is at (GitHub reads it from the pushed repository).
        self.head_of: Callable[[str], str] = lambda _branch: ""

    @property
    def url(self) -> str:
        assert self._server is not None
        host, port = self._server.server_address[:2]
        return f"http://{host!s}:{port}"

    def open_pr(
        self, owner: str, repo: str, branch: str, head: str, **fields: str
    ) -> dict[str, Any]:
        """Open a pull request of ``branch`` at commit ``head`` (``fields``: its title, base,
        body as a client sent them); the pull request as GitHub answers it."""
        with self.lock:
            items = self.pulls.setdefault(f"{owner}/{repo}", [])
            number = len(items) + 1
            items.append(
                {
                    "number": number,
                    "state": "open",
                    "merged_at": None,
                    "html_url": f"https://github.com/{owner}/{repo}/pull/{number}",
                    "head": {"ref": branch, "sha": head, "label": f"{owner}:{branch}"},
                    **fields,
                }
            )
            return items[-1]

    def start(self) -> FakeGitHub:
        fake = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *_args: Any) -> None:
                pass

            def _send(self, code: int, body: Any) -> None:
                data = json.dumps(body).encode()
                self.send_response(code)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def _authorized(self) -> bool:
                auth = self.headers.get("Authorization", "")
                if auth in (f"Bearer {fake.token}", f"token {fake.token}"):
                    return True
                self._send(401, {"message": "Bad credentials"})
                return False

            def do_GET(self) -> None:
                url = urlparse(self.path)
                fake.requests.append(("GET", url.path))
                if not self._authorized():
                    return
                if url.path == "/user":  # who the token is (Settings' Test button)
                    self._send(200, {"login": "volee-tester"})
                    return
                match = _PULLS.match(url.path)
                if not match:
                    self._send(404, {"message": "Not Found"})
                    return
                query = parse_qs(url.query)
                head = query.get("head", [""])[0]
                state = query.get("state", ["open"])[0]
                with fake.lock:
                    items = list(fake.pulls.get(f"{match[1]}/{match[2]}", []))
                branch = head.split(":", 1)[1] if ":" in head else head
                out = [
                    p
                    for p in items
                    if (not branch or p["head"]["ref"] == branch)
                    and (state == "all" or p["state"] == state)
                ]
                self._send(200, out)

            def do_POST(self) -> None:
                url = urlparse(self.path)
                fake.requests.append(("POST", url.path))
                if not self._authorized():
                    return
                match = _PULLS.match(url.path)
                body = json.loads(self.rfile.read(int(self.headers.get("Content-Length", 0))))
                if not match:
                    self._send(404, {"message": "Not Found"})
                    return
                head = fake.head_of(body["head"])
                with fake.lock:
                    taken = any(
                        p["head"]["ref"] == body["head"] and p["state"] == "open"
                        for p in fake.pulls.get(f"{match[1]}/{match[2]}", [])
                    )
                if taken:  # GitHub's answer to a second pull request of one branch
                    said = f"A pull request already exists for {body['head']}."
                    self._send(422, {"message": "Validation Failed", "errors": [{"message": said}]})
                    return
                fields = {k: body[k] for k in ("title", "base", "body") if k in body}
                self._send(201, fake.open_pr(match[1], match[2], body["head"], head, **fields))

            def do_PUT(self) -> None:
                url = urlparse(self.path)
                fake.requests.append(("PUT", url.path))
                if not self._authorized():
                    return
                match = _MERGE.match(url.path)
                length = int(self.headers.get("Content-Length", 0))
                body = json.loads(self.rfile.read(length) or b"{}")
                if not match:
                    self._send(404, {"message": "Not Found"})
                    return
                with fake.lock:
                    items = fake.pulls.get(f"{match[1]}/{match[2]}", [])
                    pr = next((p for p in items if p["number"] == int(match[3])), None)
                    if pr is None:
                        self._send(404, {"message": "Not Found"})
                        return
                    if body.get("sha") and body["sha"] != pr["head"]["sha"]:
                        self._send(409, {"message": "Head branch was modified"})
                        return
                    pr["state"] = "closed"
                    pr["merged_at"] = "2025-01-01T00:00:00Z"
                self._send(200, {"merged": True, "sha": pr["head"]["sha"]})

        self._server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)
        self._thread.start()
        return self

    def close(self) -> None:
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()
            self._server = None
