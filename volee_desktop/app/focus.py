"""Bring forward the terminal an agent already runs in (one found by discovery), or say where.

An agent the person started in their own terminal has no volee host to attach to:
Open then brings that terminal to the front where the platform allows it:

- a tmux pane: the pane whose shell is an ancestor of the agent's process is
  selected (``select-window``, ``select-pane``; ``switch-client`` for the
  clients attached elsewhere), then the window of its tmux client is raised;
- an X11 window (EWMH ``_NET_ACTIVE_WINDOW``, through ``xdotool``): the first
  window whose ``_NET_WM_PID`` is the agent's process or one of its ancestors
  (the terminal emulator);
- on sway (Wayland, ``SWAYSOCK``), the window whose ``pid`` is one of those, focused
  through sway's IPC (``swaymsg [con_id=N] focus``). Other Wayland compositors let no
  program bring another's window forward (xdg-activation only passes a token the other
  program must use), so there Open says where it runs.

Otherwise ``where`` says where it runs (its process, terminal, folder), so the
person can find it.  Every outside command is one ``Runner`` call (tests give a fake).
"""

from __future__ import annotations

import json
import logging
import os
import shutil
import subprocess
from collections.abc import Callable, Sequence
from dataclasses import dataclass

log = logging.getLogger(__name__)

Runner = Callable[[Sequence[str]], "str | None"]  # argv -> stdout, None when it failed
Ancestry = Callable[[int], list[int]]  # pid -> [pid, parent, grandparent, ...]
TIMEOUT = 3.0


def run(argv: Sequence[str]) -> str | None:
    """Run a short command; its stdout, or None when it is missing or failed."""
    if shutil.which(argv[0]) is None:
        return None
    try:
        done = subprocess.run(
            list(argv), capture_output=True, text=True, timeout=TIMEOUT, check=False
        )
    except (OSError, subprocess.TimeoutExpired) as exc:
        log.debug("%s failed: %s", argv[0], exc)
        return None
    return done.stdout if done.returncode == 0 else None


def ancestry(pid: int) -> list[int]:
    """``pid`` and its ancestors, nearest first (empty when the process is gone)."""
    import psutil

    try:
        process = psutil.Process(pid)
        return [pid, *(p.pid for p in process.parents())]
    except (psutil.Error, ValueError):
        return []


def terminal_of(pid: int) -> str | None:
    """The terminal device the process runs on (``/dev/pts/3``), when it has one."""
    import psutil

    try:
        tty = psutil.Process(pid).terminal()
    except (psutil.Error, ValueError):
        return None
    return tty if isinstance(tty, str) else None


@dataclass(frozen=True)
class Focused:
    """What ``bring_forward`` did: ``how`` (tmux, x11, tmux+x11) or None, and in words."""

    how: str | None
    text: str


def tmux_pane(pids: list[int], runner: Runner) -> str | None:
    """The tmux pane (``session:window.pane``) whose process is one of ``pids``."""
    out = runner(
        [
            "tmux",
            "list-panes",
            "-a",
            "-F",
            "#{pane_pid} #{session_name}:#{window_index}.#{pane_index}",
        ]
    )
    if not out:
        return None
    panes: dict[int, str] = {}
    for line in out.splitlines():
        word, _, target = line.strip().partition(" ")
        if word.isdigit() and target:
            panes[int(word)] = target
    for pid in pids:
        if pid in panes:
            return panes[pid]
    return None


def tmux_clients(session: str, runner: Runner) -> list[int]:
    """The pids of the tmux clients attached to ``session``."""
    out = runner(["tmux", "list-clients", "-t", session, "-F", "#{client_pid}"]) or ""
    return [int(w) for w in out.split() if w.isdigit()]


