"""Claude Code: launch with a volee-chosen --session-id and a volee-written hooks file.

Hooks map to events as the architecture page's table says.  The person's own
settings are never edited: volee passes ``--settings <file>`` with command
hooks that call ``volee hook EVENT``.  An explicit ``--permission-mode`` is
always given, because the interactive default ("auto") needs the vendor's
server.
"""

from __future__ import annotations

import glob
import json
import os
import re
import shlex
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..core import events as ev
from ..core.events import Event
from ..core.limits import KIND_TEXT
from ..core.model import Agent, LaunchSettings, LimitKind, Request, RequestKind
from ..core.requests import (
    UNSAID_PERMISSION,
    dialog_request,
    permission_request,
    question_request,
)
from ..core.states import AgentState
from .base import (
    LaunchContext,
    LaunchPlan,
    PayloadError,
    one_line,
    require_str,
    session_ended,
)

DEFAULT_PERMISSION_MODE = "acceptEdits"
HOOK_EVENTS = (
    "SessionStart",
    "UserPromptSubmit",
    "PreToolUse",
    "PostToolUse",
    "PostToolUseFailure",
    "PermissionRequest",
    "Notification",
    "SubagentStart",
    "SubagentStop",
    "Stop",
    "StopFailure",
    "SessionEnd",
)
LEFT_BY_PERSON = "you left Claude Code"
#: The ``notification_type``s volee acts on (``hook_events``), as the Notification hook's matcher.
NOTIFICATIONS_READ = "permission_prompt|elicitation_dialog"


def hooks_settings(hook: tuple[str, ...]) -> dict[str, Any]:
    """The ``--settings`` document: one command hook per event, calling the hook shim
    (``hook`` is its argv before the event name, e.g. ``volee hook``)."""
    prefix = " ".join(shlex.quote(part) for part in hook)
    hooks: dict[str, Any] = {}
    for name in HOOK_EVENTS:
        entry: dict[str, Any] = {"hooks": [{"type": "command", "command": f"{prefix} {name}"}]}
        if name in ("PreToolUse", "PostToolUse", "PostToolUseFailure", "PermissionRequest"):
            entry["matcher"] = "*"
        elif name == "Notification":
            # Only the kinds volee reads: an `idle_prompt` (a minute after every turn) would
            # start a shim in each idle agent for nothing (docs/performance.md, section 1).
            entry["matcher"] = NOTIFICATIONS_READ
        hooks[name] = [entry]
    return {"hooks": hooks}


