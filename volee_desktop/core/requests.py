"""What a needs-input agent asks, in words: pure rules from hook payloads to a ``Request``.

A request is one line a person can act on from a notification or a menu: the tool and its
input ("Bash: rm -rf build/ && pytest -q", "Edit: src/app.py"), the question and its
options, or the dialog's own text.  The registry keeps it while the agent needs input
(:func:`request_after` is the fold's rule) and drops it when the agent moves on, whatever
moved it (answered through volee or in the agent's own terminal).
"""

from __future__ import annotations

import hashlib
import json
import re
import unicodedata
from collections.abc import Mapping
from pathlib import PurePosixPath
from typing import Any, TypedDict

from .model import Agent, Request, RequestKind
from .states import AgentState

#: The longest one-line summary (a notification body shows about this much).
SUMMARY_LIMIT = 160
#: Tools whose input is a shell command.
SHELL_TOOLS = frozenset({"Bash", "bash", "shell", "exec_command", "local_shell", "BashOutput"})
#: Tools whose input names a file.
FILE_KEYS = ("file_path", "notebook_path")
QUESTION_TOOLS = frozenset({"AskUserQuestion"})
#: Input keys worth showing for other tools, best first.
TEXT_KEYS = ("command", "url", "query", "pattern", "description", "prompt", "skill", "name")
NOT_GIVEN = "its input was not given"
#: A run of this many blanks pushes what follows out of a notification or a menu entry.
BLANK_RUN = 8
#: What a request's line is followed by when it does not show all of it.
READ_IT_ALL = "open to read it all"
UNSAID_PERMISSION = "a permission (which one was not said)"


def request_id(agent: str, at: float, kind: str, summary: str) -> str:
    """A stable id for one request of one agent (``rq_`` and 16 hex digits)."""
    digest = hashlib.sha1(f"{agent}\0{at!r}\0{kind}\0{summary}".encode()).hexdigest()
    return f"rq_{digest[:16]}"


def _invisible(char: str) -> bool:
    """A character that shows nothing or moves what follows: controls (but tab and the line
    breaks), zero-width and bidi formatting (Cf), the line and paragraph separators."""
    if char in "\t\n":
        return False
    return unicodedata.category(char) in ("Cc", "Cf", "Zl", "Zp")


def visible(text: str) -> str:
    """``text`` with each invisible character written out (``<U+202E>``): a line that hides
    nothing of what it stands for."""
    if not any(_invisible(c) for c in text):
        return text
    return "".join(f"<U+{ord(c):04X}>" if _invisible(c) else c for c in text)


def one_line(text: str, limit: int = SUMMARY_LIMIT) -> str:
    """``text`` on one line: its first non-empty line, `` …`` when more follows or it is cut."""
    lines = [line.strip() for line in text.strip().splitlines() if line.strip()]
    if not lines:
        return ""
    first = lines[0]
    more = len(lines) > 1
    if len(first) > limit - (2 if more else 0):
        return first[: limit - 1].rstrip() + "…"
    return f"{first} …" if more else first


def relative(path: str, cwd: str) -> str:
    """``path`` relative to ``cwd`` when it lies inside it (``src/app.py``), else as given."""
    if not cwd or not path.startswith("/"):
        return path
    try:
        return str(PurePosixPath(path).relative_to(PurePosixPath(cwd))) or path
    except ValueError:
        return path


def _command_text(value: Any) -> str | None:
    if isinstance(value, str) and value.strip():
        return value
    if isinstance(value, list) and value and all(isinstance(v, str) for v in value):
        words: list[str] = [str(v) for v in value]
        # codex runs `bash -lc '<script>'`: the script is what the person reads.
        shell = len(words) == 3 and words[0].rsplit("/", 1)[-1] in ("bash", "sh", "zsh")
        if shell and words[1] in ("-lc", "-c"):
            return words[2]
        return " ".join(words)
    return None


def _compact(data: Mapping[str, Any]) -> str:
    try:
        return json.dumps(data, ensure_ascii=False, separators=(", ", ": "), sort_keys=True)
    except (TypeError, ValueError):
        return str(data)


