"""A harness's own transcript as a conversation: entries, the plan, the last reply (pure).

Each harness writes its session as JSON lines (Claude Code's session JSONL, codex's rollout,
pi's session file: docs/harnesses.md).  A parser per harness (``transcript_claude``,
``transcript_codex``, ``transcript_pi``) is fed lines and keeps what they say:

- ``entries``: the person's prompts (``user``), volee's own messages (``volee``: they start
  with ``[volee]``), the agent's replies (``assistant``), each tool call with its input and,
  once it came, its result (``tool``), and what went wrong (``error``);
- ``plan``: the agent's checklist (Claude Code's TaskCreate/TaskUpdate or TodoWrite calls,
  codex's plan updates), or None;
- ``last_message``: the agent's last reply;
- ``count``: how many entries were read.

A parser made with ``keep=False`` keeps no entries (``count``, ``plan`` and ``last_message``
only): what the daemon reads at each turn's end for an agent's row, where a long-lived
agent's whole conversation held for every agent would grow the daemon with every turn.

Feeding is incremental (``feed`` takes the new complete lines; ``Splitter`` cuts bytes into
them and keeps a line still being written), so a reader follows a live file.  A line that is
not JSON is counted in ``unreadable``; one that is JSON but of a shape the parser does not
know (a newer format) in ``unknown``: what parses is shown, the rest said to be unreadable.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any

from ..core.model import Harness

VOLEE_LABEL = "[volee]"
#: Characters of a tool's input or result kept per entry: a long-lived agent's file writes and
#: command outputs would otherwise all stay in memory (the reader shows less anyway).
KEEP = 16_384


class EntryKind(StrEnum):
    """What one entry of a conversation is."""

    USER = "user"
    ASSISTANT = "assistant"
    TOOL = "tool"
    ERROR = "error"
    VOLEE = "volee"


@dataclass
class Entry:
    """One entry: a message, or a tool call (``tool``, ``input``, ``result`` once it came)."""

    kind: EntryKind
    text: str
    at: str | None = None
    tool: str | None = None
    input: Any = None
    result: str | None = None
    #: The tool call failed (its result is the error).
    failed: bool = False
    #: A call that started a sub-agent (Claude Code's Agent/Task): the sub-agent's id.
    subagent: str | None = None
    #: An entry of a sub-agent's own conversation: the id of the sub-agent it is part of.
    within: str | None = None

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {"kind": str(self.kind), "text": self.text, "at": self.at}
        if self.kind is EntryKind.TOOL:
            out.update(tool=self.tool, input=self.input, result=self.result, error=self.failed)
            if self.subagent:
                out["subagent"] = self.subagent
        if self.within:
            out["within"] = self.within
        return out


@dataclass
class PlanItem:
    """One step of the agent's plan."""

    text: str
    status: str  # pending | in_progress | completed (the harness's own words otherwise)


@dataclass
class Plan:
    """The agent's checklist as it last said it."""

    items: list[PlanItem] = field(default_factory=list)

    @property
    def done(self) -> int:
        return sum(1 for i in self.items if i.status == "completed")

    def to_json(self) -> dict[str, Any]:
        items = [{"text": i.text, "status": i.status} for i in self.items]
        return {"done": self.done, "total": len(self.items), "items": items}


def user_entry(text: str, at: str | None) -> Entry:
    """A prompt: the person's, or volee's own when it carries volee's label."""
    kind = EntryKind.VOLEE if text.lstrip().startswith(VOLEE_LABEL) else EntryKind.USER
    return Entry(kind, text, at)


def first_line(text: str | None) -> str | None:
    """The first non-empty line of ``text`` (None for none)."""
    for line in (text or "").splitlines():
        if line.strip():
            return line.strip()
    return None


def text_of(content: Any) -> str:
    """The text of a message's content: a string, or the ``text`` of its blocks."""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        parts = []
        for block in content:
            if isinstance(block, str):
                parts.append(block)
            elif isinstance(block, dict) and isinstance(block.get("text"), str):
                parts.append(block["text"])
        return "\n".join(parts)
    return ""


