"""Who may call what (docs/trust-model.md): the rules for agent callers, one per method.

The person (the tray, a CLI in the person's own shell) may call everything.
A caller the daemon cannot identify (``unknown``: its process gone, its pid
reused, its ``/proc`` unreadable) may only read the list (``UNKNOWN_MAY``).
An agent caller (``ipc.caller``: any process that descends from an agent's
program) keeps what seed 002 gives it: messages within the routing rules, its
reports, its own children, presenting its mission's report as coordinator,
joining a mission it was invited to.  Whatever names the acting party in a
request (``sender`` of ``messages.post``, ``agent`` of ``messages.read``…)
must be the caller itself, and is filled in with it when left out.

``authorize`` returns the parameters the handler runs with, or raises
``Forbidden`` saying what the agent tried; the API logs it, records it in the
agent's timeline (``request-refused``) and answers ``forbidden``.  A method
without a rule here is the person's alone, so a new method is safe until
someone decides otherwise.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from ...core import events as ev
from ...core.model import DEFAULT_HARNESS, HUMAN, VOLEE, Agent, Harness, Role
from ...core.registry import Registry
from ...core.validation import coordinates
from ...ipc.caller import Caller
from ...ipc.methods import Method
from ..clock import Clock
from ..errors import Ambiguous, Forbidden, NotFound, Refused
from ..views import resolve_agent, resolve_mission

if TYPE_CHECKING:
    from ..service import Service

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class Request:
    """One request of an agent caller, as the rules see it."""

    method: str
    caller: Caller
    params: dict[str, Any]
    registry: Registry

    @property
    def me(self) -> str:
        assert self.caller.agent is not None
        return self.caller.agent

    @property
    def agent(self) -> Agent | None:
        """The caller's agent (None when it was forgotten while its processes ran)."""
        return self.registry.agents.get(self.me)

    @property
    def name(self) -> str:
        return self.registry.name_of(self.me) or self.me

    def forbid(self, attempt: str, hint: str = "") -> Forbidden:
        how = f" ({self.caller.how})" if self.caller.how else ""
        message = (
            f"forbidden: you are agent {self.name}{how}, and an agent may not {attempt}: "
            "only the person may"
        )
        return Forbidden(attempt, message + (f"; {hint}" if hint else ""))

    def acting_as(self, key: str, what: str) -> dict[str, Any]:
        """The parameters with ``key`` (the acting party) set to the caller; another is refused."""
        given = self.params.get(key)
        if given in (None, ""):
            return {**self.params, key: self.me}
        if given in (HUMAN, VOLEE):
            party = "the person" if given == HUMAN else "volee"
            raise self.forbid(f"{what} as {party}", f"leave out {key!r}: it is always you")
        if self._resolves_to_me(given):
            return {**self.params, key: self.me}
        raise self.forbid(f"{what} as agent {given}", f"leave out {key!r}: it is always you")

    def _resolves_to_me(self, ref: Any) -> bool:
        if not isinstance(ref, str):
            return False
        try:
            return resolve_agent(self.registry, ref).id == self.me
        except (NotFound, Ambiguous):
            return ref == self.me

    def target(self, key: str = "agent") -> Agent:
        ref = self.params.get(key)
        return resolve_agent(self.registry, ref if isinstance(ref, str) else "")

    def own_child(self, what: str) -> dict[str, Any]:
        target = self.target()
        if target.id == self.me:
            # Stopped or forgotten by itself, it would vanish from the person's list unseen.
            raise self.forbid(f"{what} itself", "an agent ends by finishing its task")
        if target.parent != self.me:
            raise self.forbid(
                f"{what} agent {target.name}, which is not its own child",
                "an agent stops, resumes and forgets only the agents it spawned",
            )
        return self.params


Rule = Callable[[Request], dict[str, Any]]


def _anyone(request: Request) -> dict[str, Any]:
    return request.params


def _person_only(what: str, hint: str = "") -> Rule:
    """A method only the person calls; ``what`` may name ``{mission}`` or ``{agent}``."""

    def rule(request: Request) -> dict[str, Any]:
        names = {k: request.params.get(k) or "?" for k in ("mission", "agent")}
        raise request.forbid(what.format(**names), hint)

    return rule


def _hook(request: Request) -> dict[str, Any]:
    # A hook speaks for its own agent only: another agent's state is not its to report.
    return request.acting_as("agent", "report hook events")


