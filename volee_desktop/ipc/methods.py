"""Every method of the daemon's API, named once (docs/ipc.md).

The daemon registers its handlers under these names, ``daemon/serving/access.py`` writes its
rules for them, and the CLI and the app call them: a method renamed here is renamed for all,
and a name no one declared is caught by mypy instead of answering ``unknown_method``.  The
values are the names on the wire (a ``Method`` is a ``str``: it encodes as its value).

The stdlib-only entry points (``cli/hookshim.py``, ``mcp/relay.py``) load nothing of volee's
and write the one name they send as a literal; ``tests/daemon/test_methods.py`` checks it.
"""

from __future__ import annotations

from enum import StrEnum, unique

from ..core.answer import AnswerMethod


@unique
class Method(StrEnum):
    """A method of the daemon's API; its value is the name on the wire."""

    # The agents: the list, one agent, what it did and shows, what it is told.
    AGENTS_LIST = "agents.list"
    AGENTS_GET = "agents.get"
    AGENTS_TIMELINE = "agents.timeline"
    AGENTS_SCREEN = "agents.screen"
    AGENTS_OUTPUT = "agents.output"
    AGENTS_LOG = "agents.log"
    AGENTS_CHANGES = "agents.changes"
    AGENTS_OUTCOME = "agents.outcome"
    AGENTS_HARNESSES = "agents.harnesses"
    AGENTS_SPAWN = "agents.spawn"
    AGENTS_SEND = "agents.send"
    AGENTS_STOP = "agents.stop"
    AGENTS_FORGET = "agents.forget"
    AGENTS_RESUME = "agents.resume"
    AGENTS_CONTINUE = "agents.continue"
    AGENTS_SEEN = "agents.seen"
    AGENTS_ATTACH_INFO = "agents.attach_info"
    AGENTS_MERGE = "agents.merge"
    AGENTS_DISCARD = "agents.discard"
    AGENTS_OPEN_PR = "agents.open_pr"
    # Answering an agent's request (daemon/agents/answers.py).
    # The three that carry an answer are the core's (core/answer.py: an Answer renders its call).
    AGENTS_ALLOW = AnswerMethod.ALLOW.value
    AGENTS_DENY = AnswerMethod.DENY.value
    AGENTS_ANSWER = AnswerMethod.ANSWER.value
    AGENTS_KEYS = "agents.keys"
    # Missions and their messages.
    MISSIONS_CREATE = "missions.create"
    MISSIONS_LIST = "missions.list"
    MISSIONS_SHOW = "missions.show"
    MISSIONS_CHECK = "missions.check"
    MISSIONS_EVIDENCE = "missions.evidence"
    MISSIONS_SPAWN_WORKER = "missions.spawn_worker"
    MISSIONS_WORKERS = "missions.workers"
    MISSIONS_JOIN = "missions.join"
    MISSIONS_INVITE = "missions.invite"
    MISSIONS_REQUEST_APPROVAL = "missions.request_approval"
    MISSIONS_ANSWER = "missions.answer"
    MESSAGES_POST = "messages.post"
    MESSAGES_READ = "messages.read"
    TIDY = "tidy"
    # The other machines (docs/machines.md).
    MACHINE_HELLO = "machine.hello"
    MACHINES_LIST = "machines.list"
    MACHINES_RELOAD = "machines.reload"
    # The daemon itself, its settings, its clients.
    HOOK = "hook"
    CALLER = "caller"
    DAEMON_STATUS = "daemon.status"
    DAEMON_STOP = "daemon.stop"
    DISCOVERY_REFRESH = "discovery.refresh"
    CONFIG_UNCONFIRMED = "config.unconfirmed"
    CONFIG_CONFIRM = "config.confirm"
    SUBSCRIBE = "subscribe"
    SUBSCRIBE_INTERACTIVE = "subscribe.interactive"
    MCP_SESSION = "mcp.session"
    DESKTOP_PEER = "desktop.peer"


__all__ = ["Method"]
