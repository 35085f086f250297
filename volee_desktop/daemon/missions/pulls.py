"""Open a pull request of an agent's branch: push it to its remote, then ask the forge.

The same forge code the missions read and merge pull requests with (daemon/forge.py: GitHub's
API with the keyring's token), so a token that works for a mission works here.  Each refusal
says why before anything leaves the machine: no branch, nothing ahead of the base, no remote,
a remote that is not GitHub, no token.  A branch with an open pull request already is pushed
(the pull request follows it) and that one is named, not a second one opened.  ``dry_run``
checks all that and says what would happen (the token is read, nothing pushed).  Blocks (git,
the keyring, HTTP): the daemon calls it in a thread.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import NotRequired, TypedDict

from ...core.model import PullState
from .. import git
from ..errors import Refused
from ..forge import Forge, ForgeError, github_slug


class PullTarget(TypedDict):
    """Where the branch goes: the branch, its base, the remote and the GitHub repository."""

    branch: str
    base: str
    remote: str
    repository: str


class Pull(PullTarget):
    """What was done (or, for a dry run, would be): ``opened`` a new one, said in ``text``."""

    opened: bool
    text: str
    number: NotRequired[int]
    url: NotRequired[str]


def open_pull_request(
    repo: str,
    branch: str | None,
    base: str | None,
    forge_of: Callable[[], Forge],
    *,
    title: str,
    body: str,
    dry_run: bool,
) -> Pull:
    """Push the agent's ``branch`` of ``repo`` and open its pull request into ``base`` (None:
    unknown; see the module)."""
    if not branch:
        raise Refused("its folder has no branch checked out (a detached HEAD): no pull request")
    if not base or base == branch:
        raise Refused(f"the agent works on {branch} itself: there is no branch to propose")
    tip = git.rev(repo, f"refs/heads/{branch}")
    old = git.rev(repo, f"refs/heads/{base}") or git.rev(repo, base)
    if tip is None or old is None:
        raise Refused(f"branch {base if old is None else branch} does not exist in {repo}")
    ahead = int(git._out(repo, "rev-list", "--count", f"{old}..{tip}") or 0)
    if ahead == 0:
        raise Refused(f"nothing to propose: {branch} has no commit that {base} lacks")
    remote = git.remote_of(repo, branch)
    if remote is None:
        raise Refused(
            f"{repo} has no remote to push {branch} to: a pull request needs one "
            "(`git remote add origin URL`), or merge it here"
        )
    url = git.remote_url(repo, remote)
    slug = github_slug(url)
    if slug is None:
        raise Refused(
            f"remote {remote} ({url}) is not on GitHub: volee opens pull requests on GitHub only; "
            f"push {branch} and open it on your forge"
        )
    forge = forge_of()
    if not forge.token:
        note = forge.token_note
        more = "" if "docs/missions.md" in note else ": see docs/missions.md"
        raise Refused(f"no GitHub token ({note}){more}")
    on = f"{slug[0]}/{slug[1]}"
    known, existing = forge.pull_request(url, branch)
    if known and existing is not None and existing.state != PullState.OPEN:
        existing = None  # a closed or merged one: a new one is opened
    n = f"{ahead} commit{'s' if ahead != 1 else ''}"
    result: PullTarget = {"branch": branch, "base": base, "remote": remote, "repository": on}
    if dry_run:
        what = (
            f"updates pull request #{existing.number}"
            if existing
            else f"opens a pull request into {base} on {on}"
        )
        text = f"pushes {branch} ({n}) to {remote} and {what}"
        return Pull(branch=branch, base=base, remote=remote, repository=on, opened=False, text=text)
    failed = git.push(repo, branch)
    if failed:
        raise Refused(f"pushing {branch} to {remote} failed: {failed}")
    pr, verb = existing, "its pull request is open already:"
    if pr is None:
        try:
            pr, verb = forge.open(url, branch, base, title, body), "opened pull request"
        except ForgeError as exc:
            raise Refused(
                f"pushed {branch} to {remote}, but no pull request was opened: {exc}"
            ) from exc
    return Pull(
        **result,
        opened=existing is None,
        number=pr.number,
        url=pr.url,
        text=f"pushed {branch} ({n}) to {remote}; {verb} #{pr.number} into {base}: {pr.url}",
    )


__all__ = ["open_pull_request"]
