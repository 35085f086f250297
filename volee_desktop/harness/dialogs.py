"""The dialog on an agent's rendered screen, and the keys that answer it (pure).

An answer is typed only when the screen shows the very dialog it answers: the question,
numbered options, and the request's own input (its command, its file, its question) in
the dialog's text.  Anything else is a refusal with the reason, and nothing is typed.

Measured on the screens of Claude Code 2.1.332 and codex 0.171.0 (rendered with pyte):

- Claude Code, a permission: ``Bash command`` / the command / ``Do you want to proceed?``
  / ``❯ 1. Yes`` / ``2. Yes, and always allow …`` / ``3. Yes, and switch to auto mode …``
  / ``4. No`` / ``Esc to cancel · Tab to amend``.  A digit picks its option at once; Esc
  refuses, ends the turn and fires no hook.
- Claude Code, AskUserQuestion: ``☐ Header`` / the question / ``❯ 1. Postgres`` … /
  ``3. Type something.`` / ``4. Chat about this`` / ``Enter to select · ↑/↓ to navigate ·
  Esc to cancel``.  A digit picks that option and submits it.
- codex, a command: ``Would you like to run the following command?`` / ``Reason: …`` /
  ``$ touch second.txt`` / ``› 1. Yes, proceed (y)`` / ``2. Yes, and don't ask again for
  commands that start with … (p)`` / ``3. No, and tell Codex what to do differently
  (esc)``.  The key in parentheses picks the option; Esc refuses and ends the turn with no
  hook.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass

from ..core.answer import Answer, AnswerKind
from ..core.model import Request, RequestKind
from ..core.requests import FILE_KEYS, SHELL_TOOLS

ESC = b"\x1b"
ENTER = b"\r"
#: The line that asks (Claude Code: "Do you want to proceed?"; codex: "Would you like to …").
_ASKS = re.compile(r"\b(Do you want to|Would you like to)\b[^?]*\?")
_OPTION = re.compile(r"^\s*(?:[❯›>]\s*)?(\d{1,2})\.\s+(\S.*?)\s*$")
_SHORTCUT = re.compile(r"\((esc|[a-z])\)$")
_RULE = re.compile(r"^\s*[─━]{10,}\s*$")
#: How far above its question a dialog's text may start (the tool, the command).
DIALOG_HEIGHT = 30
TYPE_SOMETHING = ("type something", "other")
#: Lines a dialog may show under its options (a rule, its footer).
FOOTER_LINES = 3
_PROMPT = re.compile(r"^[❯›>](\s|$)(?!\s*\d+\.)")


@dataclass(frozen=True)
class Option:
    """One numbered option of a dialog and the key that picks it."""

    number: int
    label: str
    key: bytes


@dataclass(frozen=True)
class Dialog:
    """A dialog found on screen: what it asks, its text, its options."""

    question: str
    text: str  # the dialog's lines, from its top to its last option
    options: tuple[Option, ...]
    escapable: bool  # Esc refuses it
    top: int = 0  # the row of the screen its text starts on: the rows above are not its own

    def option(self, number: int) -> Option | None:
        return next((o for o in self.options if o.number == number), None)


@dataclass(frozen=True)
class Keys:
    """What to type, in order: ``keys`` as they are, then ``text`` typed, then Enter."""

    keys: bytes
    text: str = ""
    enter: bool = False


def squash(text: str) -> str:
    """``text`` without any whitespace (a dialog wraps long lines where it likes)."""
    return "".join(text.split())


def _key(number: int, label: str) -> bytes:
    shortcut = _SHORTCUT.search(label)
    if shortcut is None:
        return str(number).encode()
    return ESC if shortcut.group(1) == "esc" else shortcut.group(1).encode()


def find_dialog(lines: Sequence[str]) -> Dialog | None:
    """The dialog at the bottom of a rendered screen, if one is open (pure).

    A permission dialog has a line that asks and numbered options under it; a question
    (AskUserQuestion) has numbered options and "Enter to select" under them.
    """
    last_option = -1
    for i in range(len(lines) - 1, -1, -1):
        if _OPTION.match(lines[i]):
            last_option = i
            break
    if last_option < 0:
        return None
    # The options: the numbered lines of the block that ends at the last one.
    first_option = last_option
    options: list[Option] = []
    for i in range(last_option, max(-1, last_option - DIALOG_HEIGHT), -1):
        match = _OPTION.match(lines[i])
        if match:
            number = int(match.group(1))
            options.append(Option(number, match.group(2), _key(number, match.group(2))))
            first_option = i
            if number == 1:
                break
    options.reverse()
    if not options or options[0].number != 1:
        return None
    tail = "\n".join(lines[last_option + 1 :])
    # An open dialog is at the bottom: under its options only its footer ("Esc to cancel",
    # "Enter to select"); a prompt or more text under them is a dialog already answered.
    below = [line.strip() for line in lines[last_option + 1 :] if line.strip()]
    if len(below) > FOOTER_LINES or any(_PROMPT.match(line) for line in below):
        return None
    # The dialog's top: a full-width rule above it (Claude Code), else its question line
    # (codex starts its dialog with it): never the conversation above.
    floor = max(0, first_option - DIALOG_HEIGHT)
    top = next((i + 1 for i in range(first_option - 1, floor - 1, -1) if _RULE.match(lines[i])), -1)
    asks_at = next(
        (i for i in range(first_option - 1, max(top, floor) - 1, -1) if _ASKS.search(lines[i])),
        -1,
    )
    if top < 0:
        top = asks_at if asks_at >= 0 else floor
    above = lines[top:first_option]
    found = _ASKS.search(lines[asks_at]) if asks_at >= 0 else None
    asks = found.group(0) if found is not None else ""
    if not asks:
        if "Enter to select" not in tail and not any("Enter to select" in x for x in above):
            return None
        asks = next((x.strip() for x in reversed(above) if x.strip().endswith("?")), "")
    text = "\n".join([*lines[top : last_option + 1]])
    escapable = (
        "Esc to cancel" in tail or "esc to cancel" in tail or any(o.key == ESC for o in options)
    )
    return Dialog(question=asks, text=text, options=tuple(options), escapable=escapable, top=top)


def expected_text(request: Request) -> str:
    """The part of the request its dialog must show: the command, the file, the question."""
    data = request.input or {}
    if request.kind is RequestKind.QUESTION:
        return request.question
    if request.tool in SHELL_TOOLS or "command" in data:
        command = data.get("command")
        if isinstance(command, list):
            command = " ".join(str(c) for c in command)
        if isinstance(command, str):
            return command
    for key in FILE_KEYS:
        value = data.get(key)
        if isinstance(value, str) and value:
            return value.rstrip("/").rsplit("/", 1)[-1]
    if ": " in request.summary and request.input is not None:
        return request.summary.split(": ", 1)[1].removesuffix(" …").removesuffix("…")
    return request.tool or ""


def shows(dialog: Dialog, request: Request) -> str | None:
    """Why ``dialog`` is not the dialog of ``request`` (None: it is)."""
    want = squash(expected_text(request))[:120]
    if not want:
        return "volee does not know what this request is about, so it cannot check the dialog"
    if want.lower() not in squash(dialog.text).lower():
        asked = dialog.question or "something"
        return f"the dialog on screen asks {asked!r} about something else"
    return None


def dialog_for(lines: Sequence[str], request: Request) -> Dialog | str:
    """The request's own dialog at the bottom of this screen, or why not (pure)."""
    dialog = find_dialog(lines)
    if dialog is None:
        return "no dialog is open on its screen"
    problem = shows(dialog, request)
    return dialog if problem is None else problem


