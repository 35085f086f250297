"""The REAL pi meets a usage limit (the fake API answers 429 with a subscription's unified
headers): pi retries by itself (its auto-retry, shortened here to one retry), volee's row says
so, then its turn ends on the limit and volee shows it ``idle``, limited, with no reset time
(pi reads none of the headers), and continues it after ``unknown_wait`` (docs/limits.md)."""

from __future__ import annotations

import json
import time
from collections.abc import Callable

import pytest

from tests.e2e.agents_rig import Volee
from tests.fakes.fake_anthropic import FakeAnthropic, usage_limit
from tests.fakes.harness_env import Sandbox

pytestmark = [pytest.mark.e2e, pytest.mark.pi, pytest.mark.timeout(180)]


@pytest.fixture
def volee(
    real_pi_env: dict[str, str], real_sandbox: Sandbox, start_volee: Callable[..., Volee]
) -> Volee:
    # pi's auto-retry, shortened: one retry, 3 s after the first failure (pi: 3 after 2, 4, 8 s).
    settings = real_sandbox.home / ".pi" / "agent" / "settings.json"
    settings.write_text(json.dumps({"retry": {"maxRetries": 1, "baseDelayMs": 3000}}))
    config = "[limits]\nmargin = 1\nstagger = 1\nunknown_wait = 4\n"
    return start_volee(real_pi_env, config=config)


def test_a_pi_agent_stopped_by_a_limit_retries_waits_and_is_continued(
    volee: Volee, real_sandbox: Sandbox, real_fake_anthropic: FakeAnthropic
) -> None:
    real_fake_anthropic.refuse(usage_limit(time.time() + 3600))
    volee.cli(
        "spawn", "--harness", "pi", "--cwd", str(real_sandbox.project), "--name", "pl", "--",
        "hello from pl",
    )  # fmt: skip
    retrying = volee.wait(
        "pl", lambda a: bool(a["limit"] and not a["limit"]["ended"]), "pi's retry", 40
    )
    assert retrying["state"] == "working"
    assert retrying["detail"] == "retrying: rate limit, attempt 1/1", retrying
    limited = volee.wait("pl", lambda a: bool(a["limit"] and a["limit"]["ended"]), "the end", 40)
    assert limited["state"] == "idle"
    assert limited["limit"]["kind"] == "rate"
    assert limited["limit"]["resets_at"] is None
    assert "limited — rate limit, reset time not known" in volee.cli("ls").stdout
    real_fake_anthropic.lift()
    done = volee.wait_state("pl", "done", timeout=60)
    assert done["limit"] is None
    timeline = json.loads(volee.cli("timeline", "pl", "--json").stdout)
    continued = [e for e in timeline if e.get("type") == "limit-continued"]
    assert len(continued) == 1, timeline
    assert continued[0]["prompt"].startswith("[volee] the API's rate limit was reached at ")
    asked = [json.dumps(r) for r in real_fake_anthropic.requests()]
    assert any("[volee] the API" in r for r in asked)
