"""An agent's timeline: its events in order, each with one line a person can read."""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any

from ..core import events as ev
from ..store.codec import event_to_dict

CAUSES = {
    "machine-restarted": "the machine restarted",
    "host-stopped": "volee's host was stopped",
    "crashed": "its process died without ending its session",
}


def describe(event: ev.Event, name_of: Callable[[str], str | None] = lambda _i: None) -> str:
    """One line for a person (``name_of`` turns agent ids into names)."""

    def who(party: str) -> str:
        return name_of(party) or party

    match event:
        case ev.AgentRegistered():
            return f"registered as {event.name} ({event.harness})"
        case ev.SessionLinked():
            return f"session {event.session} {event.how}"
        case ev.StateChanged():
            text = f"{event.state}" + (f": {event.detail}" if event.detail else "")
            if event.request is not None and event.request.summary != event.detail:
                text += f" ({event.request.summary})"
            return text
        case ev.RequestAnswered():
            return f"request answered by {who(event.by)}: {event.answer}"
        case ev.ActivityRecorded():
            return event.activity
        case ev.StopRequested():
            return f"stopped by {event.by}" + (f" ({event.reason})" if event.reason else "")
        case ev.HostStarted():
            auto = "automatically " if event.automatic else ""
            why = f": {event.reason}" if event.reason else ""
            return f"host {auto}started ({event.how}, pid {event.program_pid}){why}"
        case ev.HostAdopted():
            return f"host {event.host_pid} re-adopted after a daemon start"
        case ev.HostSuspect():
            aside = f" (record kept as {event.set_aside})" if event.set_aside else ""
            return (
                f"host record suspect, not adopted: {event.reason}; pid {event.host_pid} was "
                f"neither signalled nor talked to{aside}"
            )
        case ev.ProgramExited():
            return f"program {event.description}" + (" during a turn" if event.during_turn else "")
        case ev.InterruptionDetected():
            cause = CAUSES.get(event.cause, event.cause)
            return f"interrupted: {cause} while {event.state}"
        case ev.RecoveryDecided():
            return f"recovery: {event.outcome} (rule {event.rule}): {event.reason}"
        case ev.RestartScheduled():
            return f"{event.reason}; automatic restart {event.attempt} of {event.budget} scheduled"
        case ev.RestartCancelled():
            return f"waiting restart cancelled: {event.reason}"
        case ev.RestartBudgetReset():
            return "restart budget given back after a normal turn"
        case ev.AgentForgotten():
            return "forgotten"
        case ev.AgentRenamed():
            return f"renamed to {event.name}"
        case ev.MessagePosted():
            to = ", ".join(who(r) for r in event.recipients)
            return f"{event.kind} from {who(event.sender)} to {to}: {one_line(event.body)}"
        case ev.WorkerAssessed():
            why = f": {event.reason}" if event.reason else ""
            return f"mission {event.mission}: judged {event.verdict}{why}"
        case ev.MessageDelivered():
            return f"message {event.message} delivered to {who(event.recipient)}"
        case ev.MessageRead():
            return f"message {event.message} read by {who(event.recipient)}"
        case ev.DeliveryUpdated():
            d = event.delivery
            return f"delivery: {d.commits} commits, {d.pushed}, clean={d.clean}"
        case ev.MembershipChanged():
            return f"{'joined' if event.joined else 'left'} mission {event.mission}"
        case ev.MissionInvited():
            return f"invited to mission {event.mission} by {who(event.by)}"
        case ev.RequestRefused():
            return f"refused: {event.reason}"
        case _:
            return event.TYPE


def one_line(text: str, limit: int = 80) -> str:
    """The first line of a message, shortened."""
    first = text.strip().splitlines()[0] if text.strip() else ""
    return first if len(first) <= limit else first[: limit - 1] + "…"


def concerns(event: ev.Event, agent_id: str) -> bool:
    """Whether an event belongs on an agent's timeline."""
    if isinstance(event, ev.AgentEvent):
        return event.agent == agent_id
    if isinstance(event, ev.MessagePosted):
        return event.sender == agent_id or agent_id in event.recipients
    if isinstance(event, ev.MessageDelivered | ev.MessageRead):
        return event.recipient == agent_id
    if isinstance(event, ev.WorkerAssessed):
        return event.agent == agent_id
    return False


def timeline(
    entries: Iterable[tuple[int, ev.Event]],
    agent_id: str,
    name_of: Callable[[str], str | None] = lambda _i: None,
) -> list[dict[str, Any]]:
    """The timeline items for ``agent_id`` from (seq, event) pairs."""
    out = []
    for seq, event in entries:
        if concerns(event, agent_id):
            item = event_to_dict(event)
            item["seq"] = seq
            item["text"] = describe(event, name_of)
            out.append(item)
    return out