def keys_for(lines: Sequence[str], request: Request, answer: Answer) -> Keys | str:
    """The keys answering ``request`` with ``answer`` on this screen, or why not (pure)."""
    dialog = dialog_for(lines, request)
    if isinstance(dialog, str):
        return dialog
    return answer_keys(dialog, request, answer)


def answer_keys(dialog: Dialog, request: Request, answer: Answer) -> Keys | str:
    """The keys answering ``request`` with ``answer`` on its ``dialog`` (found on screen
    with :func:`dialog_for`), or why they cannot (pure)."""
    if request.kind is RequestKind.QUESTION:
        return _question_keys(dialog, request, answer)
    if not answer.kind.permission:
        return f"it asks a permission ({request.summary}): allow or deny it"
    if answer.kind is AnswerKind.DENY:
        no = next((o for o in dialog.options if o.label.lower().startswith("no")), None)
        if no is not None and no.key == ESC:
            return Keys(ESC)
        if dialog.escapable:
            # Claude Code: Esc is its "No, and tell Claude what to do differently".
            return Keys(ESC)
        if no is not None:
            return Keys(no.key)
        return "the dialog on screen has no way to refuse"
    first = dialog.option(1)
    if first is None or not first.label.lower().startswith("yes"):
        return "the dialog's first option is not Yes"
    if answer.kind is AnswerKind.ALLOW:
        return Keys(first.key)
    always = next(
        (
            o
            for o in dialog.options
            if o.label.lower().startswith("yes, and") and "auto mode" not in o.label.lower()
        ),
        None,
    )
    if always is None:
        return "the dialog on screen offers no 'always' option"
    return Keys(always.key)


def _question_keys(dialog: Dialog, request: Request, answer: Answer) -> Keys | str:
    if answer.kind is AnswerKind.DENY:
        return Keys(ESC) if dialog.escapable else "the question on screen cannot be dismissed"
    if answer.kind is AnswerKind.OPTION:
        index = answer.option
        if not 1 <= index <= len(request.options):
            return f"there is no option {index}: the options are 1 to {len(request.options)}"
        option = dialog.option(index)
        label = request.options[index - 1]
        if option is None or squash(label).lower() not in squash(option.label).lower():
            return f"option {index} on screen is not {label!r}"
        return Keys(option.key)
    if answer.kind is AnswerKind.REPLY:
        other = next(
            (o for o in dialog.options if o.label.lower().rstrip(".").startswith(TYPE_SOMETHING)),
            None,
        )
        if other is None:
            return "the question on screen takes no typed answer"
        return Keys(other.key, text=answer.text, enter=True)
    return "answer the question with an option number or a reply"
