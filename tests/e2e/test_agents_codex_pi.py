"""Smoke tests of volee with the REAL codex and pi (against the fake model APIs).

Each: ``volee spawn --harness …`` -> the tool really runs -> done, with the session id the
harness reported linked -> ``volee stop`` holds it -> ``volee send`` resumes the same session.
Skipped cleanly when the harness is not installed.
"""

from __future__ import annotations

import json
import os
import shlex
import signal
import sys
from pathlib import Path

import pytest

from tests.e2e.agents_rig import Volee
from tests.fakes.fake_anthropic import FakeAnthropic
from tests.fakes.harness_env import FAKE_MODEL, Sandbox

pytestmark = [pytest.mark.e2e, pytest.mark.timeout(60)]


def _stop_then_resume(volee: Volee, name: str, project: Path, harness_flag: str) -> None:
    agent = volee.agent(name)
    session = agent["session_id"]
    assert session

    assert "held" in volee.cli("stop", name).stdout
    stopped = volee.wait_state(name, "stopped", timeout=15)
    assert stopped["held"] == "stopped by you"

    volee.cli("send", name, f"RUN: echo again > {harness_flag}-again.txt")

    resumed = volee.wait(
        name,
        lambda a: a["state"] == "done" and a["held"] is None and "again" in a["activity"],
        "the resumed turn",
        timeout=30,
    )
    assert resumed["session_id"] == session
    assert (project / f"{harness_flag}-again.txt").read_text() == "again\n"
    argv = volee.record(agent["id"])["argv"]
    assert session in argv


@pytest.mark.codex
def test_codex_runs_links_its_session_stops_and_resumes(
    codex_volee: Volee, real_sandbox: Sandbox
) -> None:
    project = real_sandbox.project
    codex_volee.cli(
        "spawn",
        "--harness",
        "codex",
        "--cwd",
        str(project),
        "--name",
        "x1",
        "--permission-mode",
        "workspace-write",
        "--",
        "RUN: echo codex > codex.txt",
    )

    agent = codex_volee.wait_state("x1", "done", timeout=30)

    assert (project / "codex.txt").read_text() == "codex\n"
    assert agent["activity"] == "Bash: echo codex > codex.txt"
    _stop_then_resume(codex_volee, "x1", project, "codex")
    assert codex_volee.record(agent["id"])["argv"][1] == "resume"


@pytest.mark.pi
def test_pi_runs_links_its_session_stops_and_resumes(
    pi_volee: Volee, real_sandbox: Sandbox
) -> None:
    project = real_sandbox.project
    pi_volee.cli(
        "spawn",
        "--harness",
        "pi",
        "--cwd",
        str(project),
        "--name",
        "p1",
        "--model",
        f"fake/{FAKE_MODEL}",
        "--",
        "RUN: echo pi > pi.txt",
    )

    agent = pi_volee.wait_state("p1", "done", timeout=30)

    assert (project / "pi.txt").read_text() == "pi\n"
    assert agent["activity"] == "bash: echo pi > pi.txt"
    _stop_then_resume(pi_volee, "p1", project, "pi")
    assert "--session" in pi_volee.record(agent["id"])["argv"]


def _asked(requests: list[dict[str, object]]) -> int:
    return sum(1 for r in requests if str(r["path"]).startswith("/v1/messages"))


@pytest.mark.pi
def test_pi_killed_before_its_first_reply_is_launched_again_with_its_task(
    pi_volee: Volee, real_sandbox: Sandbox, real_fake_anthropic: FakeAnthropic
) -> None:
    # pi writes its session file only with its first reply: killed before it, there is nothing
    # for `pi --session` to find ("No session found"). volee launches it again, with its task,
    # instead of resuming a session that does not exist three times in a row.
    project = real_sandbox.project
    fake = real_fake_anthropic
    pi_volee.cli(
        "spawn", "--harness", "pi", "--cwd", str(project), "--name", "p2",
        "--model", f"fake/{FAKE_MODEL}", "--", "HOLD\nRUN: echo first > first.txt",
    )  # fmt: skip
    fake.wait_for(lambda rs: _asked(rs) >= 1, timeout=30)
    agent = pi_volee.agent("p2")
    first = pi_volee.record(agent["id"])
    assert not list((real_sandbox.home / ".pi" / "agent" / "sessions").glob("*/*.jsonl"))

    os.killpg(first["program_pid"], signal.SIGKILL)

    fake.wait_for(lambda rs: _asked(rs) >= 2, timeout=30)
    fake.release()
    done = pi_volee.wait_state("p2", "done", timeout=30)
    assert (project / "first.txt").read_text() == "first\n"
    again = pi_volee.record(agent["id"])
    assert again["program_pid"] != first["program_pid"]
    assert "--session" not in again["argv"]
    assert done["session_id"]
    assert not done["session_id"].startswith("pid-")
    timeline = pi_volee.cli("timeline", "p2").stdout
    assert "automatic restart 1 of" in timeline
    assert "automatic restart 2 of" not in timeline


