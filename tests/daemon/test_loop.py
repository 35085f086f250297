"""The loop through the daemon: an agent's log, its outcome in the list, merge, discard, PR.

In-process daemon + real hosts running the fake Claude Code (which writes its transcript where
Claude Code does) in a worktree of a real git repository.
"""

from __future__ import annotations

import json
import os
import shutil
import tempfile
from collections.abc import AsyncIterator, Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.fakes.fake_github import FakeGitHub, MemoryKeyring
from tests.polling import until
from volee_desktop.core.states import AgentState
from volee_desktop.daemon.main import Daemon
from volee_desktop.daemon.missions import outcomes
from volee_desktop.daemon.missions.review import change_of
from volee_desktop.harness.env import allowed_env
from volee_desktop.ipc.aclient import AsyncClient
from volee_desktop.ipc.protocol import IpcError
from volee_desktop.paths import dirs

from .gitrepos import GIT_ENV, git, make_repo
from .helpers import close_stopping_agents

FAKE_CLAUDE = Path(__file__).resolve().parents[1] / "fakes" / "fake-claude"
COMMIT = "RUN: printf 'one\\ntwo\\n' > f.txt && git add f.txt && git commit -qm 'add f.txt'"


class Loop:
    """A daemon and a client of it, a repository, the fake harness's home."""

    def __init__(self, root: Path, daemon: Daemon, client: AsyncClient) -> None:
        self.root = root
        self.d = daemon
        self.client = client
        self.repo = make_repo(root, remote=False)

    async def call(self, method: str, **params: Any) -> Any:
        return await self.client.call(method, params, timeout=30)

    async def spawn(self, prompt: str, name: str) -> dict[str, Any]:
        env = allowed_env(dict(os.environ))
        env.update(GIT_ENV, FAKE_HARNESS_HOME=str(self.root / "fh"))
        result: dict[str, Any] = await self.call(
            "agents.spawn",
            prompt=prompt,
            name=name,
            cwd=str(self.repo),
            worktree=True,
            env=env,
            permission_mode="bypassPermissions",
        )
        return result

    async def wait(self, check: Callable[[], Any], what: str, timeout: float = 15) -> Any:
        return await until(check, what=what, timeout=timeout)

    async def listed(self, agent_id: str) -> dict[str, Any]:
        agents = await self.call("agents.list")
        found: dict[str, Any] = next(a for a in agents if a["id"] == agent_id)
        return found

    async def done(self, agent_id: str) -> None:
        registry = self.d.service
        await self.wait(lambda: registry.registry.agents[agent_id].state is AgentState.DONE, "done")


@pytest.fixture
def root() -> Iterator[Path]:
    path = Path(tempfile.mkdtemp(prefix="vl", dir="/tmp"))
    yield path
    shutil.rmtree(path, ignore_errors=True)


@pytest.fixture
async def loop(root: Path, monkeypatch: pytest.MonkeyPatch) -> AsyncIterator[Loop]:
    monkeypatch.setenv("VOLEE_CLAUDE_BIN", str(FAKE_CLAUDE))
    daemon = await Daemon.start(dirs())
    client = await AsyncClient.connect(daemon.dirs.socket)
    try:
        yield Loop(root, daemon, client)
    finally:
        await client.close()
        await close_stopping_agents(daemon)


async def test_log_outcome_then_merge_puts_the_commit_on_main(loop: Loop) -> None:
    view = await loop.spawn(COMMIT, "committer")
    agent_id = view["id"]
    await loop.done(agent_id)

    log = await loop.call("agents.log", agent=agent_id)
    kinds = [(e["kind"], e["text"]) for e in log["entries"]]
    assert kinds[0] == ("user", COMMIT)
    assert kinds[-1][0] == "assistant"
    assert log["notice"] is None
    tail = await loop.call("agents.log", agent=agent_id, tail=1)
    assert [e["kind"] for e in tail["entries"]] == ["assistant"]
    assert tail["start"] == log["total"] - 1

    async def outcome() -> dict[str, Any] | None:
        listed = await loop.listed(agent_id)
        return None if listed["change"] is None or listed["last_message"] is None else listed

    listed = await until(outcome, what="the outcome in the list", timeout=15)
    assert listed["change"] == {"files": 1, "added": 2, "removed": 0, "uncommitted": False}
    assert listed["last_message"].startswith("Done")
    assert listed["plan"] is None
    got = await loop.call("agents.get", agent=agent_id)
    assert got["change"] == listed["change"]

    tip = git(view["worktree"], "rev-parse", "HEAD")
    result = await loop.call("agents.merge", agent=agent_id)
    assert result["merged"] is True
    assert result["how"] == "fast-forward"
    assert git(loop.repo, "rev-parse", "main") == tip
    assert (loop.repo / "f.txt").read_text() == "one\ntwo\n"
    # The agent's worktree and branch are still there (tidy removes them once delivered).
    assert Path(view["worktree"]).is_dir()


