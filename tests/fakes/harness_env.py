"""Throwaway environments for running the real Claude Code, codex and pi against the fake APIs.

Each ``*_env`` function writes the harness's config files under a fresh ``home`` and returns the
environment to run the binary with: inherited variables minus anything that could point the
harness at a real account or config (``ANTHROPIC_*``, ``CLAUDE*``, ``OPENAI_*``, ``CODEX_*``,
``PI_*``, ``XDG_*_HOME``), plus the settings that keep it offline. Give a short ``home`` (e.g.
``tempfile.mkdtemp(prefix="v", dir="/tmp")``): Claude Code puts Unix sockets under its tmp dir,
and socket paths are limited to about 104 bytes.

:func:`find_harness` locates the binaries installed by ``scripts/install-harnesses``.
"""

from __future__ import annotations

import json
import os
import re
import shlex
import sys
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

# Keep in step with scripts/install-harnesses.
VERSIONS = {"claude": "2.1.332", "codex": "0.171.0", "pi": "0.73.1"}
BIN_RELPATHS = {
    "claude": "node_modules/@anthropic-ai/claude-code/bin/claude.exe",
    "codex": "node_modules/.bin/codex",
    "pi": "node_modules/.bin/pi",
}
BIN_ENV_VARS = {"claude": "CLAUDE_BIN", "codex": "CODEX_BIN", "pi": "PI_BIN"}

DUMMY_ANTHROPIC_KEY = "sk-ant-fake-0000000000000000000000000000-volee-tests"
DUMMY_OPENAI_KEY = "sk-fake-openai-volee-tests"
FAKE_MODEL = "fake-model"

# Every hook event worth logging in tests (Claude Code 2.1.332 has 34; these are the ones volee
# cares about plus the cheap extras).
CLAUDE_HOOK_EVENTS = (
    "SessionStart",
    "UserPromptSubmit",
    "PreToolUse",
    "PostToolUse",
    "PostToolUseFailure",
    "PermissionRequest",
    "PermissionDenied",
    "Notification",
    "Stop",
    "StopFailure",
    "SubagentStart",
    "SubagentStop",
    "SessionEnd",
)
CODEX_HOOK_EVENTS = ("SessionStart", "UserPromptSubmit", "PreToolUse", "PostToolUse", "Stop")

_STRIPPED_PREFIXES = ("ANTHROPIC_", "CLAUDE", "OPENAI_", "CODEX_", "PI_")
_STRIPPED_NAMES = frozenset(
    {"XDG_CONFIG_HOME", "XDG_DATA_HOME", "XDG_STATE_HOME", "XDG_CACHE_HOME", "CLAUDECODE"}
)


@dataclass(frozen=True)
class Sandbox:
    """A throwaway folder for one harness run: ``home`` (its HOME), ``project`` (its cwd)."""

    root: Path
    home: Path
    project: Path

    @classmethod
    def create(cls, root: Path) -> Sandbox:
        """Make ``root/h`` and ``root/p`` (short names: socket paths must stay short)."""
        sandbox = cls(root=root, home=root / "h", project=root / "p")
        sandbox.home.mkdir(parents=True, exist_ok=True)
        sandbox.project.mkdir(parents=True, exist_ok=True)
        return sandbox


def harness_cache() -> Path:
    """The folder ``scripts/install-harnesses`` installs into."""
    default = Path.home() / ".cache" / "volee-harness"
    return Path(os.environ.get("VOLEE_HARNESS_CACHE") or default)


def find_harness(name: str) -> Path | None:
    """The binary of a harness: ``$CLAUDE_BIN``/``$CODEX_BIN``/``$PI_BIN``, else the cache."""
    if name not in VERSIONS:
        raise ValueError(f"unknown harness {name!r}; expected one of {sorted(VERSIONS)}")
    override = os.environ.get(BIN_ENV_VARS[name])
    if override:
        path = Path(override)
        return path if path.is_file() and os.access(path, os.X_OK) else None
    path = harness_cache() / f"{name}-{VERSIONS[name]}" / BIN_RELPATHS[name]
    return path if path.is_file() and os.access(path, os.X_OK) else None