def own_status_line(cwd: str, env: Mapping[str, str]) -> dict[str, Any] | None:
    """The person's own ``statusLine`` setting, as Claude Code would pick it for ``cwd``
    (the project's local settings, then the project's, then their own), or None.

    volee's ``--settings`` outranks all three, so volee's wrapper runs this one itself
    (docs/context.md).  An unreadable file is skipped, like Claude Code does.
    """
    candidates = [
        Path(cwd) / ".claude" / "settings.local.json",
        Path(cwd) / ".claude" / "settings.json",
        config_dir(env) / "settings.json",
    ]
    for path in candidates:
        try:
            data = json.loads(path.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            continue
        line = data.get("statusLine") if isinstance(data, dict) else None
        if isinstance(line, dict) and line.get("type") == "command":
            command = line.get("command")
            if isinstance(command, str) and command.strip():
                return line
    return None


def status_line(
    wrapper: tuple[str, ...], state: str, own: Mapping[str, Any] | None
) -> dict[str, Any]:
    """volee's ``statusLine`` setting: the wrapper, given its state file and the person's
    own command (kept with its padding and refresh interval)."""
    argv = [*wrapper, state]
    line: dict[str, Any] = {"type": "command"}
    if own is not None:
        argv.append(str(own["command"]))
        for key in ("padding", "refreshInterval"):
            if key in own:
                line[key] = own[key]
    line["command"] = " ".join(shlex.quote(part) for part in argv)
    return line


MCP_SERVER = "volee"
#: Transcript line types that are the conversation (the rest is metadata: mode, title...).
CONVERSATION_TYPES = frozenset({"user", "assistant"})


def config_dir(env: Mapping[str, str]) -> Path:
    """Claude Code's own folder for a program run with ``env`` (``~/.claude`` by default)."""
    configured = env.get("CLAUDE_CONFIG_DIR")
    if configured:
        return Path(configured)
    home = env.get("HOME") or os.environ.get("HOME")
    return (Path(home) if home else Path.home()) / ".claude"


def has_conversation(session: str, env: Mapping[str, str]) -> bool:
    """Whether ``session`` left a conversation that ``claude --resume`` can continue.

    Measured with 2.1.332: Claude Code writes its transcript
    (``<config>/projects/<cwd>/<session>.jsonl``) through a queue, so a process killed
    within ~150 ms of a prompt leaves at most metadata lines; ``--resume`` then prints
    "No conversation found with session ID" and exits 1, and ``--session-id`` with that id
    says it "is already in use".  Any doubt (unreadable folder, odd line) counts as a
    conversation, so volee never drops one it could have resumed.
    """
    try:
        transcripts = list((config_dir(env) / "projects").glob(f"*/{glob.escape(session)}.jsonl"))
    except OSError:
        return True
    for path in transcripts:
        try:
            with path.open(encoding="utf-8", errors="replace") as f:
                for line in f:
                    if not line.strip():
                        continue
                    try:
                        entry = json.loads(line)
                    except ValueError:
                        return True  # a line being written, or a format volee does not know
                    if not isinstance(entry, dict) or entry.get("type") in CONVERSATION_TYPES:
                        return True
        except OSError:
            return True
    return False


def mcp_config(relay: tuple[str, ...], agent_id: str, url: str | None = None) -> dict[str, Any]:
    """The ``--mcp-config`` document: the daemon's endpoint at ``url`` when there is one,
    else volee's MCP relay (``relay`` is its argv), knowing its agent."""
    if url is not None:
        return {"mcpServers": {MCP_SERVER: {"type": "http", "url": url}}}
    return {
        "mcpServers": {
            MCP_SERVER: {
                "type": "stdio",
                "command": relay[0],
                "args": list(relay[1:]),
                "env": {"VOLEE_AGENT": agent_id},
            }
        }
    }


class ClaudeProfile:
    """The Claude Code profile."""

    name = "claude"
    can_resume = True
    # 2.1 has every hook volee listens to (PermissionRequest, StopFailure, SessionEnd reasons).
    min_version: str | None = "2.1.0"

    def _common(
        self, settings: LaunchSettings, ctx: LaunchContext, agent_id: str
    ) -> tuple[list[str], dict[str, str]]:
        settings_path = f"{ctx.files_dir}/claude-settings.json"
        mcp_path = f"{ctx.files_dir}/mcp.json"
        # --mcp-config takes several values: the next option ends them (never the prompt).
        argv = [ctx.binary or "claude", "--settings", settings_path, "--mcp-config", mcp_path]
        argv += ["--permission-mode", settings.permission_mode or DEFAULT_PERMISSION_MODE]
        if settings.model:
            argv += ["--model", settings.model]
        argv += list(settings.argv)
        document = hooks_settings(ctx.hook_argv)
        # volee's own tools never wait for a permission prompt.
        document["permissions"] = {"allow": [f"mcp__{MCP_SERVER}"]}
        if ctx.statusline:
            own = own_status_line(settings.cwd, settings.env)
            state = f"{ctx.files_dir}/statusline.last"
            document["statusLine"] = status_line(ctx.statusline, state, own)
        files = {
            settings_path: json.dumps(document, indent=2),
            mcp_path: json.dumps(mcp_config(ctx.mcp_argv, agent_id, ctx.mcp_url), indent=2),
        }
        return argv, files

    def launch(self, agent_id: str, settings: LaunchSettings, ctx: LaunchContext) -> LaunchPlan:
        argv, files = self._common(settings, ctx, agent_id)
        argv[1:1] = ["--session-id", ctx.session_id]
        if settings.prompt:
            argv.append(settings.prompt)
        return LaunchPlan(tuple(argv), dict(settings.env), files, ctx.session_id)

    def resume(
        self,
        agent_id: str,
        settings: LaunchSettings,
        session: str,
        prompt: str | None,
        ctx: LaunchContext,
    ) -> LaunchPlan:
        argv, files = self._common(settings, ctx, agent_id)
        argv[1:1] = ["--resume", session]
        if prompt:
            argv.append(prompt)
        return LaunchPlan(tuple(argv), dict(settings.env), files, session)

    def has_conversation(self, session: str, settings: LaunchSettings) -> bool:
        """Whether ``session`` can be resumed (reads Claude Code's transcripts folder)."""
        return has_conversation(session, settings.env)

    def hook_events(
        self, agent: Agent, hook: str, payload: dict[str, Any], at: float
    ) -> list[Event]:
        return hook_events(agent, hook, payload, at)


def tool_activity(payload: dict[str, Any]) -> str:
    """One line for a tool call: ``Bash: pytest -q``, ``Edit: src/app.py``."""
    tool = payload.get("tool_name")
    name = tool if isinstance(tool, str) and tool else "tool"
    data = payload.get("tool_input")
    if isinstance(data, dict):
        for key in ("command", "file_path", "path", "pattern", "url", "query", "description"):
            value = data.get(key)
            if isinstance(value, str) and value.strip():
                return one_line(f"{name}: {value}")
    return name


STATUS_LINE = "StatusLine"  # what volee's status-line wrapper hands over (cli/statusline.py)


def status_line_events(agent: Agent, payload: dict[str, Any], at: float) -> list[Event]:
    """``context-used`` from what volee's status-line wrapper read in Claude Code's status-line
    input (``context``: 0..1, ``cost_usd``), only when the share or the cost changed.  A payload
    without them (the wrapper hands an unreadable one over once) is refused, so it is logged
    and kept in ``rejected/``, and changes nothing."""
    share = payload.get("context")
    cost = payload.get("cost_usd")
    if isinstance(share, bool) or not isinstance(share, (int, float)) or not 0 <= share <= 1:
        keys = ", ".join(sorted(str(k) for k in payload)[:12])
        raise PayloadError(
            "a status line volee cannot read (no context window share; Claude Code's "
            f"status-line input may have changed): keys {keys or 'none'}"
        )
    if isinstance(cost, bool) or not isinstance(cost, (int, float)) or not 0 <= cost < 1e9:
        cost = None
    out: list[Event] = []
    if share != agent.context_share or (cost is not None and cost != agent.cost_usd):
        out.append(ev.ContextUsed(at=at, agent=agent.id, share=float(share), cost_usd=cost))
    plan = plan_used(agent, payload.get("plan"), at)
    if plan is not None:
        out.append(plan)
    return out


def plan_used(agent: Agent, plan: object, at: float) -> ev.PlanUsed | None:
    """``plan-used`` from the wrapper's ``plan`` (``{window: {used, resets_at}}``) when it
    differs from what the agent holds; None without one (API keys report none)."""
    if not isinstance(plan, dict):
        return None

    def window(name: str) -> tuple[float | None, float | None]:
        entry = plan.get(name)
        if not isinstance(entry, dict):
            return None, None
        used, resets = entry.get("used"), entry.get("resets_at")
        if isinstance(used, bool) or not isinstance(used, (int, float)) or not 0 <= used <= 1:
            return None, None
        if isinstance(resets, bool) or not isinstance(resets, (int, float)) or resets <= 0:
            return float(used), None
        return float(used), float(resets)

    five, five_resets = window("five_hour")
    seven, seven_resets = window("seven_day")
    if five is None and seven is None:
        return None
    old = agent.plan
    if old is not None and (
        old.five_hour,
        old.five_hour_resets_at,
        old.seven_day,
        old.seven_day_resets_at,
    ) == (five, five_resets, seven, seven_resets):
        return None
    return ev.PlanUsed(
        at=at,
        agent=agent.id,
        five_hour=five,
        five_hour_resets_at=five_resets,
        seven_day=seven,
        seven_day_resets_at=seven_resets,
    )


def hook_events(agent: Agent, hook: str, payload: dict[str, Any], at: float) -> list[Event]:
    """The events a Claude Code hook means for ``agent`` (pure)."""
    if hook == STATUS_LINE:
        return status_line_events(agent, payload, at)
    return claude_style_events(agent, hook, payload, at, left=LEFT_BY_PERSON, product="Claude Code")


QUESTION_TOOLS = frozenset({"AskUserQuestion"})
#: Hooks that say nothing about the agent's state (kept quiet rather than refused).
QUIET_HOOKS = frozenset({"PostToolBatch", "MessageDisplay", "PreCompact", "PostCompact"})


def claude_style_events(
    agent: Agent,
    hook: str,
    payload: dict[str, Any],
    at: float,
    *,
    left: str,
    product: str,
) -> list[Event]:
    """Events of a hook in Claude Code's schema (codex uses it too); ``left`` is the detail
    of a session the person ended themselves."""
    session = require_str(payload, "session_id")
    out: list[Event] = []
    a = agent.id

    def state(new: AgentState, detail: str = "") -> None:
        if new is not agent.state or detail != agent.detail:
            out.append(ev.StateChanged(at=at, agent=a, state=new, detail=detail))

    def asks(request: Request, detail: str) -> None:
        # Always an event: a new dialog is a new request, even with the same detail.
        needs = AgentState.NEEDS_INPUT
        out.append(ev.StateChanged(at=at, agent=a, state=needs, detail=detail, request=request))

    cwd = str(payload.get("cwd") or agent.cwd)
    tool_name = payload.get("tool_name") if isinstance(payload.get("tool_name"), str) else None
    raw_input = payload.get("tool_input")
    tool_input = raw_input if isinstance(raw_input, dict) else None

    if session != agent.session:
        how = ev.LinkKind.RESUMED if payload.get("source") == "resume" else ev.LinkKind.STARTED
        if agent.sessions and payload.get("source") in ("clear", "compact"):
            how = ev.LinkKind.CONTINUED
        out.append(ev.SessionLinked(at=at, agent=a, session=session, how=how))

    if hook == "SessionStart":
        model = payload.get("model")
        if isinstance(model, str) and model and model != agent.model:
            out.append(ev.ModelChanged(at=at, agent=a, model=model))
        if agent.state in (AgentState.LAUNCHING, AgentState.STOPPED, AgentState.FAILED):
            state(AgentState.IDLE)
    elif hook == "UserPromptSubmit":
        state(AgentState.WORKING)
        if agent.activity:
            # The activity line belongs to the turn: a new prompt starts with none.
            out.append(ev.ActivityRecorded(at=at, agent=a, activity=""))
    elif hook == "PreToolUse" and tool_name in QUESTION_TOOLS and tool_input is not None:
        # AskUserQuestion shows its options as soon as it starts: the agent waits for you.
        asks(question_request(a, at, tool_input, tool=tool_name), f"question: {tool_name}")
        out.append(ev.ActivityRecorded(at=at, agent=a, activity=tool_activity(payload)))
    elif hook in ("PreToolUse", "PostToolUse", "PostToolUseFailure"):
        state(AgentState.WORKING)
        activity = tool_activity(payload)
        if hook == "PostToolUseFailure":
            activity = one_line(f"{activity} (failed)")
        out.append(ev.ActivityRecorded(at=at, agent=a, activity=activity))
    elif hook in ("SubagentStart", "SubagentStop"):
        kind = payload.get("agent_type") if isinstance(payload.get("agent_type"), str) else "agent"
        verb = "started" if hook == "SubagentStart" else "finished"
        if agent.state is not AgentState.NEEDS_INPUT:
            state(AgentState.WORKING)
        out.append(ev.ActivityRecorded(at=at, agent=a, activity=f"subagent {kind} {verb}"))
    elif hook == "PermissionRequest":
        request = permission_request(a, at, tool_name, tool_input, cwd)
        if request.kind is RequestKind.QUESTION:
            asks(request, f"question: {tool_name}")
        else:
            asks(request, f"permission for {tool_name}" if tool_name else "permission")
    elif hook == "Notification":
        kind = payload.get("notification_type")
        message = one_line(str(payload.get("message") or ""))
        if kind == "permission_prompt":
            # Never overwrite the richer request PermissionRequest gave ("Bash: pytest -q").
            if agent.state is not AgentState.NEEDS_INPUT:
                text = message or UNSAID_PERMISSION
                asks(dialog_request(a, at, text, kind=RequestKind.PERMISSION), "permission")
        elif kind == "elicitation_dialog":
            text = message or "a question"
            asks(dialog_request(a, at, text), text)
        # idle_prompt (and anything else) is not needs-input.
    elif hook == "Stop":
        # Its last message is what the turn came to: the row's detail, the done notification.
        last = payload.get("last_assistant_message")
        state(AgentState.DONE, one_line(last) if isinstance(last, str) else "")
    elif hook == "StopFailure":
        error = payload.get("error") or payload.get("message") or "the turn failed"
        kind = stop_limit(payload, agent)
        if kind is None:
            state(AgentState.FAILED, one_line(str(error)))
        else:
            # The turn ended on a limit: the agent is alive at its prompt and waits for it
            # to lift (docs/limits.md), neither done nor failed.
            seen = agent.limit if agent.limit is not None and agent.limit.kind is kind else None
            last = payload.get("last_assistant_message")
            state(AgentState.IDLE, f"limited: {KIND_TEXT[kind]}")
            out.append(
                ev.LimitHit(
                    at=at,
                    agent=a,
                    kind=kind,
                    resets_at=seen.resets_at if seen is not None else None,
                    ended=True,
                    message=one_line(last) if isinstance(last, str) else "",
                )
            )
    elif hook == "SessionEnd":
        reason = payload.get("reason")
        by_person = left if reason == "prompt_input_exit" else None
        out.extend(session_ended(agent, at, left=by_person, why=reason))
    elif hook not in QUIET_HOOKS:
        raise PayloadError(f"unknown {product} hook {hook!r}")
    return out


# --- limits (docs/limits.md; read on the screens of 2.1.332, tests/harness/samples/limits) ---

#: While Claude Code retries: "✻ 5-hour limit reached · retrying in 4s (10:50pm) · attempt
#: 4/10", "✻ 529 Overloaded · retrying in 7s · attempt 5/10" (the clock time, when shown, is
#: when the plan's limit resets, in local time). While the retry's request is in flight the
#: line reads "✻ 5-hour limit reached · retrying… · attempt 1/4" (no countdown, no clock).
_RETRY = re.compile(
    r"(?P<what>[^·✻●]*?)\s*·\s*retrying(?:\s+in\s+\d+\s*s|\s*…)(?:\s*\((?P<clock>[^)]*)\))?"
    r"\s*·\s*attempt (?P<attempt>\d+)\s*/\s*(?P<attempts>\d+)"
)
#: Claude Code's own automatic continue (claude.ai logins, ``autoContinueAtUsageLimit``):
#: "Continuing automatically at 4:20pm · Esc to cancel", "Usage limit reached · set to
#: continue automatically at 4:20pm".
_AUTO_CONTINUE = re.compile(r"continu(?:e|ing) automatically", re.IGNORECASE)


@dataclass(frozen=True)
class ScreenRetry:
    """A retry of a limit that Claude Code shows while its turn runs."""

    kind: LimitKind
    attempt: int
    attempts: int
    clock: str | None  # the reset, as the screen shows it ("1:38am"), if it does


def limit_kind(text: str) -> LimitKind | None:
    """The limit a text names (a retry line's head, a last message), or None."""
    lowered = text.lower()
    if "5-hour" in lowered or "session limit" in lowered:
        return LimitKind.FIVE_HOUR
    if any(word in lowered for word in ("weekly", "opus limit", "sonnet limit", "7-day")):
        return LimitKind.SEVEN_DAY
    if "overloaded" in lowered or "529" in lowered:
        return LimitKind.OVERLOADED
    if "rate limit" in lowered or "(429)" in lowered:
        return LimitKind.RATE
    return None


def screen_retry(lines: Sequence[str]) -> ScreenRetry | None:
    """The limit retry the screen shows (the lowest such line), or None."""
    for line in reversed(lines):
        match = _RETRY.search(line)
        if match is None:
            continue
        kind = limit_kind(match.group("what"))
        if kind is None:
            return None  # "API error · retrying": not a limit (yet)
        clock = match.group("clock")
        return ScreenRetry(
            kind=kind,
            attempt=int(match.group("attempt")),
            attempts=int(match.group("attempts")),
            clock=clock.strip() if clock else None,
        )
    return None


def auto_continues(lines: Sequence[str]) -> bool:
    """Whether Claude Code shows that it will continue the task itself after the limit."""
    return any(_AUTO_CONTINUE.search(line) for line in lines)


def stop_limit(payload: dict[str, Any], agent: Agent) -> LimitKind | None:
    """The limit a ``StopFailure`` ended the turn on, or None (another error).

    Measured with 2.1.332: ``error`` is ``rate_limit`` for any 429 (the plan's limit or
    not: which one shows only on the screen while it retried, so the kind seen there
    wins), and ``server_error`` for a 529, whose last message says "529 Overloaded".
    """
    error = payload.get("error")
    message = payload.get("last_assistant_message")
    text = f"{message if isinstance(message, str) else ''} {payload.get('error_details') or ''}"
    if error == "rate_limit":
        # The limit seen retrying in this turn, or the one it already waits on (Claude Code
        # can end a turn on it twice: a side request meets it too).
        seen = agent.limit.kind if agent.limit is not None else None
        if seen is not None and seen is not LimitKind.OVERLOADED:
            return seen
        kind = limit_kind(text)
        return kind if kind is not None and kind is not LimitKind.OVERLOADED else LimitKind.RATE
    if error in ("overloaded", "server_error") and limit_kind(text) is LimitKind.OVERLOADED:
        return LimitKind.OVERLOADED
    return None