async def test_merge_is_refused_while_the_agent_works(loop: Loop) -> None:
    view = await loop.spawn("SLEEP: 30", "sleeper")
    agent_id = view["id"]
    await loop.wait(
        lambda: loop.d.service.registry.agents[agent_id].state is AgentState.WORKING, "working"
    )
    before = git(loop.repo, "rev-parse", "main")
    with pytest.raises(IpcError, match=r"sleeper is working.*Stop it \(`volee stop sleeper`\)"):
        await loop.call("agents.merge", agent=agent_id)
    assert git(loop.repo, "rev-parse", "main") == before


async def test_discard_refused_while_live_then_says_what_is_lost_and_removes(loop: Loop) -> None:
    view = await loop.spawn(COMMIT, "thrown")
    agent_id = view["id"]
    await loop.done(agent_id)
    with pytest.raises(IpcError, match="stop it first"):
        await loop.call("agents.discard", agent=agent_id, dry_run=True)
    await loop.call("agents.stop", agent=agent_id)
    await loop.wait(lambda: not loop.d.service.registry.agents[agent_id].state.live, "stopped")
    preview = await loop.call("agents.discard", agent=agent_id, dry_run=True)
    assert preview["discarded"] is False
    assert [c.split(" ", 1)[1] for c in preview["lost"]["commits"]] == ["add f.txt"]
    assert "1 commit not on main would be lost" in preview["text"]
    assert Path(view["worktree"]).is_dir()
    done = await loop.call("agents.discard", agent=agent_id)
    assert done["discarded"] is True
    assert not Path(view["worktree"]).exists()
    assert git(loop.repo, "branch", "--list", "volee/thrown") == ""
    assert git(loop.repo, "rev-parse", "--abbrev-ref", "HEAD") == "main"


async def test_log_of_an_agent_without_a_transcript_says_so(loop: Loop) -> None:
    view = await loop.spawn("hello", "talker")
    agent_id = view["id"]
    await loop.done(agent_id)
    for path in Path(os.environ["CLAUDE_CONFIG_DIR"]).rglob("*.jsonl"):
        path.unlink()
    loop.d.transcripts.forget(agent_id)
    log = await loop.call("agents.log", agent=agent_id)
    assert log["entries"] == []
    assert log["notice"].startswith("no transcript found for session")


async def test_a_large_transcript_comes_in_pages_that_fit_a_reply(loop: Loop) -> None:
    view = await loop.spawn("hello", "long")
    agent_id = view["id"]
    await loop.done(agent_id)
    path = next(Path(os.environ["CLAUDE_CONFIG_DIR"]).rglob("*.jsonl"))
    reply = {"type": "assistant", "message": {"role": "assistant", "content": "x" * 2000}}
    call = {
        "type": "assistant",
        "message": {
            "role": "assistant",
            "content": [
                {"type": "tool_use", "id": "t", "name": "Write", "input": {"content": "y" * 9000}}
            ],
        },
    }
    with path.open("a", encoding="utf-8") as f:
        f.write(json.dumps(call) + "\n")
        for _ in range(5000):
            f.write(json.dumps(reply) + "\n")  # 10 MB with the rest
        f.write('{"type": "assistant", "message": {"role": "assis')  # being written
    first = await loop.call("agents.log", agent=agent_id)
    assert first["total"] == 5003
    assert first["partial"] is True
    assert first["next"] is not None
    assert len(json.dumps(first).encode()) < 1 << 20
    tool = next(e for e in first["entries"] if e["kind"] == "tool")
    assert tool["input"].endswith("(5015 more characters)")  # cut: the reply stays small
    seen = len(first["entries"])
    page = first
    while page["next"] is not None:
        page = await loop.call("agents.log", agent=agent_id, start=page["next"])
        seen += len(page["entries"])
    assert seen == 5003
    tail = await loop.call("agents.log", agent=agent_id, tail=3)
    assert [e["text"] for e in tail["entries"]] == ["x" * 2000] * 3


