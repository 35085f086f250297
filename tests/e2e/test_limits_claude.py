"""The REAL Claude Code meets the plan's usage limit (the fake API answers 429 with the unified
rate-limit headers of a subscription account): volee shows it retrying, then limited with the
reset time; after the (shortened) reset it continues each agent once with its labelled prompt,
and the one the person stopped stays stopped (docs/limits.md)."""

from __future__ import annotations

import itertools
import json
import time
from collections.abc import Callable

import pytest

from tests.e2e.agents_rig import Volee
from tests.fakes.fake_anthropic import FakeAnthropic, usage_limit
from tests.fakes.harness_env import Sandbox

pytestmark = [pytest.mark.e2e, pytest.mark.claude, pytest.mark.timeout(300)]

LABEL = "[volee] your plan's usage limit was reached at "
NAMES = ("lim-a", "lim-b", "lim-c", "lim-d", "lim-e")
CONTINUED = ("lim-a", "lim-b", "lim-d", "lim-e")


@pytest.fixture
def volee(real_claude_env: dict[str, str], start_volee: Callable[..., Volee]) -> Volee:
    # Four attempts, not ten: Claude Code gives up within seconds (its own setting), and
    # volee has time to read a retry on each screen on a loaded machine.
    env = {**real_claude_env, "CLAUDE_CODE_MAX_RETRIES": "4"}
    return start_volee(env, config="[limits]\nmargin = 1\nstagger = 1\n")


def next_reset() -> float:
    """A reset on a minute boundary (Claude Code shows it as a clock time), 60 to 120 s away:
    five agents spawn and retry before it on a loaded machine."""
    now = time.time()
    reset = (int(now) // 60 + 1) * 60
    return float(reset if reset - now >= 60 else reset + 60)


def test_agents_stopped_by_the_plans_limit_are_continued_once_after_the_reset(
    volee: Volee, real_sandbox: Sandbox, real_fake_anthropic: FakeAnthropic
) -> None:
    reset = next_reset()
    real_fake_anthropic.refuse(usage_limit(reset))
    project = str(real_sandbox.project)
    for name in NAMES:
        volee.cli("spawn", "--cwd", project, "--name", name, "--", f"hello from {name}")

    # While Claude Code retries, the row says so (read from its screen).
    retrying = volee.wait(
        "lim-a",
        lambda a: (
            a["detail"].startswith("retrying: 5-hour limit, attempt")
            or bool(a["limit"] and a["limit"]["ended"])
        ),
        "the retry on screen",
        60,
    )
    print("while retrying:", retrying["state"], retrying["detail"], retrying["limit"])

    # Then each is limited: alive at its prompt (idle), the limit and its reset known. (Where
    # the StopFailure's bare "rate_limit" came before the daemon read the retry, the limit
    # ended as "rate" and takes the line's kind and reset a moment later: wait for the reset.)
    for name in NAMES:
        agent = volee.wait(
            name,
            lambda a: bool(a["limit"] and a["limit"]["ended"] and a["limit"]["resets_at"]),
            "the limit and its reset",
            60,
        )
        assert agent["state"] == "idle"
        assert agent["limit"]["kind"] == "five_hour"
        assert agent["limit"]["resets_at"] == reset, agent
    clock = time.strftime("%H:%M", time.localtime(reset))
    listed = volee.cli("ls", "--no-refresh").stdout
    assert listed.count(f"limited — resets {clock}") == len(NAMES), listed

    # The person stops one: it stays stopped through the reset.
    volee.cli("stop", "lim-c")
    volee.wait_state("lim-c", "stopped", timeout=30)
    real_fake_anthropic.lift()  # the plan's limit lifts at its reset

    for name in CONTINUED:
        done = volee.wait_state(name, "done", timeout=reset - time.time() + 60)
        assert done["limit"] is None
    assert time.time() >= reset  # not before the reset
    assert volee.agent("lim-c")["state"] == "stopped"

    # Each continued agent got volee's labelled prompt once, and its timeline says why.
    times = []
    for name in CONTINUED:
        timeline = json.loads(volee.cli("timeline", name, "--json").stdout)
        continued = [e for e in timeline if e.get("type") == "limit-continued"]
        assert len(continued) == 1, timeline
        times.append(continued[0]["at"])
        assert continued[0]["prompt"].startswith(LABEL), continued
        assert f"and reset at {clock}; continue where you left off" in continued[0]["prompt"]
    # Staggered: one a second ([limits] stagger = 1), never all in the same second.
    times.sort()
    assert all(b - a >= 0.9 for a, b in itertools.pairwise(times)), times
    assert times[0] >= reset + 1  # the margin
    bodies = [json.dumps(r["body"]) for r in real_fake_anthropic.requests("/v1/messages")]
    for name in NAMES:
        told = [b.count(LABEL) for b in bodies if f"hello from {name}" in b and LABEL in b]
        # The model was asked with the labelled prompt once in the conversation, never twice;
        # the stopped one never.
        assert (max(told) if told else 0) == (0 if name == "lim-c" else 1), (name, told)
    # None is continued twice: nothing more is due.
    status = json.loads(volee.cli("daemon", "status", "--json").stdout)
    print("limits:", status.get("extra", {}).get("limits"))