def base_env(home: Path, extra: Mapping[str, str] | None = None) -> dict[str, str]:
    """The inherited environment minus harness config, with ``HOME`` set."""
    env = {
        key: value
        for key, value in os.environ.items()
        if not key.startswith(_STRIPPED_PREFIXES) and key not in _STRIPPED_NAMES
    }
    env["HOME"] = str(home)
    env.setdefault("TERM", "xterm-256color")
    env.setdefault("LANG", "C.UTF-8")
    env.update(extra or {})
    return env


def _merge_json(path: Path, updates: Mapping[str, Any]) -> None:
    data: dict[str, Any] = {}
    if path.exists():
        data = json.loads(path.read_text(encoding="utf-8"))
    for key, value in updates.items():
        if isinstance(value, dict) and isinstance(data.get(key), dict):
            data[key] = {**data[key], **value}
        else:
            data[key] = value
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(data, indent=2), encoding="utf-8")


# -- Claude Code --------------------------------------------------------------------------


def claude_env(
    home: Path,
    port: int,
    cwd: Path,
    extra: Mapping[str, str] | None = None,
    api_key: str = DUMMY_ANTHROPIC_KEY,
) -> dict[str, str]:
    """Seed ``home/.claude.json`` so no first-run dialog shows, and return Claude Code's env."""
    home.mkdir(parents=True, exist_ok=True)
    project = str(cwd.resolve())
    _merge_json(
        home / ".claude.json",
        {
            "hasCompletedOnboarding": True,
            "bypassPermissionsModeAccepted": True,
            "customApiKeyResponses": {"approved": [api_key[-20:]], "rejected": []},
            "projects": {project: {"hasTrustDialogAccepted": True}},
        },
    )
    # Claude writes scratch files and sockets to /tmp/claude-<uid> unless told otherwise.
    tmp = home / "t"
    tmp.mkdir(mode=0o700, exist_ok=True)
    tmp.chmod(0o700)
    env = base_env(home)
    env.update(
        {
            "ANTHROPIC_BASE_URL": f"http://127.0.0.1:{port}",
            "ANTHROPIC_API_KEY": api_key,
            "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1",
            "DISABLE_TELEMETRY": "1",
            "DISABLE_AUTOUPDATER": "1",
            "DISABLE_ERROR_REPORTING": "1",
            # As root, --dangerously-skip-permissions refuses to run without it.
            "IS_SANDBOX": "1",
            "CLAUDE_CODE_TMPDIR": str(tmp),
        }
    )
    env.update(extra or {})
    return env


def claude_project_dir(home: Path, cwd: Path) -> Path:
    """Where Claude Code keeps the transcripts of sessions started in ``cwd``."""
    return home / ".claude" / "projects" / re.sub(r"[^A-Za-z0-9]", "-", str(cwd.resolve()))


def claude_transcript(home: Path, cwd: Path, session_id: str) -> Path:
    """The transcript file of one Claude Code session."""
    return claude_project_dir(home, cwd) / f"{session_id}.jsonl"


def hook_logger_command(log_path: Path, label: str = "") -> str:
    """A shell command that appends the hook payload on stdin to ``log_path`` as one JSON line.

    The line is the payload plus ``_env`` (the harness variables a hook sees, e.g. ``CLAUDE_PID``)
    and ``_label``, so a test can tell which configured hook wrote it.
    """
    script = (
        "import json,os,sys\n"
        "raw=sys.stdin.read()\n"
        "try: d=json.loads(raw)\n"
        "except ValueError: d={'_raw': raw}\n"
        "d['_label']=sys.argv[2]\n"
        "d['_env']={k: v for k, v in os.environ.items()"
        " if k.startswith(('CLAUDE', 'CODEX', 'VOLEE_'))}\n"
        "with open(sys.argv[1], 'a') as f: f.write(json.dumps(d) + '\\n')\n"
    )
    return shlex.join([sys.executable, "-c", script, str(log_path), label])


