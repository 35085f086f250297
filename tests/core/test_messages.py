"""Conversations: threads, messages, receipts, questions and the human's answer."""

from __future__ import annotations

from volee_desktop.core import events as ev
from volee_desktop.core.model import HUMAN, VOLEE, MessageKind, Receipt, ThreadKind

from .support import (
    A1,
    A2,
    M1,
    T0,
    TH,
    accepted,
    given,
    message_id,
    posted,
    registered,
    thread,
    thread_id,
    when,
)

Q = message_id(1)


def _asked(*more: ev.Event) -> tuple[ev.Event, ...]:
    question = posted(
        Q, A1, HUMAN, kind=MessageKind.QUESTION, options=("merge", "wait"), approving="merge"
    )
    return (registered(A1, "coord"), registered(A2, "other"), thread(), question, *more)


def test_message_posted_has_one_empty_receipt_per_recipient() -> None:
    registry = given(registered(A1), thread())
    accepted(registry, posted(message_id(1), HUMAN, A1, VOLEE, at=T0 + 1))
    message = registry.messages[message_id(1)]
    assert message.receipts == {A1: Receipt(), VOLEE: Receipt()}
    assert message.at == T0 + 1


def test_message_delivered_and_read_receipts() -> None:
    registry = given(registered(A1), thread(), posted(message_id(1), HUMAN, A1))
    accepted(registry, ev.MessageDelivered(at=T0 + 1, message=message_id(1), recipient=A1))
    assert registry.messages[message_id(1)].receipts[A1] == Receipt(delivered_at=T0 + 1)
    accepted(registry, ev.MessageRead(at=T0 + 2, message=message_id(1), recipient=A1))
    assert registry.messages[message_id(1)].receipts[A1] == Receipt(
        delivered_at=T0 + 1, read_at=T0 + 2
    )


def test_message_read_implies_delivered() -> None:
    registry = given(registered(A1), thread(), posted(message_id(1), A1, HUMAN))
    accepted(registry, ev.MessageRead(at=T0 + 3, message=message_id(1), recipient=HUMAN))
    assert registry.messages[message_id(1)].receipts[HUMAN] == Receipt(
        delivered_at=T0 + 3, read_at=T0 + 3
    )


def test_receipts_for_a_non_recipient_or_an_unknown_message_are_refused() -> None:
    registry = given(registered(A1), registered(A2), thread(), posted(message_id(1), HUMAN, A1))
    for event in (
        ev.MessageDelivered(at=T0, message=message_id(1), recipient=A2),
        ev.MessageRead(at=T0, message=message_id(1), recipient=HUMAN),
        ev.MessageDelivered(at=T0, message=message_id(9), recipient=A1),
    ):
        assert when(registry, event) is not None


def test_a_question_needs_options() -> None:
    registry = given(registered(A1), thread())
    reason = when(registry, posted(Q, A1, HUMAN, kind=MessageKind.QUESTION))
    assert reason is not None
    assert "options" in reason


def test_the_approving_option_must_be_one_of_the_options() -> None:
    registry = given(registered(A1), thread())
    reason = when(
        registry,
        posted(Q, A1, HUMAN, kind=MessageKind.QUESTION, options=("a", "b"), approving="c"),
    )
    assert reason is not None
    assert "'c'" in reason


def test_answer_to_gives_the_humans_latest_answer_only() -> None:
    registry = given(*_asked())
    assert registry.answer_to(Q) is None
    accepted(
        registry,
        posted(
            message_id(2), HUMAN, A1, at=T0 + 1, kind=MessageKind.ANSWER, reply_to=Q, chosen="wait"
        ),
    )
    accepted(
        registry,
        posted(
            message_id(3), HUMAN, A1, at=T0 + 2, kind=MessageKind.ANSWER, reply_to=Q, chosen="merge"
        ),
    )
    # An agent's reply to the question is not the human's answer, even when later.
    accepted(registry, posted(message_id(4), A1, HUMAN, at=T0 + 3, reply_to=Q, chosen="wait"))
    answer = registry.answer_to(Q)
    assert answer is not None
    assert answer.id == message_id(3)
    assert answer.chosen == "merge"


def test_answer_to_does_not_depend_on_arrival_order() -> None:
    late = posted(message_id(5), HUMAN, A1, at=T0 + 9, reply_to=Q, chosen="merge")
    early = posted(message_id(6), HUMAN, A1, at=T0 + 1, reply_to=Q, chosen="wait")
    one = given(*_asked(late, early)).answer_to(Q)
    other = given(*_asked(early, late)).answer_to(Q)
    assert one is not None
    assert one == other
    assert one.id == message_id(5)


def test_message_posted_refusals() -> None:
    registry = given(*_asked())
    for event, words in [
        (posted(Q, HUMAN, A1), "already used"),
        (posted("msg_1", HUMAN, A1), "msg_ ULID"),
        (posted(message_id(2), HUMAN), "recipient"),
        (posted(message_id(2), HUMAN, A1, reply_to=message_id(99)), "reply to unknown"),
        (posted(message_id(2), "ag_nope", HUMAN), "sender"),
        (
            ev.MessagePosted(
                at=T0, message=message_id(2), thread=thread_id(9), sender=HUMAN, recipients=(A1,)
            ),
            "unknown thread",
        ),
    ]:
        reason = when(registry, event)
        assert reason is not None
        assert words in reason


def test_thread_opened_refusals() -> None:
    registry = given(thread())
    assert "already used" in (when(registry, thread(TH)) or "")
    assert "th_ ULID" in (when(registry, thread("th_1")) or "")
    opened = ev.ThreadOpened(at=T0, thread=thread_id(2), kind=ThreadKind.MISSION, mission=M1)
    assert "unknown mission" in (when(registry, opened) or "")


def test_a_receipt_keeps_its_first_delivery() -> None:
    # Delivered again later (a retry, a second device): the message was delivered at first
    # delivery, and never read before it was delivered.
    registry = given(registered(A1), thread(), posted(message_id(1), HUMAN, A1))
    accepted(registry, ev.MessageDelivered(at=T0 + 1, message=message_id(1), recipient=A1))
    accepted(registry, ev.MessageRead(at=T0 + 2, message=message_id(1), recipient=A1))
    accepted(registry, ev.MessageDelivered(at=T0 + 3, message=message_id(1), recipient=A1))
    assert registry.messages[message_id(1)].receipts[A1] == Receipt(
        delivered_at=T0 + 1, read_at=T0 + 2
    )