@pytest.mark.codex
def test_every_volee_mode_is_taken_by_the_pinned_codex_and_an_unknown_one_refused_at_spawn(
    codex_volee: Volee, real_sandbox: Sandbox
) -> None:
    project = real_sandbox.project
    refused = codex_volee.cli(
        "spawn", "--harness", "codex", "--cwd", str(project), "--name", "bad",
        "--permission-mode", "untrusted", "--", "hello", check=False,
    )  # fmt: skip
    assert refused.returncode != 0
    assert "this codex has no permission mode 'untrusted'" in refused.stderr
    assert "on-request, never" in refused.stderr
    assert "(codex 0.171.0)" in refused.stderr
    for n, (mode, flags) in enumerate(
        [
            ("default", ["-s", "workspace-write", "-a", "on-request"]),
            ("plan", ["-s", "read-only", "-a", "never"]),
            ("manual", ["-s", "read-only", "-a", "on-request"]),
            ("never", ["-a", "never"]),
        ]
    ):
        name = f"m{n}"
        codex_volee.cli(
            "spawn", "--harness", "codex", "--cwd", str(project), "--name", name,
            "--permission-mode", mode, "--", "say hello",
        )  # fmt: skip
        # A mode codex refused would end the program with a usage error before any turn.
        codex_volee.wait_state(name, "done", timeout=30)
        argv = codex_volee.record(codex_volee.agent(name)["id"])["argv"]
        at = argv.index(flags[0])
        assert argv[at : at + len(flags)] == flags
        # One codex at a time: four at once would only slow the test (two codex in one folder
        # are tested below).
        codex_volee.cli("stop", name)
        codex_volee.wait_state(name, "stopped", timeout=15)


@pytest.mark.codex
def test_two_codex_agents_in_one_folder_both_finish_with_their_own_sessions(
    codex_volee: Volee, real_sandbox: Sandbox
) -> None:
    # Issue 22, item 5: codex started beside a live codex in the same folder was given the
    # other's session id (discovery took the folder's newest rollout for both processes); the
    # other agent's own hooks were then refused and it stayed `launching`. Failed 1 run in 2-4.
    project = real_sandbox.project
    for name in ("c1", "c2"):
        codex_volee.cli(
            "spawn", "--harness", "codex", "--cwd", str(project), "--name", name,
            # Out of codex's sandbox: its workspace-write sandbox refuses a connect to volee's
            # socket (EPERM), and the forged hook below must reach the daemon from c1's tree.
            "--permission-mode", "danger-full-access", "--", f"RUN: echo {name} > {name}.txt",
        )  # fmt: skip
    first = codex_volee.wait_state("c1", "done", timeout=30)
    second = codex_volee.wait_state("c2", "done", timeout=30)

    assert (project / "c1.txt").read_text() == "c1\n"
    assert (project / "c2.txt").read_text() == "c2\n"
    assert first["activity"] == "Bash: echo c1 > c1.txt"
    assert second["activity"] == "Bash: echo c2 > c2.txt"
    # Each its own session: the one codex named after its prompt.
    index = real_sandbox.home / ".codex" / "session_index.jsonl"
    threads = {t["id"]: t["thread_name"] for t in map(json.loads, index.read_text().splitlines())}
    assert threads[first["session_id"]] == "RUN: echo c1 > c1.txt"
    assert threads[second["session_id"]] == "RUN: echo c2 > c2.txt"
    for own, other in [(first, second), (second, first)]:
        timeline = codex_volee.cli("timeline", own["name"]).stdout
        # Linked once, never moved to the other's and back; no hook of its refused.
        assert timeline.count(f"session {own['session_id']} started") == 1, timeline
        assert other["session_id"] not in timeline, timeline
        assert "not taken" not in timeline, timeline
    assert not list(codex_volee.dirs.spool.glob("rejected/*.json"))

    # c1, told to, forges a hook from its own tree carrying c2's session: it counts for c1
    # only; c2 keeps its session and its state, and c1's timeline says it was not taken.
    forged = {
        "session_id": second["session_id"],
        "cwd": str(project),
        "hook_event_name": "Stop",
        "last_assistant_message": "FORGED: all tests pass",
    }
    (project / "forged.json").write_text(json.dumps(forged))
    hook = f"{shlex.quote(sys.executable)} -m volee_desktop.cli hook Stop < forged.json"
    codex_volee.cli("send", "c1", f"RUN: {hook}")
    turn = ("", first["activity"])  # until the turn's command runs (a long path is cut short)
    codex_volee.wait(
        "c1", lambda a: a["state"] == "done" and a["activity"] not in turn, "the forged hook"
    )
    timeline = codex_volee.cli("timeline", "c1").stdout
    assert "done: FORGED: all tests pass" in timeline  # what c1 says of itself is its own
    assert f"refused: reported session {second['session_id']} of agent c2" in timeline
    after = codex_volee.agent("c2")
    assert (after["session_id"], after["state"]) == (second["session_id"], "done")
    assert after["detail"] == second["detail"]
    assert codex_volee.agent("c1")["session_id"] == first["session_id"]
