"""Fixtures of the end-to-end tests: the real harness binaries and the fake model APIs.

The ``real_*`` fixtures give the binaries installed by ``scripts/install-harnesses`` (a test
needing a missing one is skipped, saying how to install it), in-process fake Anthropic and
OpenAI servers, and a short throwaway folder for a harness's HOME and project.

``real_claude_env`` (``real_codex_env``, ``real_pi_env``) is the environment that runs the
real harness in the sandbox against its fake model API; ``start_volee(env)`` starts volee
(a daemon of its own under the sandbox) with it, and ``claude_volee`` (``codex_volee``,
``pi_volee``) is the two together.
"""

from __future__ import annotations

import shutil
import sys
import tempfile
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

# The fakes live in tests/fakes; make `tests.fakes` importable however pytest was started.
_REPO = Path(__file__).resolve().parents[2]
if str(_REPO) not in sys.path:
    sys.path.insert(0, str(_REPO))

from tests.e2e.agents_rig import Volee  # noqa: E402
from tests.e2e.recovery_rig import Rig  # noqa: E402
from tests.fakes.fake_anthropic import FakeAnthropic  # noqa: E402
from tests.fakes.fake_openai import FakeOpenAI  # noqa: E402
from tests.fakes.harness_env import (  # noqa: E402
    BIN_ENV_VARS,
    Sandbox,
    claude_env,
    codex_env,
    find_harness,
    pi_env,
)


def _harness_or_skip(name: str) -> Path:
    path = find_harness(name)
    if path is None:
        pytest.skip(
            f"the real {name} CLI is not installed: run scripts/install-harnesses "
            f"(or set {BIN_ENV_VARS[name]} to its binary)"
        )
    return path


@pytest.fixture(scope="session")
def real_claude() -> Path:
    """The Claude Code binary (skips the test when it is not installed)."""
    return _harness_or_skip("claude")


@pytest.fixture(scope="session")
def real_codex() -> Path:
    """The codex binary (skips the test when it is not installed)."""
    return _harness_or_skip("codex")


@pytest.fixture(scope="session")
def real_pi() -> Path:
    """The pi binary (skips the test when it is not installed)."""
    return _harness_or_skip("pi")


@pytest.fixture
def real_sandbox(monkeypatch: pytest.MonkeyPatch) -> Iterator[Sandbox]:
    """A fresh HOME and project folder under /tmp (short: harnesses bind Unix sockets there)."""
    root = Path(tempfile.mkdtemp(prefix="v", dir="/tmp")).resolve()
    sandbox = Sandbox.create(root)
    monkeypatch.setenv("VOLEE_HOME", str(root / "volee"))
    # The real harnesses keep their folders in the sandbox's HOME, seeded there.
    monkeypatch.delenv("CLAUDE_CONFIG_DIR", raising=False)
    yield sandbox
    shutil.rmtree(root, ignore_errors=True)


@pytest.fixture
def real_fake_anthropic(real_sandbox: Sandbox) -> Iterator[FakeAnthropic]:
    """A fake Anthropic Messages API on 127.0.0.1, logging to ``<root>/anthropic.jsonl``."""
    server = FakeAnthropic(log_path=real_sandbox.root / "anthropic.jsonl").start()
    yield server
    server.close()


@pytest.fixture
def real_fake_openai(real_sandbox: Sandbox) -> Iterator[FakeOpenAI]:
    """A fake OpenAI Responses API on 127.0.0.1, logging to ``<root>/openai.jsonl``."""
    server = FakeOpenAI(log_path=real_sandbox.root / "openai.jsonl").start()
    yield server
    server.close()


@pytest.fixture
def real_claude_env(
    real_claude: Path, real_sandbox: Sandbox, real_fake_anthropic: FakeAnthropic
) -> dict[str, str]:
    """The environment of the real Claude Code in the sandbox, against the fake Anthropic API
    (and volee's ``VOLEE_CLAUDE_BIN``, so the agents volee starts are that Claude Code)."""
    env = claude_env(real_sandbox.home, real_fake_anthropic.port, real_sandbox.project)
    env["VOLEE_CLAUDE_BIN"] = str(real_claude)
    return env


@pytest.fixture
def real_codex_env(
    real_codex: Path, real_sandbox: Sandbox, real_fake_openai: FakeOpenAI
) -> dict[str, str]:
    """The environment of the real codex in the sandbox, against the fake OpenAI API."""
    env = codex_env(real_sandbox.home, real_fake_openai.port, real_sandbox.project)
    env["VOLEE_CODEX_BIN"] = str(real_codex)
    return env


@pytest.fixture
def real_pi_env(
    real_pi: Path, real_sandbox: Sandbox, real_fake_anthropic: FakeAnthropic
) -> dict[str, str]:
    """The environment of the real pi in the sandbox, against the fake Anthropic API."""
    env = pi_env(real_sandbox.home, real_fake_anthropic.port, real_sandbox.project)
    env["VOLEE_PI_BIN"] = str(real_pi)
    return env


@pytest.fixture
def start_volee(real_sandbox: Sandbox) -> Iterator[Callable[..., Volee]]:
    """``start_volee(env, config=None)``: volee started with ``env`` (its home
    ``<root>/vh``, ``config`` written as its config.toml first); closed at the test's end."""
    rigs: list[Volee] = []

    def start(env: dict[str, str], config: str | None = None) -> Volee:
        rig = Volee(real_sandbox.root / "vh", env)
        if config is not None:
            path = rig.home / "config" / "config.toml"
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(config)
        rigs.append(rig)
        rig.start()
        return rig

    yield start
    for rig in reversed(rigs):
        rig.close()


@pytest.fixture
def claude_volee(real_claude_env: dict[str, str], start_volee: Callable[..., Volee]) -> Volee:
    """volee running agents with the real Claude Code."""
    return start_volee(real_claude_env)


@pytest.fixture
def codex_volee(real_codex_env: dict[str, str], start_volee: Callable[..., Volee]) -> Volee:
    """volee running agents with the real codex."""
    return start_volee(real_codex_env)


@pytest.fixture
def pi_volee(real_pi_env: dict[str, str], start_volee: Callable[..., Volee]) -> Volee:
    """volee running agents with the real pi."""
    return start_volee(real_pi_env)


@pytest.fixture
def claude_rig(real_claude: Path) -> Iterator[Rig]:
    """A recovery rig (``tests/e2e/recovery_rig.py``: the CLI's daemon in a VOLEE_HOME of its
    own) whose agents are the real Claude Code; each test seeds its HOME itself."""
    rig = Rig()
    rig.env["VOLEE_CLAUDE_BIN"] = str(real_claude)
    rig.env.pop("CLAUDE_CONFIG_DIR", None)  # the real one keeps its folder in the seeded HOME
    yield rig
    rig.close()