def _spawn(request: Request) -> dict[str, Any]:
    params = request.params
    parent = params.get("parent")
    if parent not in (None, "") and not request._resolves_to_me(parent):
        raise request.forbid(
            f"spawn an agent as a child of {parent}", "the agents you spawn are your children"
        )
    mission = params.get("mission")
    if mission not in (None, ""):
        found = resolve_mission(request.registry, str(mission))
        if found.coordinator != request.me:
            raise request.forbid(
                f"spawn an agent into mission {found.id}",
                "only its coordinator spawns its workers (spawn_worker)",
            )
    if params.get("role") == Role.COORDINATOR:
        raise request.forbid("spawn a coordinator", "volee spawns a mission's coordinator")
    _no_harness_flags(request)
    me = request.agent
    mode = me.launch.permission_mode if me is not None and me.launch is not None else None
    given = params.get("permission_mode")
    if given not in (None, "") and given != mode:
        raise request.forbid(
            f"spawn an agent in permission mode {given!r} (its own is {mode!r})",
            "a child runs in its parent's permission mode",
        )
    out = {**params, "parent": request.me}
    if mode is not None:
        out["permission_mode"] = mode
    return out


def _no_harness_flags(request: Request) -> None:
    # Claude Code, codex and pi take extra flags after volee's (a permission mode among
    # them); a generic agent's command is any command, which the agent could run itself.
    harness = request.params.get("harness") or DEFAULT_HARNESS
    if harness != Harness.GENERIC and request.params.get("argv"):
        raise request.forbid(
            f"spawn {harness} with flags of its own ({' '.join(map(str, request.params['argv']))})",
            "a child runs with volee's flags and its parent's permission mode",
        )


def _spawn_worker(request: Request) -> dict[str, Any]:
    _no_harness_flags(request)
    return request.acting_as("agent", "spawn a mission's worker")


def _sees(request: Request) -> dict[str, Any]:
    """Another agent's timeline or screen: only one it may write to (seed 002's routing)."""
    target = request.target()
    if target.id != request.me and request.registry.check_route(request.me, target.id):
        raise request.forbid(
            f"read agent {target.name}'s timeline or screen",
            "an agent sees the agents it may write to: its mission, parent and children",
        )
    return request.params


def _show_mission(request: Request) -> dict[str, Any]:
    mission = resolve_mission(request.registry, str(request.params.get("mission") or ""))
    me = request.agent
    if mission.coordinator == request.me or request.me in mission.invited:
        return request.params
    if me is not None and me.mission == mission.id:
        return request.params
    raise request.forbid(
        f"read mission {mission.id}'s thread, which is not its own",
        "`volee mission ls` lists the missions",
    )


def _send(request: Request) -> dict[str, Any]:
    # The message is the caller's (routing applies: the registry checks it on commit).
    return request.acting_as("sender", "send a message")


def _resume(request: Request) -> dict[str, Any]:
    params = request.own_child("resume")
    target = request.target()
    if target.held:
        raise request.forbid(
            f"resume agent {target.name}, which the person stopped", "only the person lifts a hold"
        )
    if params.get("text"):
        raise request.forbid(
            f"resume agent {target.name} with a message as the person",
            "resume it without text, then write to it with post_message",
        )
    return params


def _tidy(request: Request) -> dict[str, Any]:
    if request.params.get("dry_run") is True:
        return request.params
    raise request.forbid("remove worktrees (tidy)", "`volee tidy --dry-run` only shows them")


def _post(request: Request) -> dict[str, Any]:
    params = request.acting_as("sender", "post a message")
    thread_id = params.get("thread")
    if isinstance(thread_id, str) and thread_id:
        thread = request.registry.threads.get(thread_id)
        me = request.agent
        mine = thread is not None and (
            request.me in thread.parties
            or (thread.mission is not None and me is not None and thread.mission == me.mission)
        )
        if thread is not None and not mine:
            raise request.forbid(
                f"post into thread {thread_id}, which is not one of its own",
                "leave out 'thread': volee picks the right one",
            )
    return params


def _read(request: Request) -> dict[str, Any]:
    given = request.params.get("agent")
    if given == HUMAN:
        raise request.forbid("read the person's messages", "read_messages shows yours")
    return request.acting_as("agent", "read the messages")


def _as_coordinator(what: str) -> Rule:
    def rule(request: Request) -> dict[str, Any]:
        return request.acting_as("agent", what)

    return rule


