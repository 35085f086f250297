"""Where each harness keeps an agent's transcript, and following one as it grows."""

from __future__ import annotations

import shutil
from pathlib import Path

from volee_desktop.core.model import Agent, Harness, LaunchSettings
from volee_desktop.daemon.missions.transcripts import Followed, transcript_path
from volee_desktop.harness.transcripts import parser_for

SAMPLES = Path(__file__).resolve().parents[1] / "harness" / "transcripts"
SESSION = "01a233f4-71d0-7d90-866f-e617751a95cd"


def _agent(harness: Harness, env: dict[str, str]) -> Agent:
    launch = LaunchSettings(harness=harness, cwd="/p", env=env)
    return Agent(id="ag_1", name="a", harness=harness, launch=launch, sessions=(SESSION,))


def test_claude_code_codex_and_pi_transcripts_are_found_under_the_agents_home(
    tmp_path: Path,
) -> None:
    home = tmp_path / "h"
    claude = home / ".claude" / "projects" / "-p" / f"{SESSION}.jsonl"
    codex = (
        home
        / ".codex"
        / "sessions"
        / "2026"
        / "12"
        / "01"
        / f"rollout-2026-12-01T09-15-41-{SESSION}.jsonl"
    )
    pi = home / ".pi" / "agent" / "sessions" / "--p--" / f"2026-12-01T09-15-44-430Z_{SESSION}.jsonl"
    for path in (claude, codex, pi):
        path.parent.mkdir(parents=True)
        path.write_text("")
    env = {"HOME": str(home)}
    assert transcript_path(_agent(Harness.CLAUDE, env), SESSION) == claude
    assert transcript_path(_agent(Harness.CODEX, env), SESSION) == codex
    assert transcript_path(_agent(Harness.PI, env), SESSION) == pi
    assert transcript_path(_agent(Harness.GENERIC, env), SESSION) is None
    assert transcript_path(_agent(Harness.CLAUDE, env), "another-session") is None
    # CLAUDE_CONFIG_DIR and CODEX_HOME move them.
    moved = {
        "HOME": str(home),
        "CLAUDE_CONFIG_DIR": str(tmp_path / "c"),
        "CODEX_HOME": str(tmp_path / "x"),
    }
    assert transcript_path(_agent(Harness.CLAUDE, moved), SESSION) is None
    assert transcript_path(_agent(Harness.CODEX, moved), SESSION) is None


def test_following_reads_what_was_added_and_starts_again_when_replaced(tmp_path: Path) -> None:
    lines = (SAMPLES / "pi-0.73.1.jsonl").read_text().splitlines(keepends=True)
    path = tmp_path / "s.jsonl"
    path.write_text("".join(lines[:5]))
    parser = parser_for(Harness.PI)
    assert parser is not None
    followed = Followed(path, parser)
    followed.catch_up()
    assert [str(e.kind) for e in followed.parser.entries] == ["user", "tool"]
    with path.open("a") as f:
        f.write("".join(lines[5:]))
    followed.catch_up()
    assert len(followed.parser.entries) == 6
    # Replaced by a shorter file (another inode): read from its start again.
    other = tmp_path / "other.jsonl"
    other.write_text("".join(lines[:4]))
    shutil.move(other, path)
    followed.catch_up()
    assert [str(e.kind) for e in followed.parser.entries] == ["user"]


async def test_at_most_kept_transcripts_are_followed_and_one_let_go_reads_again(
    tmp_path: Path,
) -> None:
    # Sixty agents' whole conversations are not held for the daemon's life.
    from volee_desktop.core.registry import Registry
    from volee_desktop.daemon.missions.transcripts import KEPT, Transcripts
    from volee_desktop.daemon.service import Service
    from volee_desktop.ipc.server import MethodTable
    from volee_desktop.store.memory import MemoryLog
    from volee_desktop.store.records import Record

    sample = SAMPLES / "pi-0.73.1.jsonl"
    agents = []
    for n in range(KEPT + 4):
        home = tmp_path / f"h{n}"
        path = (
            home
            / ".pi"
            / "agent"
            / "sessions"
            / "--p--"
            / f"2026-12-01T09-15-44-430Z_{SESSION}.jsonl"
        )
        path.parent.mkdir(parents=True)
        shutil.copy(sample, path)
        launch = LaunchSettings(harness=Harness.PI, cwd="/p", env={"HOME": str(home)})
        agents.append(
            Agent(
                id=f"ag_{n}", name=f"a{n}", harness=Harness.PI, launch=launch, sessions=(SESSION,)
            )
        )
    transcripts = Transcripts(Service(MemoryLog(), Registry(), Record), MethodTable())
    first = await transcripts.read(agents[0])
    assert first.entries
    for agent in agents[1:]:
        await transcripts.read(agent)
        assert transcripts.followed <= KEPT
    assert transcripts.followed == KEPT
    again = await transcripts.read(agents[0])  # let go long ago: parsed again from its start
    assert again.entries == first.entries


async def test_a_rows_summary_keeps_no_entries_and_says_what_the_whole_conversation_says(
    tmp_path: Path,
) -> None:
    # The rows' summaries are read at every turn's end of every agent: a parser that kept
    # each conversation's entries grew the daemon with every turn (issue 22's soak).
    from volee_desktop.core.registry import Registry
    from volee_desktop.daemon.missions.transcripts import Transcripts
    from volee_desktop.daemon.service import Service
    from volee_desktop.ipc.server import MethodTable
    from volee_desktop.store.memory import MemoryLog
    from volee_desktop.store.records import Record

    home = tmp_path / "h"
    root = home / ".codex" / "sessions" / "2026" / "12" / "01"
    path = root / f"rollout-2026-12-01T09-15-41-{SESSION}.jsonl"
    path.parent.mkdir(parents=True)
    lines = (SAMPLES / "codex-0.171.0.jsonl").read_text().splitlines(keepends=True)
    path.write_text("".join(lines * 20))
    launch = LaunchSettings(harness=Harness.CODEX, cwd="/p", env={"HOME": str(home)})
    agent = Agent(id="ag_1", name="a", harness=Harness.CODEX, launch=launch, sessions=(SESSION,))
    transcripts = Transcripts(Service(MemoryLog(), Registry(), Record), MethodTable())

    summary = await transcripts.summary(agent)
    assert summary.entries == []
    assert (transcripts.followed, transcripts.summarised) == (0, 1)
    kept = [f.parser for f in transcripts._summaries.values()]
    assert [p.entries for p in kept] == [[]]
    assert kept[0].count > 100

    whole = await transcripts.read(agent)
    assert len(whole.entries) == kept[0].count
    assert summary.plan == whole.plan
    assert summary.last_message is not None
    assert summary.last_message == whole.last_message
    assert (transcripts.followed, transcripts.summarised) == (1, 1)

    # Followed as it grows, and replaced: still nothing kept.
    with path.open("a") as f:
        f.write("".join(lines))
    again = await transcripts.summary(agent)
    assert again.entries == []
    assert kept[0].entries == []
    assert kept[0].count > len(whole.entries)
    shorter = tmp_path / "short.jsonl"
    shorter.write_text("".join(lines))
    shutil.move(shorter, path)
    replaced = await transcripts.summary(agent)
    parser = next(iter(transcripts._summaries.values())).parser
    assert replaced.entries == []
    assert parser.entries == []
    assert not parser.keep
    assert parser.count == len((await transcripts.read(agent)).entries)

    transcripts.forget(agent.id)
    assert (transcripts.followed, transcripts.summarised) == (0, 0)