def command_hooks(
    log_path: Path, events: Iterable[str] = CLAUDE_HOOK_EVENTS, timeout: int = 10
) -> dict[str, Any]:
    """A Claude-style ``hooks`` block logging every listed event (Claude Code and codex)."""
    return {
        event: [
            {
                "matcher": "",
                "hooks": [
                    {
                        "type": "command",
                        "command": hook_logger_command(log_path, event),
                        "timeout": timeout,
                    }
                ],
            }
        ]
        for event in events
    }


def claude_hook_settings(
    log_path: Path, events: Iterable[str] = CLAUDE_HOOK_EVENTS
) -> dict[str, Any]:
    """Settings for ``claude --settings`` whose command hooks log the payloads as JSONL."""
    return {"hooks": command_hooks(log_path, events)}


def read_jsonl(path: Path) -> list[dict[str, Any]]:
    """The JSON objects of a JSONL file ([] when it does not exist yet)."""
    if not path.exists():
        return []
    lines = path.read_text(encoding="utf-8").splitlines()
    return [json.loads(line) for line in lines if line.strip()]


# -- codex --------------------------------------------------------------------------------


def codex_env(
    home: Path,
    port: int,
    cwd: Path,
    extra: Mapping[str, str] | None = None,
    hooks_log: Path | None = None,
) -> dict[str, str]:
    """Write ``$CODEX_HOME/config.toml`` for the fake provider (and hooks.json), return the env.

    codex skips hooks it does not trust without a word: pass ``--dangerously-bypass-hook-trust``
    when ``hooks_log`` is given.
    """
    codex_home = home / ".codex"
    codex_home.mkdir(parents=True, exist_ok=True)
    project = str(cwd.resolve())
    config = f"""\
model = "{FAKE_MODEL}"
model_provider = "fake"
check_for_update_on_startup = false

[model_providers.fake]
name = "fake"
base_url = "http://127.0.0.1:{port}/v1"
wire_api = "responses"
env_key = "FAKE_OPENAI_KEY"
request_max_retries = 0
stream_max_retries = 0

[projects.{json.dumps(project)}]
trust_level = "trusted"

[analytics]
enabled = false
"""
    (codex_home / "config.toml").write_text(config, encoding="utf-8")
    if hooks_log is not None:
        hooks = {"hooks": command_hooks(hooks_log, CODEX_HOOK_EVENTS)}
        (codex_home / "hooks.json").write_text(json.dumps(hooks, indent=2), encoding="utf-8")
    env = base_env(home)
    env.update({"CODEX_HOME": str(codex_home), "FAKE_OPENAI_KEY": DUMMY_OPENAI_KEY})
    env.update(extra or {})
    return env


# -- pi -----------------------------------------------------------------------------------


def pi_env(
    home: Path,
    port: int,
    cwd: Path,
    extra: Mapping[str, str] | None = None,
) -> dict[str, str]:
    """Write ``~/.pi/agent/models.json`` with a ``fake`` provider, return pi's env.

    Run pi with ``--model fake/fake-model``. ``cwd`` is unused today; it is taken for symmetry
    with the other harnesses.
    """
    del cwd
    models = {
        "providers": {
            "fake": {
                "api": "anthropic-messages",
                "baseUrl": f"http://127.0.0.1:{port}",
                "apiKey": DUMMY_ANTHROPIC_KEY,
                "models": [{"id": FAKE_MODEL}],
            }
        }
    }
    agent_dir = home / ".pi" / "agent"
    agent_dir.mkdir(parents=True, exist_ok=True)
    (agent_dir / "models.json").write_text(json.dumps(models, indent=2), encoding="utf-8")
    env = base_env(home)
    env["PI_OFFLINE"] = "1"
    env.update(extra or {})
    return env
