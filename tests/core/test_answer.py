"""One answer value: every form parses from its word, renders to the wire and back."""

from __future__ import annotations

from typing import Any

import pytest

from volee_desktop.core.answer import Answer, AnswerError, AnswerKind, AnswerMethod

#: Every form: the value, its word (with the text beside it), its call on the wire.
FORMS: list[tuple[Answer, str, str | None, str, dict[str, Any]]] = [
    (Answer.allow(), "allow", None, "agents.allow", {"always": False}),
    (Answer.allow(always=True), "allow-always", None, "agents.allow", {"always": True}),
    (Answer.deny(), "deny", None, "agents.deny", {}),
    (Answer.deny("not now"), "deny", "not now", "agents.deny", {"reason": "not now"}),
    (Answer.pick(1), "option:1", None, "agents.answer", {"option": 1}),
    (Answer.pick(12), "option:12", None, "agents.answer", {"option": 12}),
    (Answer.reply(" MySQL "), "reply", " MySQL ", "agents.answer", {"text": " MySQL "}),
]


@pytest.mark.parametrize(("answer", "word", "text", "method", "params"), FORMS)
def test_every_form_renders_and_parses_back(
    answer: Answer, word: str, text: str | None, method: str, params: dict[str, Any]
) -> None:
    assert answer.word == word
    assert Answer.parse(word, text) == answer
    assert answer.method == method
    assert answer.params() == params
    assert answer.call("ag_1", "rq_1") == (method, {"agent": "ag_1", "request": "rq_1", **params})
    assert answer.call("ag_1") == (method, {"agent": "ag_1", **params})
    assert Answer.from_call(*answer.call("ag_1", "rq_1")) == answer


def test_the_kinds_are_the_recorded_words() -> None:
    assert [str(k) for k in AnswerKind] == ["allow", "allow-always", "deny", "option", "reply"]
    assert [k for k in AnswerKind if k.permission] == [
        AnswerKind.ALLOW,
        AnswerKind.ALLOW_ALWAYS,
        AnswerKind.DENY,
    ]
    assert list(AnswerMethod) == ["agents.allow", "agents.deny", "agents.answer"]


def test_a_reason_is_stripped_and_a_reply_kept_as_typed() -> None:
    assert Answer.deny("  not now \n").reason == "not now"
    assert Answer.deny("   ") == Answer.deny()
    assert Answer.parse("deny", "  later ") == Answer(AnswerKind.DENY, reason="later")
    assert Answer.reply("  two words ").text == "  two words "


def test_old_clients_calls_still_decode() -> None:
    # What the CLI, the app and bench sent before: always left out, null, the reason left out.
    assert Answer.from_call("agents.allow", {"agent": "a"}) == Answer.allow()
    assert Answer.from_call("agents.allow", {"always": None}) == Answer.allow()
    assert Answer.from_call("agents.deny", {"reason": None}) == Answer.deny()
    assert Answer.from_call("agents.deny", {"reason": ""}) == Answer.deny()
    assert Answer.from_call("agents.answer", {"option": 2, "text": "  "}) == Answer.pick(2)
    assert Answer.from_call("agents.answer", {"option": None, "text": "x"}) == Answer.reply("x")


@pytest.mark.parametrize(
    "word",
    [
        "",
        "Allow",
        "allow ",
        "always",
        "option",
        "option:",
        "option:0",
        "option:-1",
        "option:x",
        "option:²",
        "option:1.5",
        "no",
    ],
)
def test_a_word_that_is_no_answer_is_refused(word: str) -> None:
    with pytest.raises(AnswerError, match=f"^not an answer: {word!r} "):
        Answer.parse(word)


def test_a_word_that_is_no_answer_says_what_one_is() -> None:
    with pytest.raises(AnswerError) as error:
        Answer.parse("maybe")
    assert str(error.value) == (
        "not an answer: 'maybe' (an answer is allow, allow-always, deny, option:N (N from 1) "
        "or reply)"
    )
    with pytest.raises(AnswerError) as error:
        Answer.parse("option:0")
    assert str(error.value).startswith("not an answer: 'option:0' (an option is numbered from 1")


def test_a_reply_needs_text() -> None:
    for text in (None, "", "  \n"):
        with pytest.raises(AnswerError) as error:
            Answer.parse("reply", text)
        assert str(error.value) == ("not an answer: 'reply' (a reply is some text, not nothing)")


@pytest.mark.parametrize(
    ("kind", "fields", "says"),
    [
        (AnswerKind.OPTION, {}, "an option is numbered from 1, not 0"),
        (AnswerKind.OPTION, {"option": -3}, "an option is numbered from 1, not -3"),
        (AnswerKind.ALLOW, {"option": 1}, "only an option (option:N) has a number"),
        (AnswerKind.DENY, {"option": -1}, "only an option (option:N) has a number"),
        (AnswerKind.REPLY, {"text": " \n"}, "a reply is some text, not nothing"),
        (AnswerKind.DENY, {"text": " "}, "only a reply has text"),
        (AnswerKind.ALLOW, {"text": "yes"}, "only a reply has text"),
        (AnswerKind.OPTION, {"option": 1, "text": "yes"}, "only a reply has text"),
        (AnswerKind.ALLOW, {"reason": "why"}, "only a refusal (deny) has a reason"),
        (AnswerKind.REPLY, {"text": "x", "reason": "why"}, "only a refusal (deny) has a reason"),
    ],
)
def test_a_value_that_mixes_forms_is_refused(
    kind: AnswerKind, fields: dict[str, Any], says: str
) -> None:
    with pytest.raises(AnswerError) as error:
        Answer(kind, **fields)
    assert str(error.value).startswith(says)


@pytest.mark.parametrize(
    ("method", "params", "says"),
    [
        ("agents.allow", {"always": 1}, "parameter 'always' must be true or false, not 1"),
        ("agents.allow", {"always": "yes"}, "parameter 'always' must be true or false, not 'yes'"),
        ("agents.deny", {"reason": 3}, "parameter 'reason' must be a string, not 3"),
        ("agents.deny", {"reason": False}, "parameter 'reason' must be a string, not False"),
        (
            "agents.answer",
            {},
            "answer with one of 'option' (its number, from 1) or 'text' (a reply)",
        ),
        ("agents.answer", {"text": "  "}, "answer with one of 'option'"),
        ("agents.answer", {"option": 1, "text": "x"}, "answer with one of 'option'"),
        ("agents.answer", {"option": 0}, "parameter 'option' must be a whole number >= 1, not 0"),
        (
            "agents.answer",
            {"option": True},
            "parameter 'option' must be a whole number >= 1, not True",
        ),
        (
            "agents.answer",
            {"option": "2"},
            "parameter 'option' must be a whole number >= 1, not '2'",
        ),
        (
            "agents.answer",
            {"option": 1.0},
            "parameter 'option' must be a whole number >= 1, not 1.0",
        ),
        ("agents.answer", {"text": 5}, "parameter 'text' must be a string, not 5"),
        ("agents.stop", {}, "'agents.stop' carries no answer; agents.allow, agents.deny, agents"),
    ],
)
def test_a_call_that_carries_no_answer_is_refused(
    method: str, params: dict[str, Any], says: str
) -> None:
    with pytest.raises(AnswerError) as error:
        Answer.from_call(method, params)
    assert str(error.value).startswith(says)
