"""pi: no hook commands, so an extension shipped with volee reports pi's events.

volee runs ``pi -e <resources/pi/volee-extension.ts> …`` with ``VOLEE_HOOK_ARGV`` (the
argv of ``volee hook``, JSON) in its environment; the extension calls it for
``session_start``, ``agent_start``, ``tool_call``, ``tool_error``, ``agent_end`` and
``session_shutdown`` with a JSON payload (``session_id``, ``session_file``, ``cwd``,
``hook_event_name`` and the event's fields).  pi picks the session id itself; the
extension's ``session_id`` links it.  Resume is ``pi --session <id>``.  pi asks no
permissions, so it is never needs-input.
"""

from __future__ import annotations

import glob
import json
import os
import re
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from .. import datafiles
from ..core import events as ev
from ..core.events import Event
from ..core.limits import KIND_TEXT, detail, limit_of
from ..core.model import Agent, LaunchSettings, LimitKind
from ..core.states import AgentState
from .base import Error, LaunchContext, LaunchPlan, PayloadError, one_line, session_ended
from .claude import tool_activity

EXTENSION = Path("pi") / "volee-extension.ts"
LEFT_BY_PERSON = "you left pi"
HOOKS = ("session_start", "agent_start", "tool_call", "tool_error", "agent_end", "session_shutdown")


def agent_dir(env: Mapping[str, str]) -> Path:
    """pi's own folder for a program run with ``env`` (``PI_CODING_AGENT_DIR``, else
    ``~/.pi/agent``; read from pi 0.73.1's config.js)."""
    configured = env.get("PI_CODING_AGENT_DIR")
    if configured:
        return Path(os.path.expanduser(configured))
    home = env.get("HOME") or os.environ.get("HOME")
    return (Path(home) if home else Path.home()) / ".pi" / "agent"


def has_conversation(session: str, env: Mapping[str, str]) -> bool:
    """Whether ``pi --session <session>`` finds something to continue.

    pi writes its session file (``<agent dir>/sessions/--<cwd>--/<time>_<id>.jsonl``) only
    once its first reply comes, so a pi killed in its first turn leaves none, and
    ``--session`` then prints "No session found" and exits 1.  Any doubt (an unreadable
    folder) counts as a conversation, so volee never drops one it could have resumed."""
    if not session:
        return False
    try:
        return any((agent_dir(env) / "sessions").glob(f"*/*{glob.escape(session)}*.jsonl"))
    except OSError:
        return True


def extension_path() -> Path:
    """The extension file: inside the package (a wheel) or the checkout's ``resources/``."""
    found = datafiles.find("resources", *EXTENSION.parts)
    if found is None:
        looked = " nor ".join(str(c) for c in datafiles.candidates("resources", *EXTENSION.parts))
        raise Error(f"volee's pi extension is missing: not at {looked}; reinstall volee")
    return found


class PiProfile:
    """The pi profile."""

    name = "pi"
    can_resume = True
    # The oldest release tested: pi.on(...) extensions with sessionManager.getSessionId().
    min_version: str | None = "0.73.0"

    def __init__(self, extension: Path | None = None) -> None:
        self._extension = extension

    def _common(
        self, settings: LaunchSettings, ctx: LaunchContext
    ) -> tuple[list[str], dict[str, str]]:
        if settings.permission_mode:
            raise Error(
                f"pi has no permission modes (got {settings.permission_mode!r}); leave it out"
            )
        extension = self._extension or extension_path()
        argv = [ctx.binary or "pi", "-e", str(extension)]
        if settings.model:
            argv += ["--model", settings.model]
        env = dict(settings.env)
        env["VOLEE_HOOK_ARGV"] = json.dumps(list(ctx.hook_argv))
        return argv, env

    def launch(self, agent_id: str, settings: LaunchSettings, ctx: LaunchContext) -> LaunchPlan:
        argv, env = self._common(settings, ctx)
        argv += list(settings.argv)
        if settings.prompt:
            argv.append(settings.prompt)
        return LaunchPlan(tuple(argv), env, {}, None)

    def resume(
        self,
        agent_id: str,
        settings: LaunchSettings,
        session: str,
        prompt: str | None,
        ctx: LaunchContext,
    ) -> LaunchPlan:
        argv, env = self._common(settings, ctx)
        argv += ["--session", session, *settings.argv]
        if prompt:
            argv.append(prompt)
        return LaunchPlan(tuple(argv), env, {}, session)

    def has_conversation(self, session: str, settings: LaunchSettings) -> bool:
        """Whether resuming ``session`` finds its file (reads disk)."""
        return has_conversation(session, settings.env)

    def hook_events(
        self, agent: Agent, hook: str, payload: dict[str, Any], at: float
    ) -> list[Event]:
        return hook_events(agent, hook, payload, at)


