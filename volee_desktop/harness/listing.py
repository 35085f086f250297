"""Pure parsers of what discovery reads: ``claude agents --json``, session files, processes.

Claude Code lists its live sessions with ``claude agents --json --all`` (a JSON
array of ``{pid, cwd, kind, startedAt, sessionId, name, status, waitingFor?,
id?, state?}``) and keeps one ``~/.claude/sessions/<pid>.json`` per running
process (deleted on a clean exit, left behind by kill -9: real-harnesses.md §5).
codex and pi have no lister: their session files (first line: ``session_meta``
for codex, ``session`` for pi) and the process table stand in.  Nothing here
does IO; the daemon's discovery module reads and runs, these functions parse.
"""

from __future__ import annotations

import json
import os.path
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from typing import Any

from ..core.model import Harness, Location
from ..core.reconcile import DeadSession, ListedSession
from ..core.states import Coarse
from .base import Error


class ListingError(Error):
    """A listing or a session file that cannot be read: the message says what and why."""


_STATUS = {"busy": Coarse.BUSY, "waiting": Coarse.WAITING, "idle": Coarse.IDLE}
#: Background states that mean the session is over (``--all`` keeps them listed a while).
_FINISHED = frozenset(
    {"completed", "complete", "done", "stopped", "failed", "error", "errored", "killed",
     "cancelled", "canceled", "exited", "finished"}
)  # fmt: skip
_FAILED = frozenset({"failed", "error", "errored", "killed"})
#: Keys that mark a harness's own subagent sessions (never agents of their own).
_SUBAGENT_KEYS = ("parentSessionId", "parent_session_id", "parentSession", "isSidechain")


def _seconds(value: Any) -> float | None:
    """Claude Code writes epoch milliseconds."""
    if isinstance(value, int | float) and not isinstance(value, bool) and value > 0:
        return value / 1000.0 if value > 1e11 else float(value)
    return None


def _pid(value: Any) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) and value > 0 else None


def _subagent(entry: dict[str, Any]) -> bool:
    if any(entry.get(k) for k in _SUBAGENT_KEYS):
        return True
    return str(entry.get("kind") or "").lower() in ("subagent", "sidechain", "task")


def claude_session(entry: dict[str, Any]) -> ListedSession | None:
    """One entry of ``claude agents --json`` (None when it has no session id)."""
    session = entry.get("sessionId") or entry.get("session_id")
    if not isinstance(session, str) or not session:
        return None
    kind = str(entry.get("kind") or "interactive").lower()
    state = str(entry.get("state") or "").lower()
    finished = kind == "background" and state in _FINISHED
    status = _STATUS.get(str(entry.get("status") or "").lower())
    if finished:
        status = Coarse.GONE
    waiting = entry.get("waitingFor")
    return ListedSession(
        harness=Harness.CLAUDE,
        session=session,
        pid=_pid(entry.get("pid")),
        cwd=str(entry.get("cwd") or ""),
        location=Location.BACKGROUND if kind == "background" else Location.TERMINAL,
        status=status,
        waiting_for=waiting if isinstance(waiting, str) else "",
        name=str(entry.get("name") or ""),
        started_at=_seconds(entry.get("startedAt")),
        finished=finished,
        failed=finished and state in _FAILED,
        subagent=_subagent(entry),
    )


def parse_claude_agents(text: str) -> list[ListedSession]:
    """The sessions of ``claude agents --json [--all]`` output (ListingError if not a list)."""
    try:
        data = json.loads(text)
    except ValueError as exc:
        raise ListingError(
            f"`claude agents --json` printed no JSON ({exc}); its output began {text[:80]!r}"
        ) from exc
    if not isinstance(data, list):
        raise ListingError(
            f"`claude agents --json` printed a {type(data).__name__}, not a list of sessions"
        )
    out = []
    for entry in data:
        if isinstance(entry, dict) and (session := claude_session(entry)) is not None:
            out.append(session)
    return out


@dataclass(frozen=True)
class SessionFile:
    """``~/.claude/sessions/<pid>.json``: the last word of one Claude Code process."""

    pid: int
    session: str
    cwd: str
    status: str
    kind: str
    name: str
    updated_at: float | None

    def dead(self) -> DeadSession:
        """This file as a session whose process is gone."""
        return DeadSession(
            harness=Harness.CLAUDE,
            session=self.session,
            pid=self.pid,
            cwd=self.cwd,
            name=self.name,
            busy=self.status == "busy",
            updated_at=self.updated_at,
            location=Location.BACKGROUND if self.kind == "background" else Location.TERMINAL,
        )


