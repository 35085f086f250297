"""The transcript parsers, on real transcripts of Claude Code 2.1.332, codex 0.171 and pi 0.73.

The files in ``transcripts/`` were recorded by ``record_transcripts.py`` against the project's
fake model servers: a plan, a tool call, a failing tool call, a reply, then (Claude Code) a
prompt too long that it compacted, and a turn the API refused.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from volee_desktop.core.model import Harness
from volee_desktop.harness.transcript import EntryKind, Splitter
from volee_desktop.harness.transcripts import parse, parser_for

TRANSCRIPTS = Path(__file__).resolve().parent / "transcripts"


def _text(name: str) -> str:
    return (TRANSCRIPTS / name).read_text(encoding="utf-8")


def _kinds(harness: Harness, text: str) -> list[str]:
    return [str(e.kind) for e in parse(harness, text).entries]


def test_claude_code_prompts_tool_calls_with_results_a_failure_and_an_api_error() -> None:
    parsed = parse(Harness.CLAUDE, _text("claude-2.1.332.jsonl"))
    assert (parsed.unreadable, parsed.unknown) == (0, 0)
    entries = parsed.entries
    assert entries[0].kind is EntryKind.USER
    assert entries[0].text == "write out.txt and check it"
    bash = [e for e in entries if e.tool == "Bash"]
    assert [e.input["command"] for e in bash] == ["echo hi > out.txt", "cat missing.txt"]
    assert bash[0].text == "Bash: echo hi > out.txt"
    assert bash[0].result == "(Bash completed with no output)"
    assert not bash[0].failed
    assert bash[1].failed
    assert "No such file or directory" in (bash[1].result or "")
    reply = next(e for e in entries if e.kind is EntryKind.ASSISTANT)
    assert reply.text.startswith("Wrote **out.txt**.")
    # The compaction's summary is Claude's own text, not a prompt of the person.
    users = [e.text for e in entries if e.kind is EntryKind.USER]
    assert users == ["write out.txt and check it", "and now the rest", "one more thing"]
    assert entries[-1].kind is EntryKind.ERROR
    assert entries[-1].text == (
        "API Error: 400 invalid_request: this request was refused by the fake"
    )
    assert parsed.last_message == "OK"


def test_claude_code_plan_from_task_create_and_update() -> None:
    parsed = parse(Harness.CLAUDE, _text("claude-2.1.332.jsonl"))
    assert parsed.plan is not None
    assert parsed.plan.to_json() == {
        "done": 2,
        "total": 3,
        "items": [
            {"text": "write out.txt", "status": "completed"},
            {"text": "check the file", "status": "completed"},
            {"text": "report", "status": "pending"},
        ],
    }


def test_claude_code_todowrite_of_older_releases_is_the_whole_list() -> None:
    call = {
        "type": "assistant",
        "message": {
            "role": "assistant",
            "content": [
                {
                    "type": "tool_use",
                    "id": "t1",
                    "name": "TodoWrite",
                    "input": {
                        "todos": [
                            {"content": "a", "status": "completed", "activeForm": "A"},
                            {"content": "b", "status": "in_progress", "activeForm": "B"},
                        ]
                    },
                }
            ],
        },
    }
    parsed = parse(Harness.CLAUDE, json.dumps(call) + "\n")
    assert parsed.plan is not None
    assert (parsed.plan.done, len(parsed.plan.items)) == (1, 2)


def test_codex_rollout_tool_calls_failure_error_and_last_message() -> None:
    parsed = parse(Harness.CODEX, _text("codex-0.171.0.jsonl"))
    assert (parsed.unreadable, parsed.unknown) == (0, 0)
    kinds = [str(e.kind) for e in parsed.entries]
    # codex's own context (environment, instructions) is not a prompt of the person.
    assert kinds[0] == "user"
    assert parsed.entries[0].text == "write a.txt and check it"
    shell = [e for e in parsed.entries if e.tool == "exec_command"]
    assert [e.input for e in shell] == [{"cmd": "echo hi > a.txt"}, {"cmd": "cat missing.txt"}]
    assert [e.failed for e in shell] == [False, True]
    assert "Process exited with code 1" in (shell[1].result or "")
    assert parsed.entries[-1].kind is EntryKind.ERROR
    assert parsed.entries[-1].text == "invalid_request: this request was refused by the fake"
    assert parsed.last_message == "Wrote a.txt.\nThe check failed: missing.txt does not exist."
    # codex exec 0.171 refuses update_plan ("unsupported call"): no plan is kept.
    assert parsed.plan is None


def test_codex_plan_update_that_codex_accepted_is_the_plan() -> None:
    call = {
        "type": "response_item",
        "payload": {
            "type": "function_call",
            "name": "update_plan",
            "call_id": "c1",
            "arguments": json.dumps(
                {"plan": [{"step": "a", "status": "completed"}, {"step": "b", "status": "pending"}]}
            ),
        },
    }
    output = {
        "type": "response_item",
        "payload": {"type": "function_call_output", "call_id": "c1", "output": "Plan updated"},
    }
    parsed = parse(Harness.CODEX, json.dumps(call) + "\n" + json.dumps(output) + "\n")
    assert parsed.plan is not None
    assert (parsed.plan.done, len(parsed.plan.items)) == (1, 2)


def test_pi_session_tool_calls_failure_and_error() -> None:
    parsed = parse(Harness.PI, _text("pi-0.73.1.jsonl"))
    assert (parsed.unreadable, parsed.unknown) == (0, 0)
    assert [str(e.kind) for e in parsed.entries] == [
        "user", "tool", "tool", "assistant", "user", "error"
    ]  # fmt: skip
    tools = [e for e in parsed.entries if e.kind is EntryKind.TOOL]
    assert [e.text for e in tools] == ["bash: echo hi > b.txt", "bash: cat missing.txt"]
    assert [e.failed for e in tools] == [False, True]
    assert parsed.entries[-1].text == "400 invalid_request: this request was refused by the fake"
    assert parsed.plan is None
    assert parsed.last_message == "Wrote b.txt.\nThe check failed: missing.txt does not exist."


@pytest.mark.parametrize(
    ("harness", "name"),
    [
        (Harness.CLAUDE, "claude-2.1.332.jsonl"),
        (Harness.CODEX, "codex-0.171.0.jsonl"),
        (Harness.PI, "pi-0.73.1.jsonl"),
    ],
)
def test_a_truncated_last_line_waits_and_the_rest_parses(harness: Harness, name: str) -> None:
    text = _text(name)
    whole = parse(harness, text)
    cut = text[: len(text) - 40]  # the last line cut off mid-way
    splitter = Splitter()
    parser = parser_for(harness)
    assert parser is not None
    parser.feed(splitter.push(cut.encode()))
    assert splitter.partial
    assert parser.unreadable == 0
    assert len(parser.entries) >= len(whole.entries) - 1
    # The rest of the line arrives: it is read as if it had never been cut.
    parser.feed(splitter.push(text[len(cut) :].encode()))
    assert not splitter.partial
    assert [e.to_json() for e in parser.entries] == [e.to_json() for e in whole.entries]


def test_an_unknown_newer_format_shows_what_parses_and_counts_the_rest() -> None:
    text = _text("claude-2.1.332.jsonl")
    newer = {"type": "conversation-turn-v9", "payload": {"text": "hello"}}
    odd = {"type": "user", "message": "not an object"}
    mixed = text + json.dumps(newer) + "\n" + json.dumps(odd) + "\n" + "{not json\n"
    parsed = parse(Harness.CLAUDE, mixed)
    assert len(parsed.entries) == len(parse(Harness.CLAUDE, text).entries)
    assert (parsed.unknown, parsed.unreadable) == (2, 1)


def test_pi_session_of_a_newer_format_version_is_said_unknown() -> None:
    lines = _text("pi-0.73.1.jsonl").splitlines()
    first = json.loads(lines[0])
    first["version"] = 4
    parsed = parse(Harness.PI, "\n".join([json.dumps(first), *lines[1:]]) + "\n")
    assert parsed.unknown == 1
    assert _kinds(Harness.PI, "\n".join(lines[1:]) + "\n")[0] == "user"


def test_volee_messages_are_labelled() -> None:
    line = {"type": "user", "message": {"role": "user", "content": "[volee] main moved"}}
    parsed = parse(Harness.CLAUDE, json.dumps(line) + "\n")
    assert [str(e.kind) for e in parsed.entries] == ["volee"]


def test_a_huge_tool_input_and_result_are_kept_cut() -> None:
    call = {
        "type": "assistant",
        "message": {
            "role": "assistant",
            "content": [
                {"type": "tool_use", "id": "t1", "name": "Write",
                 "input": {"file_path": "a.txt", "content": "x" * 100_000}},
            ],
        },
    }  # fmt: skip
    result = {
        "type": "user",
        "message": {
            "role": "user",
            "content": [{"type": "tool_result", "tool_use_id": "t1", "content": "y" * 50_000}],
        },
    }
    parsed = parse(Harness.CLAUDE, json.dumps(call) + "\n" + json.dumps(result) + "\n")
    tool = parsed.entries[0]
    assert tool.text == "Write: a.txt"
    assert isinstance(tool.input, str)
    assert len(tool.input) < 17_000
    assert tool.input.endswith("more characters)")
    assert tool.result is not None
    assert tool.result.endswith("(33616 more characters)")


@pytest.mark.parametrize(
    ("harness", "name"),
    [
        (Harness.CLAUDE, "claude-2.1.332.jsonl"),
        (Harness.CODEX, "codex-0.171.0.jsonl"),
        (Harness.PI, "pi-0.73.1.jsonl"),
    ],
)
def test_a_parser_that_keeps_no_entries_counts_them_and_has_the_same_plan_and_last_reply(
    harness: Harness, name: str
) -> None:
    text = _text(name)
    whole = parse(harness, text)
    parser = parser_for(harness, keep=False)
    assert parser is not None
    assert not parser.keep
    parser.feed(Splitter().push(text.encode()))
    assert parser.entries == []
    assert parser.count == whole.count == len(whole.entries) > 0
    assert parser.plan == whole.plan
    assert parser.last_message == whole.last_message is not None
    assert (parser.unreadable, parser.unknown) == (whole.unreadable, whole.unknown)
    if harness is Harness.CLAUDE:
        assert parser.plan is not None  # the sample has one: a plan is read without entries