async def test_agents_outcome_waits_for_the_refresh_a_turns_end_started(loop: Loop) -> None:
    view = await loop.spawn(COMMIT, "prompt")
    agent_id = view["id"]
    await loop.done(agent_id)
    outcome = await loop.call("agents.outcome", agent=agent_id)
    assert outcome["change"] == {"files": 1, "added": 2, "removed": 0, "uncommitted": False}
    assert outcome["last_message"].startswith("Done")


async def test_the_list_tells_the_stop_hooks_reply_before_the_transcript_has_it(
    loop: Loop, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Claude Code may run Stop before the reply is in its transcript: the list does not show
    the turn before's reply meanwhile, and once the transcript has it, its whole first line
    (the transcript read again alone: git is not asked for the change again)."""
    changes: list[object] = []

    def counted(where: Any) -> Any:
        changes.append(where)
        return change_of(where)

    monkeypatch.setattr(outcomes, "change_of", counted)
    view = await loop.spawn("hello", "late")
    agent_id = view["id"]
    await loop.done(agent_id)
    assert (await loop.call("agents.outcome", agent=agent_id))["last_message"] == "ok: hello"

    prompt = "LATE " + "x" * 120
    await loop.call("agents.send", agent=agent_id, text=prompt)
    agents = loop.d.service.registry.agents
    await loop.wait(
        lambda: agents[agent_id].state is AgentState.DONE and "LATE" in agents[agent_id].detail,
        "the second turn done",
    )
    log = await loop.call("agents.log", agent=agent_id)
    # The transcript is behind the hook: it ends at the prompt, its last reply the first turn's.
    assert [(e["kind"], e["text"]) for e in log["entries"][-2:]] == [
        ("assistant", "ok: hello"),
        ("user", prompt),
    ]
    told = (await loop.call("agents.outcome", agent=agent_id))["last_message"]
    assert told == agents[agent_id].detail
    assert told.startswith("ok: LATE xxx")
    assert told.endswith("…")
    read_git = len(changes)

    async def whole() -> str | None:
        listed = await loop.listed(agent_id)
        return listed["last_message"] if listed["last_message"] == f"ok: {prompt}" else None

    await until(whole, what="the reply's whole first line, read again", timeout=10)
    assert len(changes) == read_git


async def test_merge_of_an_agent_whose_worktree_was_deleted_says_so(loop: Loop) -> None:
    view = await loop.spawn(COMMIT, "deleted")
    agent_id = view["id"]
    await loop.done(agent_id)
    await loop.call("agents.stop", agent=agent_id)
    await loop.wait(lambda: not loop.d.service.registry.agents[agent_id].state.live, "stopped")
    shutil.rmtree(view["worktree"])
    with pytest.raises(IpcError, match=r"the folder of deleted \(.*\) is gone: nothing to merge"):
        await loop.call("agents.merge", agent=agent_id)


@pytest.fixture
def github(monkeypatch: pytest.MonkeyPatch) -> Iterator[FakeGitHub]:
    import keyring

    server = FakeGitHub(token="ghp_secret").start()
    previous = keyring.get_keyring()
    store = MemoryKeyring()
    store.set_password("volee", "github", "ghp_secret")
    keyring.set_keyring(store)
    monkeypatch.setenv("VOLEE_GITHUB_API", server.url)
    yield server
    keyring.set_keyring(previous)
    server.close()


async def test_open_pr_through_the_daemon_pushes_and_opens_it_on_github(
    loop: Loop, github: FakeGitHub
) -> None:
    loop.repo = make_repo(loop.root / "gh", slug="acme/widget")
    view = await loop.spawn(COMMIT, "proposer")
    agent_id = view["id"]
    await loop.done(agent_id)
    said = await loop.call("agents.open_pr", agent=agent_id, dry_run=True)
    assert said["text"].startswith(f"pushes {view['branch']} (1 commit) to origin and opens")
    assert github.pulls == {}
    result = await loop.call("agents.open_pr", agent=agent_id)
    tip = git(view["worktree"], "rev-parse", "HEAD")
    assert git(loop.root / "gh" / "repo.git", "rev-parse", view["branch"]) == tip
    pr = github.pulls["acme/widget"][0]
    assert (pr["head"]["ref"], pr["base"], pr["title"]) == (view["branch"], "main", result["title"])
    assert result["title"].startswith("proposer: RUN:")
    assert result["url"] == "https://github.com/acme/widget/pull/1"
