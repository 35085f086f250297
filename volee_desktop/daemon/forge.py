"""Pull requests from GitHub's REST API, with the token kept in the OS keyring.

The token is stored with ``keyring`` under service ``volee``, user ``github``.
Without a token (or for a remote that is not GitHub) the pull request is
unknown, never "none": ``Forge.pull_request`` returns ``(False, None)``.
``VOLEE_GITHUB_API`` points the client at another API root (tests use a fake
server on 127.0.0.1).  Calls block; the daemon runs them in a thread.
"""

from __future__ import annotations

import json
import logging
import os
import re
from dataclasses import dataclass
from typing import Any

from ..core.model import PullRequest, PullState
from .errors import Error

log = logging.getLogger(__name__)

KEYRING_SERVICE = "volee"
KEYRING_USER = "github"
DEFAULT_API = "https://api.github.com"
TIMEOUT = 15.0

_SLUG = re.compile(
    r"^(?:https?://(?:[^@/]+@)?github\.com/|git@github\.com:|ssh://git@github\.com/)"
    r"(?P<owner>[\w.-]+)/(?P<repo>[\w.-]+?)(?:\.git)?/?$"
)


class ForgeError(Error):
    """The forge could not be asked or refused a request; the message says what and why."""


def github_slug(url: str | None) -> tuple[str, str] | None:
    """``(owner, repo)`` of a GitHub remote URL, or None for any other remote."""
    if not url:
        return None
    match = _SLUG.match(url.strip())
    return (match["owner"], match["repo"]) if match else None


def read_token() -> tuple[str | None, str]:
    """The GitHub token from the OS keyring, and a note saying where it came from or why not."""
    try:
        import keyring
        from keyring.errors import KeyringError
    except ImportError:
        return None, "the keyring package is not installed"
    try:
        token = keyring.get_password(KEYRING_SERVICE, KEYRING_USER)
    except KeyringError as exc:
        log.info("keyring unavailable for the GitHub token: %s", exc)
        return None, f"keyring unavailable ({exc}); see docs/missions.md"
    if not token:
        return (
            None,
            f"none in the keyring (store one: keyring set {KEYRING_SERVICE} {KEYRING_USER})",
        )
    return token, "found in the keyring"


@dataclass
class Forge:
    """A small GitHub client: find a branch's pull request, open one, merge one."""

    api: str = ""
    token: str | None = None
    token_note: str = ""  # where the token came from, or why there is none

    @classmethod
    def from_environment(cls) -> Forge:
        """The API root from VOLEE_GITHUB_API (else github.com) and the keyring's token."""
        token, note = read_token()
        return cls(
            api=os.environ.get("VOLEE_GITHUB_API") or DEFAULT_API, token=token, token_note=note
        )

    def _request(self, method: str, path: str, body: dict[str, Any] | None = None) -> Any:
        # urllib.request (with http.client and email) loads with the first call, not with the
        # daemon: about 10 ms of its start (issue 27).
        import urllib.error
        import urllib.request

        assert self.token is not None
        data = json.dumps(body).encode() if body is not None else None
        request = urllib.request.Request(
            self.api.rstrip("/") + path,
            data=data,
            method=method,
            headers={
                "Authorization": f"Bearer {self.token}",
                "Accept": "application/vnd.github+json",
                "X-GitHub-Api-Version": "2022-11-28",
                "User-Agent": "volee-desktop",
                **({"Content-Type": "application/json"} if data else {}),
            },
        )
        try:
            with urllib.request.urlopen(request, timeout=TIMEOUT) as response:
                return json.loads(response.read() or b"null")
        except urllib.error.HTTPError as exc:
            detail = exc.read().decode(errors="replace")[:300]
            raise ForgeError(f"GitHub {method} {path} answered {exc.code}: {detail}") from exc
        except (urllib.error.URLError, OSError, ValueError) as exc:
            raise ForgeError(f"GitHub {method} {path} failed: {exc}") from exc

    def pull_request(
        self, remote: str | None, branch: str | None
    ) -> tuple[bool, PullRequest | None]:
        """``(known, pull_request)``: the newest pull request whose head is ``branch``."""
        slug = github_slug(remote)
        if slug is None or not branch or not self.token:
            return False, None
        owner, repo = slug
        import urllib.parse

        query = urllib.parse.urlencode(
            {"head": f"{owner}:{branch}", "state": "all", "per_page": "20"}
        )
        try:
            items = self._request("GET", f"/repos/{owner}/{repo}/pulls?{query}")
        except ForgeError as exc:
            log.info("pull request of %s unknown: %s", branch, exc)
            return False, None
        if not isinstance(items, list):
            return False, None
        found = [p for p in items if isinstance(p, dict) and p.get("head", {}).get("ref") == branch]
        if not found:
            return True, None
        newest = max(found, key=lambda p: int(p.get("number", 0)))
        return True, to_pull_request(newest)

    def open(
        self, remote: str | None, branch: str, base: str, title: str, body: str
    ) -> PullRequest:
        """Open a pull request of ``branch`` (already pushed) into ``base``."""
        slug = github_slug(remote)
        if slug is None or not self.token:
            raise ForgeError("no GitHub remote or no token: a pull request cannot be opened")
        owner, repo = slug
        item = self._request(
            "POST",
            f"/repos/{owner}/{repo}/pulls",
            {"title": title, "head": branch, "base": base, "body": body},
        )
        if not isinstance(item, dict) or "number" not in item:
            raise ForgeError(f"GitHub answered no pull request for {branch}: {item!r:.200}")
        return to_pull_request(item)

    def merge(self, remote: str | None, number: int, head: str, message: str) -> None:
        """Merge a pull request, only if its head is still ``head``."""
        slug = github_slug(remote)
        if slug is None or not self.token:
            raise ForgeError("no GitHub remote or no token: the pull request cannot be merged")
        owner, repo = slug
        self._request(
            "PUT",
            f"/repos/{owner}/{repo}/pulls/{number}/merge",
            {"sha": head, "merge_method": "merge", "commit_title": message},
        )


def to_pull_request(item: dict[str, Any]) -> PullRequest:
    """A GitHub pull-request object as volee's PullRequest (merged is a state of its own)."""
    if item.get("merged_at"):
        state = PullState.MERGED
    else:
        state = PullState.CLOSED if item.get("state") == PullState.CLOSED else PullState.OPEN
    return PullRequest(
        number=int(item["number"]),
        state=state,
        head=str(item.get("head", {}).get("sha") or ""),
        url=str(item.get("html_url") or ""),
    )