def _workers(request: Request) -> dict[str, Any]:
    if request.params.get("agent") in (None, "") and request.params.get("mission") in (None, ""):
        return {**request.params, "agent": request.me}
    return request.params


def _invite(request: Request) -> dict[str, Any]:
    mission = resolve_mission(request.registry, str(request.params.get("mission") or ""))
    if mission.coordinator != request.me:
        raise request.forbid(
            f"invite an agent to mission {mission.id}, which it does not coordinate",
            "its coordinator or the person invites",
        )
    return request.params


def _join(request: Request) -> dict[str, Any]:
    params = request.acting_as("agent", "join a mission")
    if coordinates(request.registry, request.me) is not None and params.get("joined") is False:
        raise request.forbid("leave the mission it coordinates")
    return params


RULES: dict[Method, Rule] = {
    # Reading: anyone, but other agents' timelines and screens and other missions' threads
    # only as far as routing reaches (they carry the person's messages).
    Method.AGENTS_LIST: _anyone,
    Method.AGENTS_GET: _anyone,
    Method.AGENTS_TIMELINE: _sees,
    Method.AGENTS_SCREEN: _sees,
    Method.AGENTS_OUTPUT: _sees,
    Method.AGENTS_LOG: _sees,
    Method.AGENTS_CHANGES: _anyone,
    Method.AGENTS_OUTCOME: _anyone,
    Method.AGENTS_HARNESSES: _anyone,
    Method.DAEMON_STATUS: _anyone,
    Method.DISCOVERY_REFRESH: _anyone,
    Method.MISSIONS_LIST: _anyone,
    Method.MISSIONS_SHOW: _show_mission,
    Method.MISSIONS_CHECK: _anyone,
    Method.MISSIONS_WORKERS: _workers,
    Method.CALLER: _anyone,
    # An MCP relay's session: it speaks for the caller (daemon/serving/mcphub.py).
    Method.MCP_SESSION: _anyone,
    # Its own hooks, messages, children, missions.
    Method.HOOK: _hook,
    Method.AGENTS_SPAWN: _spawn,
    Method.AGENTS_SEND: _send,
    Method.AGENTS_STOP: lambda r: r.own_child("stop"),
    Method.AGENTS_FORGET: lambda r: r.own_child("forget"),
    Method.AGENTS_RESUME: _resume,
    Method.AGENTS_ATTACH_INFO: lambda r: r.own_child("attach to"),
    Method.MESSAGES_POST: _post,
    Method.MESSAGES_READ: _read,
    Method.MISSIONS_REQUEST_APPROVAL: _as_coordinator("present a mission's report"),
    Method.MISSIONS_SPAWN_WORKER: _spawn_worker,
    Method.MISSIONS_INVITE: _invite,
    Method.MISSIONS_JOIN: _join,
    Method.TIDY: _tidy,
    # The person's alone (also every method not named here).
    Method.MISSIONS_ANSWER: _person_only("answer mission {mission}'s report as the person"),
    Method.MISSIONS_CREATE: _person_only(
        "create a mission", "ask the person for one with post_message"
    ),
    Method.AGENTS_SEEN: _person_only("mark agent {agent} seen as the person"),
    Method.AGENTS_ALLOW: _person_only("allow agent {agent}'s request as the person"),
    Method.AGENTS_DENY: _person_only("deny agent {agent}'s request as the person"),
    Method.AGENTS_ANSWER: _person_only("answer agent {agent}'s question as the person"),
    Method.MISSIONS_EVIDENCE: _person_only(
        "record delivery evidence for agent {agent}", "volee reads it from git itself"
    ),
    Method.SUBSCRIBE_INTERACTIVE: _person_only("subscribe as the person's interface"),
    Method.SUBSCRIBE: _person_only(
        "subscribe to every event (it carries the person's messages)",
        "`volee ls` and `volee timeline` read what you need",
    ),
    Method.DAEMON_STOP: _person_only("stop the daemon"),
    # Settings of config.toml that lower safety (daemon/serving/safety.py): an agent may write the
    # file, never confirm it.  Reading what waits is anyone's.
    Method.CONFIG_UNCONFIRMED: _anyone,
    Method.CONFIG_CONFIRM: _person_only(
        "confirm settings of config.toml that lower safety",
        "the person confirms them from their own shell (`volee config confirm`) or the app",
    ),
    Method.AGENTS_MERGE: _person_only(
        "merge agent {agent}'s change", "report your work: the person merges it"
    ),
    Method.AGENTS_DISCARD: _person_only("discard agent {agent}'s worktree and branch"),
    Method.AGENTS_OPEN_PR: _person_only(
        "open a pull request of agent {agent}'s branch", "report your work: the person opens it"
    ),
}


