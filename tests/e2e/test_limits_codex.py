"""The REAL codex meets a ChatGPT plan's usage limit (the fake API answers 429
``usage_limit_reached``): codex fires no hook, its screen says so; volee shows it limited with
the reset time and continues it after the (shortened) reset (docs/limits.md)."""

from __future__ import annotations

import json
import time
from collections.abc import Callable

import pytest

from tests.e2e.agents_rig import Volee
from tests.fakes.fake_anthropic import Refusal
from tests.fakes.fake_openai import FakeOpenAI
from tests.fakes.harness_env import Sandbox

pytestmark = [pytest.mark.e2e, pytest.mark.codex, pytest.mark.timeout(300)]


@pytest.fixture
def volee(real_codex_env: dict[str, str], start_volee: Callable[..., Volee]) -> Volee:
    return start_volee(real_codex_env, config="[limits]\nmargin = 1\nstagger = 1\n")


def test_a_codex_agent_stopped_by_its_usage_limit_is_continued_after_the_reset(
    volee: Volee, real_sandbox: Sandbox, real_fake_openai: FakeOpenAI
) -> None:
    now = time.time()
    reset = (int(now) // 60 + 1) * 60
    reset = reset if reset - now >= 25 else reset + 60
    body = {
        "error": {
            "type": "usage_limit_reached",
            "message": "The usage limit has been reached",
            "plan_type": "plus",
            "resets_at": reset,
            "resets_in_seconds": int(reset - now),
        }
    }
    real_fake_openai.refuse(Refusal(429, {}, body))
    volee.cli(
        "spawn",
        "--harness",
        "codex",
        "--cwd",
        str(real_sandbox.project),
        "--name",
        "cx",
        "--",
        "hello from cx",
    )
    agent = volee.wait("cx", lambda a: bool(a["limit"] and a["limit"]["ended"]), "the limit", 60)
    assert agent["state"] == "idle"
    assert agent["limit"]["resets_at"] == reset, agent
    assert agent["limit"]["kind"] == "five_hour"
    real_fake_openai.lift()
    done = volee.wait_state("cx", "done", timeout=reset - time.time() + 60)
    assert done["limit"] is None
    assert time.time() >= reset
    timeline = json.loads(volee.cli("timeline", "cx", "--json").stdout)
    continued = [e for e in timeline if e.get("type") == "limit-continued"]
    assert len(continued) == 1, timeline
    assert continued[0]["prompt"].startswith("[volee] your plan's usage limit was reached at ")
