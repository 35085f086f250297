"""Claude Code's session JSONL (``<config>/projects/<folder>/<session>.jsonl``) as entries.

Read in 2.1.332 (tests/harness/transcripts/claude-2.1.332.jsonl): ``user`` and ``assistant``
lines carry ``message`` (the API's role and content blocks) and ``timestamp``; an assistant
line holds one block (``text``, ``tool_use``, ``thinking``); a tool's result comes in the
next ``user`` line as a ``tool_result`` block (``is_error`` when it failed).  A refused API
request is an assistant line with ``isApiErrorMessage``; a compaction is a ``system`` line
(``compact_boundary``) then a user line with ``isCompactSummary`` (Claude's own summary, not
shown).  The plan: 2.1.332 has no TodoWrite any more (with its default model no plan tool at
all); with claude-sonnet-4-6 it offers TaskCreate (``subject``) and TaskUpdate (``taskId``,
``status``; ``deleted`` removes one).  TodoWrite (``todos``: the whole list) is still read,
as older releases write it.

Sub-agents (its Agent tool, Task in older releases; recorded in
tests/harness/transcripts/claude-2.1.332-subagent/): the call's result line carries
``toolUseResult.agentId``, and the sub-agent's own conversation is a file of its own,
``<session>/subagents/agent-<agentId>.jsonl``, every line ``isSidechain``.  The call is marked
with that id (``Entry.subagent``); ``ClaudeTranscript(subagent=ID)`` reads such a file (its
sidechain lines are its conversation, each entry marked ``within``), and ``nest`` puts each
sub-agent's entries right after the call that started it.
"""

from __future__ import annotations

import re
from typing import Any

from ..core.model import Harness
from .transcript import Entry, EntryKind, Parser, Plan, PlanItem, text_of, user_entry

#: Line types that are not the conversation (metadata, requests, costs...), seen in 2.1.332.
METADATA = frozenset(
    {"system", "attachment", "queue-operation", "last-prompt", "api-request", "api-request-shape",
     "api-request-blob", "tools-used", "cost-state", "atis-latch", "mode", "summary",
     "custom-title", "file-history-snapshot", "permission-mode", "progress", "agent-name",
     "tag", "pr-link"}
)  # fmt: skip
PLAN_TOOLS = frozenset({"TodoWrite", "TaskCreate", "TaskUpdate"})
_LEADING_TYPE = re.compile(r'\{\s*"type"\s*:\s*"([^"]*)"')
_ATTACHMENT = re.compile(r'"attachment"\s*:\s*\{')


class ClaudeTranscript(Parser):
    """The parser of Claude Code's transcripts."""

    harness = Harness.CLAUDE

    def __init__(self, subagent: str | None = None, keep: bool = True) -> None:
        super().__init__(keep)
        self._tasks: dict[str, PlanItem] = {}
        #: Reading a sub-agent's own file: its id (its lines are all sidechain lines).
        self.subagent = subagent

    def add(self, entry: Entry) -> Entry:
        entry.within = self.subagent
        return super().add(entry)

    def skip(self, raw: str) -> bool:
        # Most of a transcript's bytes are metadata (request shapes and blobs, prompt
        # snapshots of 100 kB): told from the line's start, they are not parsed at all.
        head = raw[:160]
        if match := _LEADING_TYPE.match(head):
            kind = match.group(1)
            return kind in METADATA or kind.startswith("api-")
        return _ATTACHMENT.search(head) is not None

    def line(self, data: dict[str, Any]) -> bool:
        kind = data.get("type")
        if kind in METADATA or (isinstance(kind, str) and kind.startswith("api-")):
            return True
        message = data.get("message")
        if kind not in ("user", "assistant") or not isinstance(message, dict):
            return False
        sidechain = bool(data.get("isSidechain")) and self.subagent is None
        if sidechain or data.get("isMeta") or data.get("isCompactSummary"):
            return True
        at = data.get("timestamp") if isinstance(data.get("timestamp"), str) else None
        content = message.get("content")
        if kind == "assistant" and data.get("isApiErrorMessage"):
            self.add(Entry(EntryKind.ERROR, text_of(content) or "API error", at))
            return True
        if isinstance(content, str):
            if kind == "user":
                self.add(user_entry(content, at))
            else:
                self.add(Entry(EntryKind.ASSISTANT, content, at))
            return True
        if not isinstance(content, list):
            return False
        for block in content:
            if isinstance(block, dict):
                self._block(kind, block, at, data.get("toolUseResult"))
        return True

    def _block(self, kind: str, block: dict[str, Any], at: str | None, outcome: Any) -> None:
        btype = block.get("type")
        if btype == "text" and isinstance(block.get("text"), str):
            if kind == "user":
                self.add(user_entry(block["text"], at))
            else:
                self.add(Entry(EntryKind.ASSISTANT, block["text"], at))
        elif btype == "tool_use" and kind == "assistant":
            name = str(block.get("name") or "tool")
            tool_input = block.get("input")
            self.call(block.get("id") if isinstance(block.get("id"), str) else None,
                      name, tool_input, at)  # fmt: skip
            if name in PLAN_TOOLS and isinstance(tool_input, dict):
                self._plan(name, tool_input)
        elif btype == "tool_result" and kind == "user":
            text = text_of(block.get("content"))
            entry = self.result(block.get("tool_use_id"), text, bool(block.get("is_error")))
            started = outcome.get("agentId") if isinstance(outcome, dict) else None
            if entry is not None and isinstance(started, str) and started:
                entry.subagent = started
        # thinking, images, documents: not shown.

    def _plan(self, tool: str, tool_input: dict[str, Any]) -> None:
        if tool == "TodoWrite":
            todos = tool_input.get("todos")
            if isinstance(todos, list):
                items = [
                    PlanItem(str(t.get("content") or ""), str(t.get("status") or "pending"))
                    for t in todos
                    if isinstance(t, dict)
                ]
                self.plan = Plan(items)
            return
        if tool == "TaskCreate":
            number = str(len(self._tasks) + 1)  # Claude Code numbers a session's tasks 1, 2, …
            subject = tool_input.get("subject") or tool_input.get("description") or ""
            self._tasks[number] = PlanItem(str(subject), "pending")
        elif tool == "TaskUpdate":
            task = self._tasks.get(str(tool_input.get("taskId")))
            status = tool_input.get("status")
            if task is not None and isinstance(status, str):
                task.status = status
            if task is not None and isinstance(tool_input.get("subject"), str):
                task.text = tool_input["subject"]
        self.plan = Plan([t for t in self._tasks.values() if t.status != "deleted"])


def nest(entries: list[Entry], subagents: dict[str, list[Entry]]) -> list[Entry]:
    """The conversation with each sub-agent's entries right after the call that started it
    (a sub-agent no call names, its call cut off, say: at the end)."""
    out: list[Entry] = []
    left = dict(subagents)
    for entry in entries:
        out.append(entry)
        if entry.subagent and entry.subagent in left:
            out.extend(left.pop(entry.subagent))
    for rest in left.values():
        out.extend(rest)
    return out
