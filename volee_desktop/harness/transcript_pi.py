"""pi's session file (``~/.pi/agent/sessions/--<cwd>--/<time>_<id>.jsonl``) as entries.

Read in 0.73.1 (tests/harness/transcripts/pi-0.73.1.jsonl, format ``version`` 3): a
``session`` line, then ``model_change``/``thinking_level_change`` and one ``message`` line per
message: ``user`` (text blocks), ``assistant`` (``text`` and ``toolCall`` blocks with
``arguments``; ``stopReason`` ``error`` with ``errorMessage`` when the model failed,
``aborted`` when cut off) and ``toolResult`` (``toolCallId``, ``isError``).  pi keeps no plan.
"""

from __future__ import annotations

import json
from typing import Any

from ..core.model import Harness
from .transcript import Entry, EntryKind, Parser, text_of, user_entry

METADATA = frozenset(
    {"model_change", "thinking_level_change", "compaction", "branch_summary", "custom", "label",
     "session_info"}
)  # fmt: skip
FORMAT = 3  # the session format version 0.73 writes


def _error_text(text: str) -> str:
    """pi's error: ``400 {json body}``; the body's message when there is one."""
    status, _, body = text.partition(" ")
    try:
        data = json.loads(body)
    except ValueError:
        return text
    error = data.get("error") if isinstance(data, dict) else None
    if isinstance(error, dict) and error.get("message"):
        return f"{status} {error['message']}" if status.isdigit() else str(error["message"])
    return text


class PiTranscript(Parser):
    """The parser of pi's session files."""

    harness = Harness.PI

    def line(self, data: dict[str, Any]) -> bool:
        kind = data.get("type")
        if kind == "session":
            version = data.get("version")
            return not (isinstance(version, int) and version > FORMAT)
        if kind in METADATA:
            return True
        message = data.get("message")
        if kind != "message" or not isinstance(message, dict):
            return False
        at = data.get("timestamp") if isinstance(data.get("timestamp"), str) else None
        role = message.get("role")
        content = message.get("content")
        if role == "user":
            self.add(user_entry(text_of(content), at))
        elif role == "assistant":
            for block in content if isinstance(content, list) else []:
                if not isinstance(block, dict):
                    continue
                if block.get("type") == "text" and isinstance(block.get("text"), str):
                    self.add(Entry(EntryKind.ASSISTANT, block["text"], at))
                elif block.get("type") == "toolCall":
                    call_id = block.get("id") if isinstance(block.get("id"), str) else None
                    self.call(call_id, str(block.get("name") or "tool"), block.get("arguments"), at)
            reason = message.get("stopReason")
            if reason == "error":
                error = str(message.get("errorMessage") or "the model failed")
                self.add(Entry(EntryKind.ERROR, _error_text(error), at))
            elif reason == "aborted":
                self.add(Entry(EntryKind.ERROR, "turn interrupted (aborted)", at))
        elif role == "toolResult":
            text = text_of(content)
            if self.result(message.get("toolCallId"), text, bool(message.get("isError"))) is None:
                return False
        else:
            return False
        return True
