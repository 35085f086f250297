"""Record real transcripts of the pinned Claude Code, codex and pi for the parser tests.

Run ``python -m tests.harness.record_transcripts`` (needs ``scripts/install-harnesses``): each
harness runs offline against the project's fake model servers with a scripted conversation (a
plan, a tool call, a failing tool call, an answer, then a model error on a second turn), and
its own transcript file is copied to ``tests/harness/transcripts/`` with the throwaway paths
rewritten to ``/home/dev``.  The files are kept in git: the tests read them, never run this.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
import tempfile
import uuid
from pathlib import Path
from typing import Any

from tests.fakes.fake_anthropic import FakeAnthropic, FakeServer, Reply
from tests.fakes.fake_openai import FakeOpenAI
from tests.fakes.harness_env import (
    FAKE_MODEL,
    VERSIONS,
    Sandbox,
    claude_env,
    claude_transcript,
    codex_env,
    find_harness,
    pi_env,
)

OUT = Path(__file__).resolve().parent / "transcripts"
TIMEOUT = 120


def _claude_script() -> list[Reply]:
    # Claude Code 2.1.332 has no TodoWrite any more: its plan is TaskCreate / TaskUpdate, offered
    # with claude-sonnet-4-6 (with its default claude-opus-5-5 neither tool exists).
    steps = ("write out.txt", "check the file", "report")
    plan = [Reply(tool="TaskCreate", tool_input={"subject": s, "description": s}) for s in steps]
    return [
        *plan,
        Reply(tool="TaskUpdate", tool_input={"taskId": "1", "status": "in_progress"}),
        Reply(tool="Bash", tool_input={"command": "echo hi > out.txt", "description": "write"}),
        Reply(tool="TaskUpdate", tool_input={"taskId": "1", "status": "completed"}),
        Reply(tool="Bash", tool_input={"command": "cat missing.txt", "description": "check"}),
        Reply(tool="TaskUpdate", tool_input={"taskId": "2", "status": "completed"}),
        Reply(text="Wrote **out.txt**.\n\nThe check failed: `missing.txt` does not exist."),
    ]


#: The second turn's script: the API says the prompt is too long (Claude Code compacts).
TOO_LONG = [Reply(status=400, text="prompt is too long: 250000 tokens > 200000 maximum")]
#: The third turn's: requests the API refuses outright (an error in the transcript); more than
#: one, since Claude Code tries a refused request six times before it gives up.
REFUSED = [Reply(status=400, text="invalid_request: this request was refused by the fake")] * 8


def _codex_script() -> list[Reply]:
    def plan(*statuses: str) -> dict[str, Any]:
        steps = ("write a.txt", "check it", "report")
        items = [{"step": s, "status": t} for s, t in zip(steps, statuses, strict=True)]
        return {"explanation": "three steps", "plan": items}

    return [
        Reply(tool="update_plan", tool_input=plan("in_progress", "pending", "pending")),
        Reply(tool="exec_command", tool_input={"cmd": "echo hi > a.txt"}),
        Reply(tool="exec_command", tool_input={"cmd": "cat missing.txt"}),
        Reply(tool="update_plan", tool_input=plan("completed", "completed", "pending")),
        Reply(text="Wrote a.txt.\nThe check failed: missing.txt does not exist."),
    ]


def _pi_script() -> list[Reply]:
    return [
        Reply(tool="bash", tool_input={"command": "echo hi > b.txt"}),
        Reply(tool="bash", tool_input={"command": "cat missing.txt"}),
        Reply(text="Wrote b.txt.\nThe check failed: missing.txt does not exist."),
    ]


def _run(
    argv: list[str], env_of: Any, box: Sandbox, kind: type[FakeServer], script: list[Reply]
) -> None:
    """Run one turn of a harness against a fresh fake server answering with ``script``."""
    server = kind(log_path=box.root / "requests.jsonl", script=script).start()
    try:
        done = subprocess.run(
            argv,
            env=env_of(box.home, server.port, box.project),
            cwd=box.project,
            stdin=subprocess.DEVNULL,
            capture_output=True,
            text=True,
            timeout=TIMEOUT,
            check=False,
        )
    finally:
        server.close()
    print(f"$ {' '.join(argv[1:4])} … exit {done.returncode}", file=sys.stderr)
    if done.returncode != 0:
        print(done.stdout[-800:], done.stderr[-800:], file=sys.stderr)


def _keep(source: Path, name: str, root: Path) -> None:
    text = source.read_text(encoding="utf-8")
    text = text.replace(str(root / "h"), "/home/dev").replace(str(root / "p"), "/home/dev/proj/p")
    text = text.replace(str(root), "/home/dev/tmp").replace(root.name, "dev")
    OUT.mkdir(exist_ok=True)
    (OUT / name).write_text(text, encoding="utf-8")
    print(f"kept {OUT / name} ({len(text.splitlines())} lines)", file=sys.stderr)


def record_claude(binary: Path, root: Path) -> None:
    box = Sandbox.create(root)
    session = str(uuid.uuid4())
    common = [str(binary), "--output-format", "json", "--dangerously-skip-permissions"]
    common += ["--model", "claude-sonnet-4-6"]
    first = [*common, "--session-id", session, "-p", "write out.txt and check it"]
    _run(first, claude_env, box, FakeAnthropic, _claude_script())
    again = [*common, "--resume", session, "-p"]
    _run([*again, "and now the rest"], claude_env, box, FakeAnthropic, TOO_LONG)
    _run([*again, "one more thing"], claude_env, box, FakeAnthropic, REFUSED)
    _keep(claude_transcript(box.home, box.project, session), "claude-2.1.332.jsonl", root)


#: A sub-agent (2.1.332's Agent tool runs it asynchronously): the requests come as the session's
#: (the call, then its next step while the sub-agent runs), the sub-agent's, the session's.
SUBAGENT = [
    Reply(
        tool="Agent",
        tool_input={
            "description": "List the files",
            "prompt": "list the files here and say what you found",
            "subagent_type": "general-purpose",
        },
    ),
    Reply(tool="Bash", tool_input={"command": "ls -a", "description": "list"}),
    Reply(text="Found only hidden files: the folder is empty."),
    Reply(text="The sub-agent says the folder is empty."),
]


def record_claude_subagent(binary: Path, root: Path) -> None:
    box = Sandbox.create(root)
    session = str(uuid.uuid4())
    argv = [str(binary), "--output-format", "json", "--dangerously-skip-permissions"]
    argv += ["--model", "claude-sonnet-4-6", "--session-id", session]
    _run([*argv, "-p", "ask a sub-agent to look around"], claude_env, box, FakeAnthropic, SUBAGENT)
    main = claude_transcript(box.home, box.project, session)
    name = "claude-2.1.332-subagent"
    (OUT / name / "subagents").mkdir(parents=True, exist_ok=True)
    _keep(main, f"{name}/session.jsonl", root)
    for sub in sorted((main.parent / session / "subagents").glob("agent-*.jsonl")):
        _keep(sub, f"{name}/subagents/{sub.name}", root)


def record_codex(binary: Path, root: Path) -> None:
    box = Sandbox.create(root)
    base = [str(binary), "exec", "--skip-git-repo-check", "--json", "-s", "workspace-write"]
    _run([*base, "write a.txt and check it"], codex_env, box, FakeOpenAI, _codex_script())
    rollouts = sorted((box.home / ".codex" / "sessions").rglob("rollout-*.jsonl"))
    thread = json.loads(rollouts[-1].read_text().splitlines()[0])["payload"]["id"]
    again = [str(binary), "exec", "--skip-git-repo-check", "--json", "resume", thread]
    _run([*again, "one more thing"], codex_env, box, FakeOpenAI, REFUSED)
    _keep(rollouts[-1], "codex-0.171.0.jsonl", root)


def record_pi(binary: Path, root: Path) -> None:
    box = Sandbox.create(root)
    model = [str(binary), "--model", f"fake/{FAKE_MODEL}", "--mode", "json"]
    _run([*model, "-p", "write b.txt and check it"], pi_env, box, FakeAnthropic, _pi_script())
    files = sorted((box.home / ".pi" / "agent" / "sessions").rglob("*.jsonl"))
    again = [*model, "--session", str(files[-1]), "-p", "one more thing"]
    _run(again, pi_env, box, FakeAnthropic, REFUSED)
    _keep(files[-1], "pi-0.73.1.jsonl", root)


def main(argv: list[str]) -> int:
    wanted = argv or ["claude", "claude-subagent", "codex", "pi"]
    recorders: dict[str, Any] = {
        "claude": record_claude,
        "claude-subagent": record_claude_subagent,
        "codex": record_codex,
        "pi": record_pi,
    }
    for name in wanted:
        harness = name.split("-")[0]
        binary = find_harness(harness)
        if binary is None:
            print(
                f"{harness} {VERSIONS[harness]} is not installed: scripts/install-harnesses",
                file=sys.stderr,
            )
            return 1
        root = Path(tempfile.mkdtemp(prefix="vr", dir="/tmp")).resolve()
        try:
            recorders[name](binary, root)
        finally:
            shutil.rmtree(root, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
