"""Claude Code's sub-agents in a recorded real 2.1.332 session (its Agent tool, async): the call
is marked with the sub-agent's id and the sub-agent's own file nests under it."""

from __future__ import annotations

from pathlib import Path

from volee_desktop.harness.transcript import Splitter
from volee_desktop.harness.transcript_claude import ClaudeTranscript, nest

RECORDED = Path(__file__).parent / "transcripts" / "claude-2.1.332-subagent"
SUB = "af20e3c896d344fc2"


def _read(path: Path, subagent: str | None = None) -> ClaudeTranscript:
    parser = ClaudeTranscript(subagent)
    parser.feed(Splitter().push(path.read_bytes()))
    return parser


def test_the_agent_call_names_its_sub_agent_and_its_file_nests_under_it() -> None:
    main = _read(RECORDED / "session.jsonl")
    call = next(e for e in main.entries if e.tool == "Agent")
    assert call.subagent == SUB
    assert call.text.startswith("Agent")
    assert all(e.within is None for e in main.entries)  # the session's own lines only
    sub = _read(RECORDED / "subagents" / f"agent-{SUB}.jsonl", SUB)
    assert [(e.kind, e.text) for e in sub.entries] == [
        ("user", "list the files here and say what you found"),
        ("assistant", "Found only hidden files: the folder is empty."),
    ]
    nested = nest(main.entries, {SUB: sub.entries})
    at = nested.index(call)
    assert nested[at + 1 : at + 3] == sub.entries
    assert [e.within for e in nested[at + 1 : at + 3]] == [SUB, SUB]
    assert nested[-1].text == "The sub-agent says the folder is empty."
    assert call.to_json()["subagent"] == SUB
    assert sub.entries[0].to_json()["within"] == SUB


def test_sidechain_lines_are_not_the_sessions_own_conversation() -> None:
    # Read as a session (no sub-agent named), a sub-agent's file shows nothing: its lines are
    # all sidechain lines, which older releases wrote into the session's own file.
    assert _read(RECORDED / "subagents" / f"agent-{SUB}.jsonl").entries == []
