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
from typing import Any

from ..core.events import Event
from ..core.model import Agent, LaunchSettings
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
SANDBOX_MODES = ("read-only", "workspace-write", "danger-full-access")
APPROVAL_POLICIES = ("untrusted", "on-failure", "on-request", "never")
BYPASS = ("bypassPermissions", "bypass")


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


def permission_args(mode: str | None) -> list[str]:
    """codex's flags for a permission mode: a sandbox mode, an approval policy, or bypass."""
    if not mode:
        return []
    if mode in BYPASS:
        return ["--dangerously-bypass-approvals-and-sandbox"]
    if mode in SANDBOX_MODES:
        return ["-s", mode]
    if mode in APPROVAL_POLICIES:
        return ["-a", mode]
    allowed = ", ".join((*SANDBOX_MODES, *APPROVAL_POLICIES, "bypassPermissions"))
    raise Error(f"codex has no permission mode {mode!r}; use one of {allowed}")


class CodexProfile:
    """The codex profile."""

    name = "codex"
    can_resume = True
    # The oldest release tested: hooks as -c overrides and --dangerously-bypass-hook-trust.
    min_version: str | None = "0.171.0"

    def _flags(self, settings: LaunchSettings, ctx: LaunchContext) -> list[str]:
        flags = ["--dangerously-bypass-hook-trust", *hook_overrides(ctx.hook_argv)]
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
    """The events a codex hook means for ``agent`` (pure; Claude Code's schema)."""
    return claude_style_events(agent, hook, payload, at, left=LEFT_BY_PERSON, product="codex")