def parse_session_file(text: str, filename: str = "") -> SessionFile | None:
    """One session file (None when it is not one: half written, or another format)."""
    try:
        data = json.loads(text)
    except ValueError:
        return None
    if not isinstance(data, dict):
        return None
    pid = _pid(data.get("pid"))
    if pid is None and filename:
        stem = os.path.basename(filename).removesuffix(".json")
        pid = int(stem) if stem.isdigit() else None
    session = data.get("sessionId")
    if pid is None or not isinstance(session, str) or not session or _subagent(data):
        return None
    return SessionFile(
        pid=pid,
        session=session,
        cwd=str(data.get("cwd") or ""),
        status=str(data.get("status") or "").lower(),
        kind=str(data.get("kind") or "interactive").lower(),
        name=str(data.get("name") or ""),
        updated_at=_seconds(data.get("updatedAt") or data.get("statusUpdatedAt")),
    )


def dead_sessions(files: Iterable[SessionFile], alive: Callable[[int], bool]) -> list[DeadSession]:
    """The session files whose process is gone."""
    return [f.dead() for f in files if not alive(f.pid)]


# --- codex and pi -------------------------------------------------------------------------


@dataclass(frozen=True)
class SessionMeta:
    """The first line of a codex rollout or a pi session file: id and directory."""

    harness: Harness
    session: str
    cwd: str
    subagent: bool = False


def parse_session_meta(harness: Harness, first_line: str) -> SessionMeta | None:
    """The id and cwd in a codex rollout's ``session_meta`` or a pi file's ``session`` line."""
    try:
        data = json.loads(first_line)
    except ValueError:
        return None
    if not isinstance(data, dict):
        return None
    if harness is Harness.CODEX:
        if data.get("type") != "session_meta" or not isinstance(data.get("payload"), dict):
            return None
        data = data["payload"]
        source = data.get("source")
        subagent = isinstance(source, dict) and "subagent" in source
    elif harness is Harness.PI:
        if data.get("type") != "session":
            return None
        subagent = bool(data.get("parentSession"))
    else:
        return None
    session = data.get("id")
    if not isinstance(session, str) or not session:
        return None
    return SessionMeta(harness, session, str(data.get("cwd") or ""), subagent)


@dataclass(frozen=True)
class Turn:
    """What the end of a codex/pi session file says about the turn (None: it says nothing)."""

    status: Coarse | None
    done: bool = False  # the turn ended with the agent's answer: volee's ``done``
    waiting_for: str = ""


#: codex rollout ``event_msg`` types: a turn begins, ends, is cut off, or waits for the person.
_CODEX_BUSY = frozenset({"task_started", "turn_started", "exec_command_begin", "user_message"})
_CODEX_DONE = frozenset({"task_complete", "turn_complete"})
_CODEX_ABORTED = frozenset({"turn_aborted", "task_aborted"})
_CODEX_WAITING = frozenset(
    {"exec_approval_request", "apply_patch_approval_request", "request_user_input",
     "elicitation_request"}
)  # fmt: skip
#: pi ``message`` stop reasons that end the agent's turn, and those that cut it off.
_PI_DONE = frozenset({"stop", "end_turn", "length"})
_PI_ABORTED = frozenset({"aborted", "error"})