def summarize(tool: str | None, tool_input: Mapping[str, Any] | None, cwd: str = "") -> str:
    """One line for a tool and its input: ``Bash: pytest -q``, ``Edit: src/app.py`` (pure)."""
    name = tool or "a tool"
    if tool_input is None:
        return f"{name} ({NOT_GIVEN})"
    if tool in QUESTION_TOOLS:
        return question_text(tool_input) or name
    detail = _detail(tool, tool_input, cwd)
    if not detail:
        return name
    return visible(one_line(f"{name}: {detail}"))


def _detail(tool: str | None, tool_input: Mapping[str, Any], cwd: str) -> str | None:
    """What of a tool's input the person reads to decide: the command, the file, …"""
    detail: str | None = None
    if tool in SHELL_TOOLS or "command" in tool_input:
        detail = _command_text(tool_input.get("command")) or _command_text(tool_input.get("cmd"))
    if detail is None:
        for key in FILE_KEYS:
            value = tool_input.get(key)
            if isinstance(value, str) and value.strip():
                detail = relative(value, cwd)
                break
    if detail is None:
        for key in TEXT_KEYS:
            value = tool_input.get(key)
            if isinstance(value, str) and value.strip():
                detail = value
                break
    path = tool_input.get("path")
    if detail is None and isinstance(path, str) and path.strip():
        detail = relative(path, cwd)
    if detail is None and tool_input:
        detail = _compact(tool_input)
    return detail


def full_text(request: Request) -> str:
    """All of what a request asks, as given (the whole command, every line): what the agent's
    window shows, where the one-line summary may not."""
    asks_tool = request.kind is RequestKind.PERMISSION and request.tool not in QUESTION_TOOLS
    if asks_tool and request.input is not None:
        detail = _detail(request.tool, request.input, "")
        if detail:
            return f"{request.tool or 'a tool'}: {detail.strip()}"
    if request.kind is not RequestKind.DIALOG and request.input is not None:
        questions = _questions(request.input)
        if questions:
            text = str(questions[0].get("question") or "").strip()
            if text:
                return text
    return request.summary


def unseen(request: Request | None) -> str | None:
    """What a request's one line leaves out, in words ("12 lines — open to read it all"), or
    None when the line is all of it.  Such a request is not answered from a notification or
    the tray's menu (they offer Open instead): the person reads all of it first."""
    if request is None:
        return None
    text = full_text(request).strip()
    lines = len(text.splitlines())
    if lines > 1:
        return f"{lines} lines — {READ_IT_ALL}"
    if any(_invisible(c) for c in text):
        return f"invisible characters (control, zero-width or bidi) — {READ_IT_ALL}"
    if len(text) > SUMMARY_LIMIT:
        return f"{len(text)} characters — {READ_IT_ALL}"
    if re.search(rf"\s{{{BLANK_RUN},}}", text):
        return f"long runs of blanks — {READ_IT_ALL}"
    return None


def _questions(tool_input: Mapping[str, Any]) -> list[Mapping[str, Any]]:
    questions = tool_input.get("questions")
    if isinstance(questions, list):
        return [q for q in questions if isinstance(q, Mapping)]
    if isinstance(tool_input.get("question"), str):
        return [tool_input]
    return []


def question_options(tool_input: Mapping[str, Any]) -> tuple[str, ...]:
    """The option labels of the first question of an AskUserQuestion input."""
    questions = _questions(tool_input)
    if not questions:
        return ()
    out: list[str] = []
    for option in questions[0].get("options") or ():
        if isinstance(option, Mapping) and isinstance(option.get("label"), str):
            out.append(option["label"])
        elif isinstance(option, str):
            out.append(option)
    return tuple(out)


def question_text(tool_input: Mapping[str, Any]) -> str:
    """The first question and its options on one line: ``Which database? (Postgres / SQLite)``."""
    questions = _questions(tool_input)
    if not questions:
        return ""
    text = str(questions[0].get("question") or questions[0].get("header") or "").strip()
    options = question_options(tool_input)
    line = one_line(text) if text else "a question"
    if options:
        line = f"{line} ({' / '.join(options)})"
    if len(questions) > 1:
        line = f"{line} (+{len(questions) - 1} more)"
    return visible(one_line(line))


