"""codex: hooks given as ``-c hooks.<Event>=…`` overrides, trusted for that run only.

Where the hooks live (the choice, and why): codex reads hooks from
``$CODEX_HOME/hooks.json`` and from ``[hooks]`` in its config, and ``-c key=value``
overrides any config key for one invocation.  volee passes its hooks as ``-c
hooks.SessionStart=[…]`` etc., so nothing of the person's is edited and no private
CODEX_HOME is needed (which would hide their login, sessions and settings from codex).
codex skips hooks nobody trusted, silently; ``--dangerously-bypass-hook-trust`` makes it
run enabled hooks for that invocation.  Caveat: it also runs the person's own untrusted
hooks in that session.  Measured with codex-cli 0.171.0: the override hooks fire in the
interactive TUI, ``codex exec`` and ``codex resume``, and the hook commands inherit the
codex process's environment (so ``VOLEE_AGENT`` reaches ``volee hook``).

codex chooses the session id itself (no flag sets it): the SessionStart payload's
``session_id`` links it.  Resume is ``codex resume <id> [PROMPT]``; it keeps the id and
fires SessionStart with ``source: resume``.  The payloads follow Claude Code's schema, so
their meaning is the Claude mapping.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, replace
from typing import Any

from ..core.events import Event, StateChanged
from ..core.model import Agent, LaunchSettings
from ..core.requests import one_line
from .base import Error, LaunchContext, LaunchPlan
from .claude import claude_style_events

HOOK_EVENTS = (
    "SessionStart",
    "UserPromptSubmit",
    "PreToolUse",
    "PermissionRequest",
    "PostToolUse",
    "SubagentStart",
    "SubagentStop",
    "Stop",
    "SessionEnd",
)
LEFT_BY_PERSON = "you left codex"
#: Every value some codex release took for ``--sandbox`` / ``--ask-for-approval``; what the
#: binary at hand accepts is read from its ``--help`` (``accepted_modes``) before a launch.
SANDBOX_MODES = ("read-only", "workspace-write", "danger-full-access")
APPROVAL_POLICIES = ("untrusted", "on-failure", "on-request", "never")
BYPASS = ("bypassPermissions", "bypass")
#: volee's own modes (the ones Claude Code names) mapped to codex's two separate settings:
#: (sandbox, approval policy).  Written down in docs/harnesses.md.
VOLEE_MODES: dict[str, tuple[str, str]] = {
    "default": ("workspace-write", "on-request"),
    "acceptEdits": ("workspace-write", "on-request"),
    # Ask before anything outside a read-only sandbox: the nearest codex has to "ask for all".
    "manual": ("read-only", "on-request"),
    # Look, never touch: a read-only sandbox and no way to ask for more.
    "plan": ("read-only", "never"),
}


def hook_overrides(hook: tuple[str, ...]) -> list[str]:
    """``-c hooks.<Event>=[…]`` arguments: one command hook per event calling the hook shim
    (``hook`` is its argv before the event name, e.g. ``volee hook``)."""
    import shlex

    prefix = " ".join(shlex.quote(part) for part in hook)
    args: list[str] = []
    for name in HOOK_EVENTS:
        # The value is TOML; a JSON string is a valid TOML basic string.
        command = json.dumps(f"{prefix} {name}")
        args += [
            "-c",
            f'hooks.{name}=[{{matcher="", hooks=[{{type="command", command={command}}}]}}]',
        ]
    return args


@dataclass(frozen=True)
class Modes:
    """The values one codex binary accepts for ``--sandbox`` and ``--ask-for-approval``."""

    sandbox: tuple[str, ...]
    approval: tuple[str, ...]


def accepted_modes(help_text: str) -> Modes | None:
    """What ``codex --help`` lists for ``-s`` and ``-a`` (pure; None when it lists neither).

    codex 0.171.0 prints ``[possible values: read-only, workspace-write, danger-full-access]``
    after ``--sandbox`` and a ``Possible values:`` block of ``- on-request: …`` lines after
    ``--ask-for-approval``."""
    sandbox = _values_after(help_text, "--sandbox")
    approval = _values_after(help_text, "--ask-for-approval")
    if not sandbox and not approval:
        return None
    return Modes(tuple(sandbox), tuple(approval))


def _values_after(text: str, flag: str) -> list[str]:
    start = text.find(flag)
    if start < 0:
        return []
    # The option's own block ends where the next option begins.
    rest = text[start + len(flag) :]
    following = re.search(r"\n\s{0,8}(?:-[A-Za-z], )?--[a-z]", rest)
    block = rest[: following.start()] if following else rest
    inline = re.search(r"\[possible values: ([^\]]*)\]", block)
    if inline:
        return [v.strip() for v in inline.group(1).split(",") if v.strip()]
    return re.findall(r"^\s*- ([a-z][a-z-]*):", block, flags=re.MULTILINE)


def permission_args(mode: str | None, accepted: Modes | None = None) -> list[str]:
    """codex's flags for a permission mode: one of volee's modes (mapped to a sandbox and an
    approval policy), a codex sandbox mode, a codex approval policy, or bypass.

    ``accepted`` (from ``accepted_modes``) is what the binary at hand takes; without it every
    value some codex release took is let through."""
    if not mode:
        return []
    if mode in BYPASS:
        return ["--dangerously-bypass-approvals-and-sandbox"]
    sandboxes = accepted.sandbox if accepted is not None else SANDBOX_MODES
    approvals = accepted.approval if accepted is not None else APPROVAL_POLICIES
    if mode in VOLEE_MODES:
        sandbox, approval = VOLEE_MODES[mode]
        if sandbox in sandboxes and approval in approvals:
            return ["-s", sandbox, "-a", approval]
    elif mode in sandboxes:
        return ["-s", mode]
    elif mode in approvals:
        return ["-a", mode]
    allowed = ", ".join(dict.fromkeys((*VOLEE_MODES, *sandboxes, *approvals, "bypassPermissions")))
    this = "this codex" if accepted is not None else "codex"
    raise Error(f"{this} has no permission mode {mode!r}; use one of {allowed}")


class CodexProfile:
    """The codex profile."""

    name = "codex"
    can_resume = True
    # The oldest release tested: hooks as -c overrides and --dangerously-bypass-hook-trust.
    min_version: str | None = "0.171.0"

    def check_modes(self, settings: LaunchSettings, help_text: str, version: str) -> None:
        """Refuse a mode the codex binary at hand does not take, listing what it takes
        (``help_text`` is its ``--help``; codex 0.171 dropped ``untrusted`` and ``on-failure``,
        and exits with a usage error on them)."""
        accepted = accepted_modes(help_text)
        if accepted is None:
            return  # a help volee cannot read: the launch tells
        try:
            permission_args(settings.permission_mode, accepted)
        except Error as exc:
            raise Error(f"{exc} (codex {version})") from None

    def _flags(self, settings: LaunchSettings, ctx: LaunchContext) -> list[str]:
        # --no-daemon: each agent its own codex, no shared background server (which codex keeps
        # running after the session ends: it would outlive every agent volee stops).
        flags = ["--no-daemon", "--dangerously-bypass-hook-trust", *hook_overrides(ctx.hook_argv)]
        flags += permission_args(settings.permission_mode)
        if settings.model:
            flags += ["-m", settings.model]
        return flags + list(settings.argv)

    def launch(self, agent_id: str, settings: LaunchSettings, ctx: LaunchContext) -> LaunchPlan:
        argv = [ctx.binary or "codex", *self._flags(settings, ctx)]
        if settings.prompt:
            argv.append(settings.prompt)
        return LaunchPlan(tuple(argv), dict(settings.env), {}, None)

    def resume(
        self,
        agent_id: str,
        settings: LaunchSettings,
        session: str,
        prompt: str | None,
        ctx: LaunchContext,
    ) -> LaunchPlan:
        argv = [ctx.binary or "codex", "resume", *self._flags(settings, ctx), session]
        if prompt:
            argv.append(prompt)
        return LaunchPlan(tuple(argv), dict(settings.env), {}, session)

    def hook_events(
        self, agent: Agent, hook: str, payload: dict[str, Any], at: float
    ) -> list[Event]:
        return hook_events(agent, hook, payload, at)


def hook_events(agent: Agent, hook: str, payload: dict[str, Any], at: float) -> list[Event]:
    """The events a codex hook means for ``agent`` (pure; Claude Code's schema).

    codex's PermissionRequest gives the command's justification (the reason its dialog
    shows, "Reason: …") as ``tool_input.description``: the request's reason.
    """
    events = claude_style_events(agent, hook, payload, at, left=LEFT_BY_PERSON, product="codex")
    data = payload.get("tool_input")
    why = (
        data.get("description") if hook == "PermissionRequest" and isinstance(data, dict) else None
    )
    if not isinstance(why, str) or not why.strip():
        return events
    return [
        replace(e, request=replace(e.request, reason=one_line(why)))
        if isinstance(e, StateChanged) and e.request is not None
        else e
        for e in events
    ]


# --- limits (docs/limits.md; read on the screen of 0.171.0, tests/harness/samples/limits) ---

#: codex 0.171 fires no hook when a limit ends its turn; its screen says "■ You’ve hit your
#: usage limit. Upgrade to Pro (…) or try again at Dec 2nd, 2026 2:12 AM." (local time).
_LIMIT = re.compile(r"■\s*You.ve hit your usage limit", re.IGNORECASE)
_TRY_AGAIN = re.compile(r"try again at (?P<when>[^.›■•]+)\.")


@dataclass(frozen=True)
class ScreenLimit:
    """codex's usage limit on its screen, with its reset as it says it, local time ("12:12
    AM" later today, "Dec 2nd, 2026 2:12 AM" another day), if it does."""

    clock: str | None


def screen_limit(lines: list[str]) -> ScreenLimit | None:
    """The usage limit codex's screen shows at the end of a turn, or None."""
    text = " ".join(line.strip() for line in lines)
    found = _LIMIT.search(text)
    if found is None:
        return None
    match = _TRY_AGAIN.search(text[found.end() :])
    return ScreenLimit(clock=match["when"].strip() if match else None)
