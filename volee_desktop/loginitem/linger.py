"""A server keeps its agents without a desktop: ``volee daemon install --linger`` (issue 24).

Without linger, systemd stops a person's user manager (and with it ``volee.service``) when
their last session ends; with ``KillUserProcesses=yes`` logind also kills every process of
the session's scope, which is how agent-deck lost 33 tmux sessions.  So:

- ``loginctl enable-linger USER`` keeps the user manager from boot to shutdown, logged in or
  not: the unit starts at boot and recovery runs after a reboot with nobody logged in;
- the agents' hosts must not live in a login session's scope.  A host is a child of the
  daemon (forked twice and ``setsid``, which changes its session, never its cgroup), so it
  lives where the daemon lives: in ``volee.service``'s cgroup when the user manager started
  the daemon (``KillMode=process`` there: stopping the daemon leaves its hosts), in
  ``session-N.scope`` when someone started it from a login shell (``volee daemon run``, the
  tray's own daemon).  ``session_scope`` reads which, from ``/proc/PID/cgroup``, so the
  install can say that the daemon running now is the second kind and how to move to the first.

Never by default (ADR 0024): only ``--linger`` asks for it.  Docs: docs/machines.md.
"""

from __future__ import annotations

import getpass
import re
from collections.abc import Mapping
from pathlib import Path

from .base import LoginItemError
from .system import Runner

__all__ = ["enable_linger", "session_scope"]

LOGINCTL = "loginctl"
_SESSION_SCOPE = re.compile(r"/session-[^/]+\.scope$")


def _user(environ: Mapping[str, str]) -> str:
    return environ.get("USER") or environ.get("LOGNAME") or getpass.getuser()


def enable_linger(runner: Runner, environ: Mapping[str, str]) -> str:
    """Turn on linger for this user and check that logind says so; the user's name."""
    user = _user(environ)
    argv = (LOGINCTL, "enable-linger", user)
    done = runner.run(argv, environ)
    by_hand = f"`sudo loginctl enable-linger {user}`"
    if done.returncode == 127:
        raise LoginItemError(
            "loginctl was not found",
            "Keeping agents after logout needs systemd-logind, and loginctl is not installed "
            f"here. Nothing was installed. On a machine with systemd, run {by_hand}.",
        )
    if not done.ok:
        said = done.output or f"exit status {done.returncode}"
        raise LoginItemError(
            "Could not keep your user manager after logout",
            f"`loginctl enable-linger {user}` said: {said}. Nothing was installed. Run "
            f"{by_hand} (an administrator may have to), then `volee daemon install --linger` "
            "again.",
        )
    shown = runner.run((LOGINCTL, "show-user", user, "--property=Linger", "--value"), environ)
    if shown.stdout.strip() != "yes":
        said = shown.output or f"exit status {shown.returncode}"
        raise LoginItemError(
            "Linger is not on",
            f"`loginctl enable-linger {user}` succeeded, yet `loginctl show-user {user} "
            f"--property=Linger` says: {said}. Nothing was installed; run {by_hand} and check "
            "it says yes.",
        )
    return user


def session_scope(pid: int, proc: Path = Path("/proc")) -> str | None:
    """The login session's scope process ``pid`` lives in (``…/session-3.scope``: its
    children end with the session), or None (a service's cgroup, or not known)."""
    try:
        text = (proc / str(pid) / "cgroup").read_text(encoding="utf-8")
    except OSError:
        return None
    for line in text.splitlines():
        path = line.split(":", 2)[-1].strip()  # "0::PATH" (cgroup v2), "1:name=systemd:PATH"
        if _SESSION_SCOPE.search(path):
            return path
    return None
