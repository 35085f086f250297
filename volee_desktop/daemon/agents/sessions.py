"""Starting an agent's session again: its settings, whether its conversation can continue, and
what a new session replacing a lost one is told (recovery.md, row 9)."""

from __future__ import annotations

import asyncio
import logging
import os

from ...core.model import Agent, LaunchSettings
from ...harness.base import ConversationProbe, Profile
from ...harness.env import allowed_env

log = logging.getLogger(__name__)

#: volee's prompt for a new session replacing one that was killed before it saved anything:
#: it claims no memory of the lost turn.
FRESH_SESSION_NOTICE = (
    "[volee] Your previous session ended before it saved anything; this is a new session "
    "in the same folder. Check the state of the work before continuing."
)
#: Added when the lost session's task never got anywhere (see :func:`lost_task`).
TASK_AGAIN = "None of your tools had started, so here is the task you were started with, again:"


def launch_settings(agent: Agent) -> LaunchSettings:
    """The settings to start ``agent`` with: those of its launch, or, for an agent volee only
    watched, the daemon's environment (allow-listed), like one spawned from its shell."""
    return agent.launch or LaunchSettings(
        harness=agent.harness, cwd=agent.cwd, env=allowed_env(dict(os.environ))
    )


def lost_task(agent: Agent, settings: LaunchSettings) -> str | None:
    """The task volee launched ``agent`` with, when none of it can have run: its session saved
    nothing and no tool of the agent ever started (volee hears each one before it runs).

    recovery.md, row 9: a session its harness never wrote runs its first task again. Claude
    Code writes its conversation through a queue, so a session killed just after its first
    prompt is such a session even though it reported itself.
    """
    if not agent.launched_by_volee or agent.activity_at is not None:
        return None
    return settings.prompt or None


def fresh_notice(task: str | None) -> str:
    """volee's notice opening a new session that replaces a lost one (recorded as volee's)."""
    if not task:
        return FRESH_SESSION_NOTICE
    return f"{FRESH_SESSION_NOTICE} {TASK_AGAIN}\n\n{task}"


def fresh_prompt(prompt: str | None, task: str | None = None) -> str:
    """The first prompt of a new session replacing a lost one: volee's notice (with the task
    that never got anywhere, if any), then the person's message if there is one (volee's own
    resume prompt would claim a memory)."""
    notice = fresh_notice(task)
    if prompt is None or prompt.startswith("[volee]"):
        return notice
    return f"{notice}\n\n{prompt}"


async def can_continue(profile: Profile, session: str, settings: LaunchSettings) -> bool:
    """Whether ``session`` left a conversation to resume; when it did not (its program was
    killed before writing any), a new session is the only way to start it again."""
    if not isinstance(profile, ConversationProbe):
        return True
    found = await asyncio.to_thread(profile.has_conversation, session, settings)
    if not found:
        log.info("session %s has no conversation to resume: starting a new one", session)
    return found
