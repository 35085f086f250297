"""Smoke tests of volee with the REAL codex and pi (against the fake model APIs).

Each: ``volee spawn --harness …`` -> the tool really runs -> done, with the session id the
harness reported linked -> ``volee stop`` holds it -> ``volee send`` resumes the same session.
Skipped cleanly when the harness is not installed.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.e2e.agents_rig import Volee
from tests.fakes.fake_anthropic import FakeAnthropic
from tests.fakes.fake_openai import FakeOpenAI
from tests.fakes.harness_env import FAKE_MODEL, Sandbox, codex_env, pi_env

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


@pytest.fixture
def codex_volee(
    real_codex: Path, real_sandbox: Sandbox, real_fake_openai: FakeOpenAI
) -> Iterator[Volee]:
    env = codex_env(real_sandbox.home, real_fake_openai.port, real_sandbox.project)
    env["VOLEE_CODEX_BIN"] = str(real_codex)
    rig = Volee(real_sandbox.root / "vh", env)
    rig.start()
    yield rig
    rig.close()


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


@pytest.fixture
def pi_volee(
    real_pi: Path, real_sandbox: Sandbox, real_fake_anthropic: FakeAnthropic
) -> Iterator[Volee]:
    env = pi_env(real_sandbox.home, real_fake_anthropic.port, real_sandbox.project)
    env["VOLEE_PI_BIN"] = str(real_pi)
    rig = Volee(real_sandbox.root / "vh", env)
    rig.start()
    yield rig
    rig.close()


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
