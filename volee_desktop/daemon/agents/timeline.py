"""An agent's timeline: its events in order, each with one line a person can read."""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable
from typing import NotRequired, TypedDict, cast

from ...core import events as ev
from ...core.limits import KIND_TEXT
from ...core.model import Interruption
from ...store.codec import event_to_dict

#: How the timeline marks what came from a spool file (``HookSpooled``): no connection vouched.
UNVERIFIED = "unverified (from the spool)"


class TimelineItem(TypedDict):
    """One item of ``agents.timeline``: an event's fields as ``store.codec.event_to_dict``
    writes them (each type its own, beside these), its sequence number and a sentence."""

    type: str
    at: float
    seq: int
    text: str
    #: The agent it is of (the events of one agent; a message's are its sender, recipients).
    agent: NotRequired[str]
    #: Recorded from the spool after the daemon was down: nothing vouches for it.
    unverified: NotRequired[bool]


CAUSES = {
    Interruption.MACHINE_RESTARTED: "the machine restarted",
    Interruption.HOST_STOPPED: "volee's host was stopped",
    Interruption.CRASHED: "its process died without ending its session",
}


def limit_line(event: ev.LimitHit) -> str:
    """ "turn ended on the 5-hour limit (resets 16:20)", "retrying the 5-hour limit (4/10)"."""
    what = KIND_TEXT[event.kind]
    resets = (
        f" (resets {time.strftime('%H:%M', time.localtime(event.resets_at))})"
        if event.resets_at is not None
        else " (reset time not known)"
    )
    if event.ended:
        return f"turn ended on the {what}{resets}"
    tries = f", attempt {event.attempt}/{event.attempts}" if event.attempt else ""
    return f"retrying the {what}{tries}{resets if event.resets_at is not None else ''}"


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
        case ev.LimitHit():
            return limit_line(event)
        case ev.LimitContinued():
            who_did = "volee" if event.automatic else "you"
            return f"continued by {who_did} after its limit: {event.prompt}"
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
        case ev.HookSpooled():
            n = f"{event.events} event" + ("s" if event.events != 1 else "")
            return f"{UNVERIFIED}: a {event.hook} hook, {n}; no connection said who wrote it"
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
) -> list[TimelineItem]:
    """The timeline items for ``agent_id`` from (seq, event) pairs."""
    out = []
    unverified_until = 0  # the events a HookSpooled just before them vouches nothing for
    for seq, event in entries:
        if concerns(event, agent_id):
            fields = event_to_dict(event)
            fields["seq"] = seq
            fields["text"] = describe(event, name_of)
            item = cast(TimelineItem, fields)
            if isinstance(event, ev.HookSpooled):
                unverified_until = seq + event.events
            elif seq <= unverified_until:
                item["unverified"] = True
                item["text"] = f"{UNVERIFIED}: {item['text']}"
            out.append(item)
    return out
