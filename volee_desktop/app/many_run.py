"""An action on several selected agents: one confirmation with their count, then one daemon
call each and one line for all of them (stop, resume, forget: ``many.plan``), or Allow on
each whose permission the person read whole (``many_allow.allow_plan``).  The controller
builds ``ManyActions`` with what it needs; the list's ``many`` signal comes here."""

from __future__ import annotations

from collections.abc import Callable

from ..ipc.methods import Method
from . import feedback, many
from .attention import answer_call
from .calls import Calls
from .errors import LinkError
from .many_allow import allow_plan


class ManyActions:
    """Runs an action on the selected agents (``run``), Allow on them (``allow``)."""

    def __init__(self, calls: Calls, confirm: Callable[[str, str], bool]) -> None:
        self.calls = calls
        self.confirm = confirm

    def run(self, action: str, agent_ids: list[str]) -> None:
        """Stop, resume or forget the selected agents: one confirmation with their count,
        then one call each, and one line for all of them."""
        registry = self.calls.registry()
        agents = [a for i in agent_ids if (a := registry.agents.get(i)) is not None]
        if action == "allow":
            self.allow(agent_ids)
            return
        chosen = many.plan(action, agents)
        if chosen is None:
            return
        if not chosen.agents:
            self.calls.said(
                f"None of the {len(agents)} selected agents can be told to {action}.", None
            )
            return
        if not self.confirm(chosen.title, chosen.message):
            return
        ids = [a.id for a in chosen.agents]

        async def calls() -> None:
            started = self.calls.monotonic()
            failures: list[str] = []
            for agent_id in ids:
                try:
                    await self.calls.link().call(chosen.method, {"agent": agent_id})
                except LinkError as exc:
                    failures.append(f"{registry.name_of(agent_id) or agent_id}: {exc}")
            self.calls.called(chosen.method)
            done = feedback.counted(chosen.method, len(ids) - len(failures))
            if failures:
                self.calls.failed(f"{done} {len(failures)} failed", "; ".join(failures))
            else:
                self.calls.said(done, started)

        self.calls.tasks.spawn(calls(), f"{action} {len(ids)} agents")

    def allow(self, agent_ids: list[str]) -> None:
        """Allow what each selected agent asks: only when all ask a permission whose line is
        whole (app/many_allow.py), else the reason in the status line; one confirmation
        listing each command, then each answer naming its request (the daemon verifies it on
        that agent's screen, as a single Allow)."""
        registry = self.calls.registry()
        agents = [a for i in agent_ids if (a := registry.agents.get(i)) is not None]
        chosen = allow_plan(agents)
        if chosen is None or not chosen.offered:
            self.calls.said(
                chosen.refusal or "" if chosen else "None of the selected agents asks.", None
            )
            return
        if not self.confirm(chosen.title, chosen.message):
            return
        calls = [answer_call(agent_id, request, "allow") for agent_id, request in chosen.calls]
        for agent_id, _request in chosen.calls:
            self.calls.withdraw(agent_id)

        async def send() -> None:
            started = self.calls.monotonic()
            failures: list[str] = []
            for method, params in calls:
                agent_id = str(params["agent"])
                agent = self.calls.registry().agents.get(agent_id)
                name = registry.name_of(agent_id) or agent_id
                if agent is None or agent.request is None or agent.request.id != params["request"]:
                    failures.append(f"{name}: it now asks something else, or nothing")
                    continue
                try:
                    await self.calls.link().call(method, params)
                except LinkError as exc:
                    failures.append(f"{name}: {exc}")
            self.calls.called(Method.AGENTS_ALLOW)
            done = f"Allowed {len(calls) - len(failures)} requests."
            if failures:
                self.calls.failed(f"{done} {len(failures)} not answered", "; ".join(failures))
            else:
                self.calls.said(done, started)

        self.calls.tasks.spawn(send(), f"allow {len(calls)} requests")