def permission_request(
    agent: str,
    at: float,
    tool: str | None,
    tool_input: Mapping[str, Any] | None,
    cwd: str = "",
    reason: str = "",
) -> Request:
    """The request of a permission dialog for ``tool`` (a question for AskUserQuestion)."""
    if tool in QUESTION_TOOLS and tool_input is not None:
        return question_request(agent, at, tool_input, tool=tool)
    summary = summarize(tool, tool_input, cwd)
    return Request(
        id=request_id(agent, at, RequestKind.PERMISSION, summary),
        kind=RequestKind.PERMISSION,
        tool=tool,
        summary=summary,
        input=dict(tool_input) if tool_input is not None else None,
        reason=one_line(reason) if reason else "",
        at=at,
    )


def question_request(
    agent: str, at: float, tool_input: Mapping[str, Any], tool: str | None = "AskUserQuestion"
) -> Request:
    """The request of a question with options (AskUserQuestion's input)."""
    questions = _questions(tool_input)
    question = str(questions[0].get("question") or "") if questions else ""
    summary = question_text(tool_input) or "a question"
    return Request(
        id=request_id(agent, at, RequestKind.QUESTION, summary),
        kind=RequestKind.QUESTION,
        tool=tool,
        summary=summary,
        input=dict(tool_input),
        question=question.strip(),
        options=question_options(tool_input),
        at=at,
    )


def dialog_request(
    agent: str,
    at: float,
    text: str,
    tool: str | None = None,
    kind: RequestKind = RequestKind.DIALOG,
) -> Request:
    """The request of a dialog volee knows only by its text (a notification, a listing)."""
    summary = visible(one_line(text)) or "waiting for you"
    return Request(
        id=request_id(agent, at, kind, summary),
        kind=kind,
        tool=tool,
        summary=summary,
        at=at,
    )


def from_detail(agent: str, at: float, detail: str) -> Request:
    """What is known of a request from a state's detail alone (discovery, a listing).

    "permission for Bash" is a permission for Bash whose input is not known.
    """
    prefix = "permission for "
    if detail.startswith(prefix) and detail[len(prefix) :].strip():
        tool = detail[len(prefix) :].strip()
        return permission_request(agent, at, tool, None)
    if detail.startswith("permission"):
        return dialog_request(agent, at, UNSAID_PERMISSION, kind=RequestKind.PERMISSION)
    return dialog_request(agent, at, detail)


def request_after(
    agent_id: str,
    old_state: AgentState,
    old: Request | None,
    new_state: AgentState,
    given: Request | None,
    detail: str,
    at: float,
) -> Request | None:
    """The agent's request once a state change is folded in (the fold's rule, pure).

    No request outside needs-input; the request the event brings; else the open one stays
    (a new detail of the same dialog); else what the detail says.
    """
    if new_state is not AgentState.NEEDS_INPUT:
        return None
    if given is not None:
        return given
    if old_state is AgentState.NEEDS_INPUT and old is not None:
        return old
    return from_detail(agent_id, at, detail)


class RequestView(TypedDict):
    """A request as ``request_view`` shows it (``volee ls --json``'s ``request``)."""

    id: str
    kind: str
    tool: str | None
    summary: str
    input: dict[str, object] | None
    question: str
    options: list[str]
    reason: str
    since: float
    answered: str | None
    answered_by: str | None


def request_view(request: Request | None) -> RequestView | None:
    """A request as JSON-ready data (``volee ls --json``'s ``request``)."""
    if request is None:
        return None
    return {
        "id": request.id,
        "kind": str(request.kind),
        "tool": request.tool,
        "summary": request.summary,
        "input": request.input,
        "question": request.question,
        "options": list(request.options),
        "reason": request.reason,
        "since": request.at,
        "answered": request.answered,
        "answered_by": request.answered_by,
    }


def send_refusal(agent: Agent) -> str | None:
    """Why a message may not be typed into ``agent`` now (None: it may).

    An open approval dialog takes what is typed as its answer (Enter picks "Yes" in Claude
    Code's and codex's): a message must never be one.
    """
    request = agent.request
    if request is None or request.answered is not None:
        return None
    if request.kind is RequestKind.PERMISSION:
        return (
            f"agent {agent.name} waits for an approval ({request.summary}): use "
            f"`volee allow {agent.name}` or `volee deny {agent.name} [--reason TEXT]`"
        )
    if request.kind is RequestKind.QUESTION:
        return (
            f"agent {agent.name} asks a question ({request.summary}): use "
            f"`volee answer {agent.name} OPTION` or `volee answer {agent.name} --reply TEXT`"
        )
    return None
