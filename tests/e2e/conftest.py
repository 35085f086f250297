"""Fixtures of the end-to-end tests: the real harness binaries and the fake model APIs.

The ``real_*`` fixtures give the binaries installed by ``scripts/install-harnesses`` (a test
needing a missing one is skipped, saying how to install it), in-process fake Anthropic and
OpenAI servers, and a short throwaway folder for a harness's HOME and project.
"""

from __future__ import annotations

import shutil
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

# The fakes live in tests/fakes; make `tests.fakes` importable however pytest was started.
_REPO = Path(__file__).resolve().parents[2]
if str(_REPO) not in sys.path:
    sys.path.insert(0, str(_REPO))

from tests.fakes.fake_anthropic import FakeAnthropic  # noqa: E402
from tests.fakes.fake_openai import FakeOpenAI  # noqa: E402
from tests.fakes.harness_env import BIN_ENV_VARS, Sandbox, find_harness  # noqa: E402


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