class Parser:
    """What every harness's parser keeps; ``line(data)`` is the harness's own part."""

    harness: Harness

    def __init__(self, keep: bool = True) -> None:
        #: Whether entries are kept (False: only counted, for the summary of a row).
        self.keep = keep
        self.entries: list[Entry] = []
        self.count = 0
        self.plan: Plan | None = None
        self.last_message: str | None = None
        self.unreadable = 0
        self.unknown = 0
        self._calls: dict[str, Entry] = {}

    def feed(self, lines: list[str]) -> None:
        """Take complete lines (without their newline); blank ones are skipped."""
        for raw in lines:
            if not raw.strip() or self.skip(raw):
                continue
            try:
                data = json.loads(raw)
            except ValueError:
                self.unreadable += 1
                continue
            if not isinstance(data, dict) or not self.line(data):
                self.unknown += 1

    def line(self, data: dict[str, Any]) -> bool:
        """Read one line; False when its shape is not one this parser knows."""
        raise NotImplementedError

    def skip(self, raw: str) -> bool:
        """Whether a line is metadata, told from its first characters (before parsing it)."""
        return False

    # -- helpers for the harnesses' parsers --------------------------------------------------

    def add(self, entry: Entry) -> Entry:
        self.count += 1
        if self.keep:
            self.entries.append(entry)
        if entry.kind is EntryKind.ASSISTANT and entry.text.strip():
            self.last_message = entry.text
        return entry

    def call(self, call_id: str | None, tool: str, tool_input: Any, at: str | None) -> Entry:
        line = tool_line(tool, tool_input)
        entry = self.add(Entry(EntryKind.TOOL, line, at, tool, bounded(tool_input)))
        if call_id:
            self._calls[call_id] = entry
        return entry

    def result(self, call_id: Any, text: str, failed: bool) -> Entry | None:
        """The result of an earlier call (None when the call is not known: kept as unknown)."""
        entry = self._calls.pop(call_id, None) if isinstance(call_id, str) else None
        if entry is None:
            return None
        entry.result = bounded(text)
        entry.failed = failed
        return entry


def bounded(value: Any, keep: int = KEEP) -> Any:
    """``value`` itself when short; else its text (JSON for a structure) cut to ``keep``
    characters, saying how many were left out."""
    if value is None or isinstance(value, (bool, int, float)):
        return value
    if isinstance(value, str):
        text = value
    else:
        text = json.dumps(value, ensure_ascii=False)
        if len(text) <= keep:
            return value
    if len(text) <= keep:
        return value
    return text[:keep] + f"… ({len(text) - keep} more characters)"


def tool_line(tool: str, tool_input: Any) -> str:
    """One line for a tool call: ``Bash: pytest -q``, ``Edit: src/app.py``."""
    if isinstance(tool_input, dict):
        if "taskId" in tool_input:  # Claude Code's TaskUpdate
            return f"{tool}: #{tool_input['taskId']} {tool_input.get('status') or ''}".rstrip()
        for key in ("command", "cmd", "file_path", "path", "pattern", "url", "query", "subject"):
            value = tool_input.get(key)
            if isinstance(value, list):
                value = " ".join(str(v) for v in value)
            if isinstance(value, str) and value.strip():
                return f"{tool}: {first_line(value) or value.strip()}"
        if isinstance(tool_input.get("description"), str):
            return f"{tool}: {first_line(tool_input['description'])}"
    elif isinstance(tool_input, str) and tool_input.strip():
        return f"{tool}: {first_line(tool_input)}"
    return tool


class Splitter:
    """Bytes of a file as it grows, cut into complete lines; the last one waits for its newline."""

    def __init__(self) -> None:
        self._rest = b""

    def push(self, data: bytes) -> list[str]:
        data = self._rest + data
        cut = data.rfind(b"\n")
        if cut < 0:
            self._rest = data
            return []
        self._rest = data[cut + 1 :]
        return data[:cut].decode("utf-8", "replace").split("\n")

    @property
    def partial(self) -> bool:
        """Whether a line without its newline is held (being written, or cut off)."""
        return bool(self._rest.strip())