KNOWN = frozenset(Method)

#: What a caller the daemon cannot identify may call: reading the list, nothing that acts or
#: speaks for anyone (an agent gets more: its messages, its hooks, its children).
UNKNOWN_MAY = frozenset(
    {
        Method.AGENTS_LIST,
        Method.AGENTS_GET,
        Method.AGENTS_CHANGES,
        Method.DAEMON_STATUS,
        Method.MISSIONS_LIST,
        Method.MISSIONS_CHECK,
        Method.CALLER,
    }
)


def _unidentified(method: str, caller: Caller, params: dict[str, Any]) -> dict[str, Any]:
    if method in UNKNOWN_MAY:
        return params
    attempt = f"call {method} as a caller volee cannot identify"
    raise Forbidden(
        attempt,
        f"forbidden: volee cannot tell who is calling ({caller.how or 'no pid'}); a caller it "
        f"cannot identify is never taken for the person and may not call {method}. Call "
        "again from a process that waits for its answer (the person's shell, the tray)",
    )


def authorize(
    method: str, caller: Caller, params: dict[str, Any], registry: Registry
) -> dict[str, Any]:
    """The parameters ``method`` runs with for ``caller``; ``Forbidden`` when it may not."""
    if caller.is_person:
        return params
    if not caller.is_agent:
        return _unidentified(method, caller, params)
    request = Request(method, caller, params, registry)
    rule = RULES.get(Method(method)) if method in KNOWN else None
    if rule is None:
        raise request.forbid(f"call {method}", "only the person's interfaces use it")
    return rule(request)


class Audit:
    """Refusals: logged with the caller's identity, and kept in the agent's timeline.

    The same refusal again within ``window`` seconds (a relay or a script that retries) is
    logged but recorded once, so that a loop cannot fill the log.
    """

    def __init__(self, service: Service, clock: Clock, window: float = 30.0) -> None:
        self.service = service
        self.clock = clock
        self.window = window
        self._last: dict[tuple[str, str, str], float] = {}
        #: Refusals of callers volee could not identify (no timeline to keep them in).
        self.unidentified = 0
        self.last_unidentified = ""

    def status(self) -> dict[str, Any]:
        """For ``daemon status``: the refusals of callers no one could be named for."""
        return {"refused": self.unidentified, "last": self.last_unidentified}

    async def claimed(self, caller: Caller, method: str) -> None:
        """An agent whose environment names someone else (``VOLEE_AGENT``): it stays itself,
        and the claim is kept in its timeline."""
        claim = caller.claim
        if claim is None or caller.agent is None:
            return
        registry = self.service.registry
        who = {HUMAN: "the person", VOLEE: "volee"}.get(claim)
        if who is None:
            who = f"agent {registry.name_of(claim) or claim}"
        await self.record(
            caller, method, f"claimed to be {who} (VOLEE_AGENT={claim[:40]} in its environment)"
        )

    async def refused(self, caller: Caller, method: str, refused: Forbidden) -> None:
        """An agent tried what only the person may do."""
        await self.record(caller, method, f"tried to {refused.attempt}")

    async def record(self, caller: Caller, method: str, reason: str) -> None:
        """A refused request of ``caller`` (an agent), with the reason in words."""
        log.warning("refused %s to %s: %s", method, caller, reason)
        if caller.agent is None:
            # No agent to keep it for: the daemon's log above and its status count it.
            self.unidentified += 1
            self.last_unidentified = f"{method} ({caller})"
            return
        key = (caller.agent, method, reason)
        now = self.clock.now()
        last = self._last.get(key)
        if last is not None and now - last < self.window:
            return
        if len(self._last) > 1000:
            self._last = {k: t for k, t in self._last.items() if now - t < self.window}
        self._last[key] = now
        event = ev.RequestRefused(at=now, agent=caller.agent, method=method, reason=reason)
        try:
            await self.service.commit([event])
        except Refused as exc:  # a forgotten agent: the log line above is all there is
            log.warning("the refusal of %s to %s is not in a timeline: %s", method, caller, exc)


__all__ = ["RULES", "UNKNOWN_MAY", "Audit", "Request", "authorize"]