def session_turn(harness: Harness, lines: Iterable[str]) -> Turn:
    """The turn state at the end of a codex rollout or a pi session file (its last lines).

    codex 0.171 writes ``event_msg`` lines (``task_started`` ... ``task_complete``; an
    interrupted turn is ``turn_aborted``; an approval it waits for is an
    ``*_approval_request``, and a ``function_call`` asking to leave the sandbox that has no
    output yet: see ``_codex_call``); pi 0.73 writes a ``message`` line per message, the
    assistant's carrying ``stopReason`` (``toolUse`` while it works, ``stop`` at the end).
    Lines that are not JSON (a line being written) are skipped.
    """
    turn = Turn(None)
    for line in lines:
        try:
            data = json.loads(line)
        except ValueError:
            continue
        if not isinstance(data, dict):
            continue
        if harness is Harness.CODEX:
            payload = data.get("payload")
            if not isinstance(payload, dict):
                continue
            if data.get("type") == "response_item":
                turn = _codex_call(payload, turn)
                continue
            if data.get("type") != "event_msg":
                continue
            kind = payload.get("type")
            if kind in _CODEX_DONE:
                turn = Turn(Coarse.IDLE, done=True)
            elif kind in _CODEX_ABORTED:
                turn = Turn(Coarse.IDLE)
            elif kind in _CODEX_WAITING:
                command = payload.get("command")
                if isinstance(command, list):
                    command = " ".join(str(c) for c in command)
                what = f"permission for {command}" if isinstance(command, str) else "approval"
                turn = Turn(Coarse.WAITING, waiting_for=what[:100])
            elif kind in _CODEX_BUSY:
                turn = Turn(Coarse.BUSY)
        elif harness is Harness.PI:
            message = data.get("message")
            if data.get("type") != "message" or not isinstance(message, dict):
                continue
            role, reason = message.get("role"), message.get("stopReason")
            if role == "assistant" and reason in _PI_DONE:
                turn = Turn(Coarse.IDLE, done=True)
            elif role == "assistant" and reason in _PI_ABORTED:
                turn = Turn(Coarse.IDLE)
            elif role in ("user", "assistant", "toolResult"):
                turn = Turn(Coarse.BUSY)
    return turn


def _codex_call(payload: dict[str, object], turn: Turn) -> Turn:
    """A tool call in a codex rollout: one asking to leave the sandbox waits for the person.

    codex 0.171 writes nothing for the approval dialog it shows (checked with the real codex,
    ``-a on-request``): the rollout ends with the ``function_call`` whose arguments ask for
    ``sandbox_permissions: require_escalated``, and its ``function_call_output`` comes only
    once the person answered. So that call, last, is a wait for an approval."""
    kind = payload.get("type")
    if kind == "function_call_output":
        return Turn(Coarse.BUSY)
    if kind != "function_call":
        return turn
    try:
        arguments = json.loads(str(payload.get("arguments") or "{}"))
    except ValueError:
        return Turn(Coarse.BUSY)
    if (
        not isinstance(arguments, dict)
        or arguments.get("sandbox_permissions") != "require_escalated"
    ):
        return Turn(Coarse.BUSY)
    command = arguments.get("cmd") or arguments.get("command")
    if isinstance(command, list):
        command = " ".join(str(c) for c in command)
    what = f"permission for {command}" if isinstance(command, str) and command else "approval"
    return Turn(Coarse.WAITING, waiting_for=what[:100])


_NOT_SESSIONS = frozenset(
    {"--version", "-V", "--help", "-h", "login", "logout", "mcp", "mcp-server", "app-server",
     "completion", "config", "install", "update", "list-models", "--list-models"}
)  # fmt: skip


def harness_of(cmdline: Sequence[str]) -> Harness | None:
    """codex or pi when a process's command line runs one of them for a session."""
    if not cmdline:
        return None
    names = [os.path.basename(cmdline[0]).lower()]
    paths = [cmdline[0]]
    if names[0].startswith("node") and len(cmdline) > 1:
        names.append(os.path.basename(cmdline[1]).lower())
        paths.append(cmdline[1])
    found: Harness | None = None
    for name, path in zip(names, paths, strict=True):
        if name in ("codex", "codex.exe", "codex.js") or "@openai/codex" in path:
            found = Harness.CODEX
        elif name in ("pi", "pi.js") or "pi-coding-agent" in path:
            found = Harness.PI
    if found is None or any(arg in _NOT_SESSIONS for arg in cmdline[1:3]):
        return None
    return found


def synthetic_session(pid: int, started_at: float, start_ticks: int | None = None) -> str:
    """A stand-in session id for a process whose session file is not found (yet).

    Named by the process's start in clock ticks since boot where the kernel says it (Linux):
    ``started_at`` (wall clock, from psutil) moves when the clock is stepped, and the same
    process would then look like a new session (docs/faults.md).
    """
    if start_ticks is not None:
        return f"pid-{pid}-t{start_ticks}"
    return f"pid-{pid}-{int(started_at)}"
