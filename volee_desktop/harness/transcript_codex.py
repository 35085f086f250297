"""codex's rollout (``$CODEX_HOME/sessions/YYYY/MM/DD/rollout-<ts>-<id>.jsonl``) as entries.

Read in 0.171.0 (tests/harness/transcripts/codex-0.171.0.jsonl): every line is
``{timestamp, type, payload}``.  The conversation is in ``response_item`` lines (``message``
with a role and ``input_text``/``output_text`` blocks, ``function_call`` with JSON
``arguments`` and a ``call_id``, then its ``function_call_output``; ``custom_tool_call`` for
apply_patch); ``event_msg`` lines repeat it for the UI and add the turn's end
(``task_complete``, with ``error`` when the model failed) and ``error``.  codex's own
context for the model (``<environment_context>``, the AGENTS.md and permission texts, the
developer role) is not shown.  The plan is the ``update_plan`` call's ``plan`` (``step``,
``status``); ``codex exec`` 0.171 does not offer that tool and answers "unsupported call",
and such a plan is not kept.
"""

from __future__ import annotations

import json
import re
from typing import Any

from ..core.model import Harness
from .transcript import Entry, EntryKind, Parser, Plan, PlanItem, text_of, user_entry

#: Line types that are not the conversation, seen in 0.171.
METADATA = frozenset(
    {"session_meta", "turn_context", "world_state", "token_usage_record", "compacted"}
)
#: Texts codex puts in user messages for the model, not the person's.
CONTEXT_PREFIXES = (
    "<environment_context>", "<user_instructions>", "<permissions", "# AGENTS.md",
    "<skills_instructions>", "<user_shell_command>", "<turn_aborted>",
)  # fmt: skip
_EXIT = re.compile(r"Process exited with code (\d+)")


def _error_text(value: Any) -> str:
    """An error's message; codex passes the API's JSON body through as text."""
    if isinstance(value, dict):
        value = value.get("message") or json.dumps(value)
    text = str(value or "the turn failed")
    try:
        body = json.loads(text)
    except ValueError:
        return text
    if isinstance(body, dict) and isinstance(body.get("error"), dict):
        return str(body["error"].get("message") or text)
    return text


class CodexTranscript(Parser):
    """The parser of codex rollouts."""

    harness = Harness.CODEX

    def __init__(self, keep: bool = True) -> None:
        super().__init__(keep)
        self._plans: dict[str, Plan | None] = {}  # call id -> the plan before that call

    def line(self, data: dict[str, Any]) -> bool:
        kind = data.get("type")
        payload = data.get("payload")
        if kind in METADATA:
            return True
        if not isinstance(payload, dict):
            return False
        at = data.get("timestamp") if isinstance(data.get("timestamp"), str) else None
        if kind == "response_item":
            return self._item(payload, at)
        if kind == "event_msg":
            self._event(payload, at)
            return True
        return False

    def _item(self, item: dict[str, Any], at: str | None) -> bool:
        itype = item.get("type")
        if itype == "message":
            role = item.get("role")
            text = text_of(item.get("content"))
            if role == "user" and not text.lstrip().startswith(CONTEXT_PREFIXES):
                self.add(user_entry(text, at))
            elif role == "assistant" and text:
                self.add(Entry(EntryKind.ASSISTANT, text, at))
            return True
        if itype in ("function_call", "custom_tool_call", "local_shell_call"):
            name = str(item.get("name") or itype)
            raw = item.get("arguments", item.get("input", item.get("action")))
            try:
                arguments = (
                    json.loads(raw) if isinstance(raw, str) and itype == "function_call" else raw
                )
            except ValueError:
                arguments = raw
            call_id = item.get("call_id") if isinstance(item.get("call_id"), str) else None
            self.call(call_id, name, arguments, at)
            if name == "update_plan" and isinstance(arguments, dict) and call_id:
                self._plans[call_id] = self.plan
                self._set_plan(arguments.get("plan"))
            return True
        if itype in ("function_call_output", "custom_tool_call_output"):
            output = item.get("output")
            if isinstance(output, dict):
                output = output.get("output") or output.get("content")
            text = text_of(output) if not isinstance(output, str) else output
            code = _EXIT.search(text)
            failed = bool(code and code.group(1) != "0") or text.startswith("unsupported call")
            call_id = item.get("call_id")
            if isinstance(call_id, str) and call_id in self._plans:
                before = self._plans.pop(call_id)
                if text.startswith("unsupported call"):
                    self.plan = before  # codex did not take this plan
            self.result(call_id, text, failed)
            return True
        # reasoning, web searches, ghost snapshots: not shown.
        return isinstance(itype, str)

    def _event(self, event: dict[str, Any], at: str | None) -> None:
        etype = event.get("type")
        if etype == "task_complete":
            if event.get("error"):
                self.add(Entry(EntryKind.ERROR, _error_text(event["error"]), at))
            elif isinstance(event.get("last_agent_message"), str):
                self.last_message = event["last_agent_message"]
        elif etype in ("error", "stream_error") and event.get("message"):
            self.add(Entry(EntryKind.ERROR, _error_text(event["message"]), at))
        elif etype in ("turn_aborted", "task_aborted"):
            self.add(
                Entry(EntryKind.ERROR, f"turn interrupted ({event.get('reason') or 'aborted'})", at)
            )
        elif etype == "plan_update":
            self._set_plan(event.get("plan"))

    def _set_plan(self, steps: Any) -> None:
        if not isinstance(steps, list):
            return
        items = [
            PlanItem(str(s.get("step") or ""), str(s.get("status") or "pending"))
            for s in steps
            if isinstance(s, dict)
        ]
        self.plan = Plan(items)
