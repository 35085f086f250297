"""``agents.harnesses``: what the daemon finds for each harness (the New agent dialog's list),
and ``agents.spawn``'s ``branch`` for the new worktree."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest

from volee_desktop.daemon.main import Daemon
from volee_desktop.ipc.aclient import AsyncClient
from volee_desktop.ipc.protocol import IpcError
from volee_desktop.paths import dirs

from .gitrepos import git, make_repo
from .helpers import close_stopping_agents

CODEX_HELP = """Usage: codex [OPTIONS] [PROMPT]
  -s, --sandbox <SANDBOX_MODE>
          [possible values: read-only, workspace-write, danger-full-access]
  -a, --ask-for-approval <APPROVAL_POLICY>
          Possible values:
          - on-request: the model decides when to ask
          - never:      never ask
      --search
"""


def fake_codex(folder: Path) -> Path:
    """A codex that answers --version and --help as codex 0.171 does."""
    (folder / "help.txt").write_text(CODEX_HELP)
    path = folder / "codex"
    path.write_text(
        "#!/bin/sh\n"
        'case "$1" in\n'
        "  --version) echo 'codex-cli 0.171.0' ;;\n"
        f"  --help) cat {folder / 'help.txt'} ;;\n"
        "esac\n"
    )
    path.chmod(0o755)
    return path


DAEMONS: dict[int, Daemon] = {}


def client_daemon(client: AsyncClient) -> Daemon:
    """The in-process daemon ``client`` is connected to."""
    return DAEMONS[id(client)]


@pytest.fixture
async def client(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> AsyncIterator[AsyncClient]:
    monkeypatch.setenv("VOLEE_CODEX_BIN", str(fake_codex(tmp_path)))
    monkeypatch.setenv("VOLEE_PI_BIN", str(tmp_path / "no-such-pi"))
    daemon = await Daemon.start(dirs())
    conn = await AsyncClient.connect(daemon.dirs.socket)
    DAEMONS[id(conn)] = daemon
    try:
        yield conn
    finally:
        await conn.close()
        await close_stopping_agents(daemon)
        DAEMONS.pop(id(conn), None)


async def settled(client: AsyncClient, **params: Any) -> list[dict[str, Any]]:
    """``agents.harnesses`` once no probe is under way (each call waits a moment for them)."""
    for _ in range(600):
        answer: list[dict[str, Any]] = (await client.call("agents.harnesses", params))["harnesses"]
        if not any(h.get("probing") for h in answer):
            return answer
    pytest.fail(f"still probing: {answer}")


async def test_each_harness_with_its_program_version_and_modes(client: AsyncClient) -> None:
    found: dict[str, Any] = {h["harness"]: h for h in await settled(client)}
    assert list(found) == ["claude", "codex", "pi", "generic"]
    codex = found["codex"]
    assert codex["version"] == "0.171.0"
    assert codex["problem"] is None
    # What this codex takes, as a launch checks it: not the modes 0.171 dropped.
    assert "on-failure" not in codex["modes"]
    assert "untrusted" not in codex["modes"]
    assert {"default", "acceptEdits", "plan", "bypassPermissions", "never"} <= set(codex["modes"])
    pi = found["pi"]
    assert pi["path"] is None
    assert "does not exist or cannot run" in pi["problem"]
    assert found["claude"]["default_mode"] == "acceptEdits"
    assert found["generic"] == {
        "harness": "generic",
        "path": None,
        "version": None,
        "problem": None,
        "modes": [],
        "default_mode": None,
    }


async def test_spawn_makes_the_worktree_on_the_branch_asked(
    client: AsyncClient, tmp_path: Path
) -> None:
    repo = make_repo(tmp_path, remote=False)
    view = await client.call(
        "agents.spawn",
        {
            "harness": "generic",
            "argv": ["true"],
            "name": "brancher",
            "cwd": str(repo),
            "worktree": True,
            "branch": "fix/login",
        },
        timeout=30,
    )
    assert view["branch"] == "fix/login"
    assert git(view["worktree"], "rev-parse", "--abbrev-ref", "HEAD") == "fix/login"


async def test_a_slow_probe_never_holds_the_connection(
    client: AsyncClient, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A --version that does not answer yet: ``probing``, and the same connection's next
    request is served meanwhile; once it answers, the version."""
    go = tmp_path / "go"
    slow = tmp_path / "slow-pi"
    slow.write_text(f"#!/bin/sh\nwhile [ ! -e {go} ]; do sleep 0.02; done\necho 0.73.1\n")
    slow.chmod(0o755)
    monkeypatch.setitem(client_daemon(client).agents.binaries, "pi", str(slow))
    first = await client.call("agents.harnesses", {"harness": "pi"})
    assert first["harnesses"] == [{"harness": "pi", "probing": True}]
    assert isinstance(await client.call("agents.list", {}), list)
    go.touch()
    [answer] = await settled(client, harness="pi")
    assert answer["version"] == "0.73.1"
    assert answer["path"] == str(slow)


async def test_one_harness_at_a_time_and_an_unknown_one_refused(client: AsyncClient) -> None:
    answer = await settled(client, harness="codex")
    assert [h["harness"] for h in answer] == ["codex"]
    with pytest.raises(IpcError, match="unknown harness 'emacs'"):
        await client.call("agents.harnesses", {"harness": "emacs"})