def x11_window(pids: list[int], runner: Runner) -> str | None:
    """The first X11 window that belongs to one of ``pids`` (``xdotool search --pid``)."""
    if not os.environ.get("DISPLAY"):
        return None
    for pid in pids:
        out = runner(["xdotool", "search", "--onlyvisible", "--pid", str(pid)])
        if out and out.split():
            return out.split()[0]
    return None


def activate(window: str, runner: Runner) -> bool:
    """Make ``window`` the active one: through the window manager (EWMH), else raise and
    focus it ourselves (no window manager, or one without ``_NET_ACTIVE_WINDOW``)."""
    if runner(["xdotool", "windowactivate", window]) is not None:
        return True
    raised = runner(["xdotool", "windowmap", window, "windowraise", window]) is not None
    focused = runner(["xdotool", "windowfocus", window]) is not None
    return raised or focused


def sway_window(pids: list[int], runner: Runner) -> str | None:
    """The con_id of the first sway window that belongs to one of ``pids``."""
    if not os.environ.get("SWAYSOCK"):
        return None
    out = runner(["swaymsg", "-t", "get_tree"])
    try:
        tree = json.loads(out) if out else None
    except ValueError:
        return None
    owners: dict[int, int] = {}
    stack = [tree] if isinstance(tree, dict) else []
    while stack:
        node = stack.pop()
        pid, con = node.get("pid"), node.get("id")
        if isinstance(pid, int) and isinstance(con, int) and pid not in owners:
            owners[pid] = con
        for key in ("nodes", "floating_nodes"):
            stack.extend(n for n in node.get(key, []) if isinstance(n, dict))
    for pid in pids:
        if pid in owners:
            return str(owners[pid])
    return None


def not_found() -> str:
    """Why no window was brought forward, for this session."""
    if os.environ.get("SWAYSOCK"):
        return "no tmux pane or sway window of it was found"
    if os.environ.get("WAYLAND_DISPLAY") and not os.environ.get("DISPLAY"):
        return (
            "no tmux pane of it was found, and on Wayland volee cannot bring another "
            "program's window forward"
        )
    return "no tmux pane or X11 window of it was found"


def bring_forward(
    pid: int | None,
    runner: Runner = run,
    parents: Ancestry = ancestry,
) -> Focused:
    """Bring the terminal running ``pid`` to the front (tmux pane, then its X11 window)."""
    if pid is None:
        return Focused(None, "volee does not know its process")
    chain = parents(pid)
    if not chain:
        return Focused(None, f"its process {pid} is gone")
    hows: list[str] = []
    texts: list[str] = []
    window_owners = chain
    pane = tmux_pane(chain, runner)
    if pane is not None:
        session = pane.split(":", 1)[0]
        runner(["tmux", "select-window", "-t", pane])
        runner(["tmux", "select-pane", "-t", pane])
        hows.append("tmux")
        texts.append(f"tmux pane {pane}")
        # The pane shows in the terminals of the session's clients: raise one of those.
        window_owners = []
        for client in tmux_clients(session, runner):
            window_owners.extend(parents(client))
    window = x11_window(window_owners, runner) if window_owners else None
    if window is not None and activate(window, runner):
        hows.append("x11")
        texts.append(f"X11 window {window}")
    elif (con := sway_window(window_owners, runner)) is not None and (
        runner(["swaymsg", f"[con_id={con}]", "focus"]) is not None
    ):
        hows.append("sway")
        texts.append(f"sway window {con}")
    if not hows:
        return Focused(None, not_found())
    return Focused("+".join(hows), ", ".join(texts))


def where(pid: int | None, cwd: str, terminal: Callable[[int], str | None] = terminal_of) -> str:
    """Where an agent runs, in words: its process, its terminal, its folder."""
    parts = []
    if pid is not None:
        parts.append(f"process {pid}")
        tty = terminal(pid)
        if tty:
            parts.append(f"on {tty}")
    if cwd:
        parts.append(f"in {cwd}")
    return ", ".join(parts) or "somewhere volee cannot tell"