def hook_events(agent: Agent, hook: str, payload: dict[str, Any], at: float) -> list[Event]:
    """The events a report of volee's pi extension means for ``agent`` (pure)."""
    if hook not in HOOKS:
        raise PayloadError(f"unknown pi event {hook!r}; volee's extension sends {', '.join(HOOKS)}")
    out: list[Event] = []
    a = agent.id

    def state(new: AgentState, detail: str = "") -> None:
        if new is not agent.state or detail != agent.detail:
            out.append(ev.StateChanged(at=at, agent=a, state=new, detail=detail))

    session = payload.get("session_id")
    if session is not None and not isinstance(session, str):
        raise PayloadError(f"pi payload's 'session_id' is not a string (got {session!r})")
    # A shut-down session manager reports no id: the agent (VOLEE_AGENT) still tells whose it is.
    if session and session != agent.session and hook != "session_shutdown":
        reason = payload.get("reason")
        how = (
            ev.LinkKind.RESUMED
            if reason == "resume"
            else ev.LinkKind.CONTINUED
            if reason in ("new", "fork")
            else ev.LinkKind.STARTED
        )
        if how is ev.LinkKind.STARTED and agent.sessions:
            how = ev.LinkKind.CONTINUED
        out.append(ev.SessionLinked(at=at, agent=a, session=session, how=how))

    if hook == "session_start":
        if agent.state in (AgentState.LAUNCHING, AgentState.STOPPED, AgentState.FAILED):
            state(AgentState.IDLE)
    elif hook == "agent_start":
        # pi's own retry of a turn that ended on a limit keeps saying it retries.
        limit = agent.limit
        retrying = limit is not None and not limit.ended
        state(AgentState.WORKING, detail(limit) if limit is not None and retrying else "")
    elif hook == "tool_call":
        state(AgentState.WORKING)
        out.append(ev.ActivityRecorded(at=at, agent=a, activity=tool_activity(payload)))
    elif hook == "tool_error":
        out.append(
            ev.ActivityRecorded(
                at=at, agent=a, activity=one_line(f"{tool_activity(payload)} (failed)")
            )
        )
    elif hook == "agent_end":
        kind = error_limit(payload)
        if kind is None:
            state(AgentState.DONE)
        else:
            out.extend(limit_events(agent, kind, payload, at))
    else:  # session_shutdown
        reason = payload.get("reason")
        signal = payload.get("signal")
        if reason in ("new", "resume", "fork", "reload"):
            return out  # pi switches sessions: a session_start follows
        by_person = LEFT_BY_PERSON if reason == "quit" and not signal else None
        out.extend(session_ended(agent, at, left=by_person, why=signal))
    return out


# --- limits (docs/limits.md; recorded with 0.73.1, tests/harness/samples/limits) ---------

#: pi 0.73.1 ends a turn on an API error with ``agent_end`` whose last message has
#: ``stopReason: "error"`` and ``errorMessage`` "429 {"type":"error","error":{"type":
#: "rate_limit_error",…}}" (any 429: pi reads none of the unified headers, so a plan's limit
#: and a plain rate limit look the same) or "529 {…"overloaded_error"…}".
_RATE = re.compile(r"\b429\b|rate.?limit|too many requests", re.IGNORECASE)
_OVERLOADED = re.compile(r"\b529\b|overloaded", re.IGNORECASE)


def error_limit(payload: Mapping[str, Any]) -> LimitKind | None:
    """The limit an ``agent_end`` of volee's extension ended on, or None (not an error, or
    another one)."""
    if payload.get("stop_reason") != "error":
        return None
    message = payload.get("error_message")
    text = message if isinstance(message, str) else ""
    if _OVERLOADED.search(text):
        return LimitKind.OVERLOADED
    if _RATE.search(text):
        return LimitKind.RATE
    return None


def limit_events(
    agent: Agent, kind: LimitKind, payload: Mapping[str, Any], at: float
) -> list[Event]:
    """A turn pi ended on a limit: pi retries it by itself while it has retries left (the
    extension counts the turns of this prompt that ended on an error, ``errors_in_a_row``,
    against pi's ``retry.maxRetries``, ``max_retries``: 0 when its auto-retry is off); after
    the last, the agent waits at its prompt, ``idle`` with its limit (no reset time: pi
    names none)."""
    errors = payload.get("errors_in_a_row")
    retries = payload.get("max_retries")
    errors = errors if isinstance(errors, int) and errors > 0 else 1
    retries = retries if isinstance(retries, int) and retries >= 0 else 0
    message = payload.get("error_message")
    text = one_line(message) if isinstance(message, str) else ""
    if errors <= retries:
        hit = ev.LimitHit(
            at=at, agent=agent.id, kind=kind, attempt=errors, attempts=retries, message=text
        )
        return [
            hit,
            ev.StateChanged(
                at=at,
                agent=agent.id,
                state=AgentState.WORKING,
                detail=detail(limit_of(hit)),
                progress=False,
            ),
        ]
    return [
        ev.StateChanged(
            at=at, agent=agent.id, state=AgentState.IDLE, detail=f"limited: {KIND_TEXT[kind]}"
        ),
        ev.LimitHit(at=at, agent=agent.id, kind=kind, ended=True, message=text),
    ]
