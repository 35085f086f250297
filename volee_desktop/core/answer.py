"""One answer to an agent's request, the same value from the click to the keys (pure).

The person's answer is one of: allow, allow always, deny (with a reason told to the agent),
a question's option N (from 1), or a reply of their own.  Every surface builds it (``volee
allow|deny|answer``, the app's notification, tray and list actions), IPC carries it as its
method and parameters, the dialog check (``harness/dialogs.py``) picks its keys, and
``request-answered`` records its word:

========================  ===================================  ==================
answer                    on the wire                          word (recorded)
========================  ===================================  ==================
``Answer.allow()``        ``agents.allow {always: false}``     ``allow``
``Answer.allow(True)``    ``agents.allow {always: true}``      ``allow-always``
``Answer.deny(reason)``   ``agents.deny {reason?}``            ``deny``
``Answer.pick(n)``        ``agents.answer {option: n}``        ``option:N``
``Answer.reply(text)``    ``agents.answer {text}``             ``reply``
========================  ===================================  ==================

:meth:`Answer.parse` reads a word back (with the reason or the reply beside it) and
:meth:`Answer.from_call` a method and its parameters; anything else is an
:class:`AnswerError` saying what an answer is.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from enum import StrEnum
from typing import Any

from .errors import Error

OPTION_WORD = "option:"
WORDS = "allow, allow-always, deny, option:N (N from 1) or reply"


class AnswerKind(StrEnum):
    """What kind of answer (its word, but for ``option``: ``option:N``)."""

    ALLOW = "allow"
    ALLOW_ALWAYS = "allow-always"
    DENY = "deny"
    OPTION = "option"
    REPLY = "reply"

    @property
    def permission(self) -> bool:
        """Whether it answers a permission (allow or deny); a question takes any kind."""
        return self in (AnswerKind.ALLOW, AnswerKind.ALLOW_ALWAYS, AnswerKind.DENY)


class AnswerMethod(StrEnum):
    """The IPC methods that carry an answer."""

    ALLOW = "agents.allow"
    DENY = "agents.deny"
    ANSWER = "agents.answer"


class AnswerError(Error, ValueError):
    """Not an answer: the message says what one is."""


@dataclass(frozen=True)
class Answer:
    """One answer; build it with :meth:`allow`, :meth:`deny`, :meth:`pick`, :meth:`reply`
    (or :meth:`parse` / :meth:`from_call`), which refuse what is not an answer."""

    kind: AnswerKind
    reason: str = ""  # deny: told to the agent as the person's next message
    option: int = 0  # option: its number, from 1
    text: str = ""  # reply: typed as the answer

    def __post_init__(self) -> None:
        option, reply = self.kind is AnswerKind.OPTION, self.kind is AnswerKind.REPLY
        if option and self.option < 1:
            raise AnswerError(f"an option is numbered from 1, not {self.option}")
        if self.option and not option:
            raise AnswerError("only an option (option:N) has a number")
        if reply and not self.text.strip():
            raise AnswerError("a reply is some text, not nothing")
        if self.text and not reply:
            raise AnswerError("only a reply has text")
        if self.reason and self.kind is not AnswerKind.DENY:
            raise AnswerError("only a refusal (deny) has a reason")

    # --- building it ------------------------------------------------------------------------

    @classmethod
    def allow(cls, always: bool = False) -> Answer:
        return cls(AnswerKind.ALLOW_ALWAYS if always else AnswerKind.ALLOW)

    @classmethod
    def deny(cls, reason: str = "") -> Answer:
        """A refusal; ``reason`` (its blanks around stripped) is told to the agent."""
        return cls(AnswerKind.DENY, reason=reason.strip())

    @classmethod
    def pick(cls, option: int) -> Answer:
        """A question's ``option``-th option (from 1)."""
        return cls(AnswerKind.OPTION, option=option)

    @classmethod
    def reply(cls, text: str) -> Answer:
        """A reply of the person's own to a question (typed as it is)."""
        return cls(AnswerKind.REPLY, text=text)

    @classmethod
    def parse(cls, word: str, text: str | None = None) -> Answer:
        """The answer a word names: ``allow``, ``allow-always``, ``deny`` (``text``: its
        reason), ``option:N`` or ``reply`` (``text``: the reply)."""
        try:
            return cls._parse(word, text)
        except AnswerError as exc:
            raise AnswerError(f"not an answer: {word!r} ({exc})") from None

    @classmethod
    def _parse(cls, word: str, text: str | None) -> Answer:
        if word == AnswerKind.ALLOW:
            return cls.allow()
        if word == AnswerKind.ALLOW_ALWAYS:
            return cls.allow(always=True)
        if word == AnswerKind.DENY:
            return cls.deny(text or "")
        if word == AnswerKind.REPLY:
            return cls.reply(text or "")
        number = word.removeprefix(OPTION_WORD)
        if word.startswith(OPTION_WORD) and number.isascii() and number.isdigit():
            return cls.pick(int(number))
        raise AnswerError(f"an answer is {WORDS}")

    @classmethod
    def from_call(cls, method: str, params: Mapping[str, Any]) -> Answer:
        """The answer an IPC call carries (the inverse of :meth:`call`)."""
        if method == AnswerMethod.ALLOW:
            always = params.get("always")
            if always is None:
                return cls.allow()
            if not isinstance(always, bool):
                raise AnswerError(f"parameter 'always' must be true or false, not {always!r}")
            return cls.allow(always)
        if method == AnswerMethod.DENY:
            reason = params.get("reason")
            if reason is not None and not isinstance(reason, str):
                raise AnswerError(f"parameter 'reason' must be a string, not {reason!r}")
            return cls.deny(reason or "")
        if method != AnswerMethod.ANSWER:
            raise AnswerError(f"{method!r} carries no answer; {', '.join(AnswerMethod)} do")
        option, reply = params.get("option"), params.get("text")
        if option is not None and (
            not isinstance(option, int) or isinstance(option, bool) or option < 1
        ):
            raise AnswerError(f"parameter 'option' must be a whole number >= 1, not {option!r}")
        if reply is not None and not isinstance(reply, str):
            raise AnswerError(f"parameter 'text' must be a string, not {reply!r}")
        if (option is None) == (reply is None or not reply.strip()):
            raise AnswerError(
                "answer with one of 'option' (its number, from 1) or 'text' (a reply)"
            )
        return cls.pick(option) if option is not None else cls.reply(str(reply))

    # --- rendering it -----------------------------------------------------------------------

    @property
    def word(self) -> str:
        """How the answer is recorded (``request-answered``'s ``answer``) and named."""
        if self.kind is AnswerKind.OPTION:
            return f"{OPTION_WORD}{self.option}"
        return str(self.kind)

    @property
    def method(self) -> AnswerMethod:
        """The IPC method that carries it."""
        if self.kind is AnswerKind.DENY:
            return AnswerMethod.DENY
        if self.kind.permission:
            return AnswerMethod.ALLOW
        return AnswerMethod.ANSWER

    def params(self) -> dict[str, Any]:
        """Its parameters on the wire (beside ``agent`` and ``request``)."""
        if self.kind is AnswerKind.DENY:
            return {"reason": self.reason} if self.reason else {}
        if self.kind is AnswerKind.OPTION:
            return {"option": self.option}
        if self.kind is AnswerKind.REPLY:
            return {"text": self.text}
        return {"always": self.kind is AnswerKind.ALLOW_ALWAYS}

    def call(self, agent: str, request: str | None = None) -> tuple[AnswerMethod, dict[str, Any]]:
        """The daemon call giving this answer to ``agent`` (only to request ``request``, when
        named: the daemon refuses an answer that would reach another dialog)."""
        named = {"request": request} if request else {}
        return self.method, {"agent": agent, **named, **self.params()}
