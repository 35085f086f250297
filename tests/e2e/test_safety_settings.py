"""Issue 22, finding 5: settings that lower safety need the person.

An agent wrote ``permission_mode = "bypassPermissions"`` and ``needs_input = false`` into
``config.toml``; after a daemon restart the person's next Claude Code agent ran with
``--permission-mode bypassPermissions``.  Now such a value is in force only once the person
confirmed it (``volee config confirm`` from their own shell, or the app), the confirmation is
an event in the daemon's log, and an agent's ``volee config confirm`` is refused and recorded.

A real daemon process (``volee daemon run``), the real CLI, the fake Claude Code in real hosts.
"""

from __future__ import annotations

import json
import os
import shutil
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.e2e.agents_rig import Volee
from tests.fakes.fake_anthropic import FakeAnthropic
from tests.fakes.harness_env import Sandbox, claude_env
from tests.polling import wait_until
from volee_desktop.hosts.records import read_record

FAKE_CLAUDE = Path(__file__).resolve().parents[1] / "fakes" / "fake-claude"

LOWERED = """\
[claude]
permission_mode = "bypassPermissions"
[notifications]
needs_input = false
"""
HELD = (
    'config.toml asks for claude.permission_mode = "bypassPermissions": not in force until '
    "you confirm: `volee config confirm`"
)


@pytest.fixture
def volee() -> Iterator[Volee]:
    root = Path(tempfile.mkdtemp(prefix="v", dir="/tmp"))
    (root / "p").mkdir()
    env = {**os.environ, "VOLEE_CLAUDE_BIN": str(FAKE_CLAUDE), "FAKE_HARNESS_HOME": str(root)}
    env.pop("VOLEE_AGENT", None)
    rig = Volee(root / "vh", env)  # started by each test, once config.toml says what it says
    yield rig
    rig.close()
    shutil.rmtree(root, ignore_errors=True)


def write_config(volee: Volee, text: str) -> None:
    path = volee.dirs.config_file
    path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
    path.write_text(text)


def restart(volee: Volee) -> None:
    volee.stop()
    volee.start()


def mode_of(volee: Volee, name: str) -> str:
    """The ``--permission-mode`` the agent's program was started with."""
    agent = volee.wait(name, lambda a: a["state"] in ("idle", "done"), f"{name} running")
    record = read_record(volee.dirs.hosts / f"{agent['id']}.json")
    assert record is not None
    argv = list(record.argv)
    return argv[argv.index("--permission-mode") + 1]


def spawn(volee: Volee, name: str) -> str:
    project = volee.home.parent / "p"
    return volee.cli("spawn", "--name", name, "--cwd", str(project), "--", "hello").stdout.strip()


def test_settings_that_lower_safety_need_the_person_a_config_edit_is_not_in_force_until_confirmed(
    volee: Volee,
) -> None:
    write_config(volee, LOWERED)  # what the agent wrote
    volee.start()

    status = volee.cli("daemon", "status").stdout
    assert HELD in status, status
    assert "notifications.needs_input = false: not in force until you confirm" in status
    held = json.loads(volee.cli("daemon", "status", "--json").stdout)["unconfirmed_settings"]
    assert len(held) == 2
    spawn(volee, "first")
    assert mode_of(volee, "first") == "acceptEdits"  # the default stands

    done = volee.cli("config", "confirm", "--yes")
    assert 'claude.permission_mode = "bypassPermissions"' in done.stdout
    assert "notifications.needs_input = false" in done.stdout
    assert "config:" not in volee.cli("daemon", "status").stdout
    spawn(volee, "second")
    assert mode_of(volee, "second") == "bypassPermissions"

    # Durable: the confirmation is in the log, so a restart keeps it.
    restart(volee)
    assert "not in force" not in volee.cli("daemon", "status").stdout
    spawn(volee, "third")
    assert mode_of(volee, "third") == "bypassPermissions"

    # The person moves back to a safer mode: the confirmation lapses, and asking for the
    # lower one again needs the person again.
    write_config(volee, '[claude]\npermission_mode = "plan"\n')
    restart(volee)
    write_config(volee, LOWERED)
    restart(volee)
    assert HELD in volee.cli("daemon", "status").stdout
    spawn(volee, "fourth")
    assert mode_of(volee, "fourth") == "acceptEdits"


INTRUDER = """\
#!/bin/sh
cd "{out}"
"{python}" -m volee_desktop.cli config confirm --yes > confirm.out 2>&1
echo "rc=$?" >> confirm.out
touch done
exec sleep 600
"""


def test_an_agent_cannot_confirm_settings_that_lower_safety(volee: Volee) -> None:
    write_config(volee, LOWERED)
    volee.start()
    out = volee.home.parent / "out"
    out.mkdir()
    script = out / "confirm.sh"
    script.write_text(INTRUDER.format(out=out, python=sys.executable))
    script.chmod(0o755)
    project = volee.home.parent / "p"
    intruder = volee.cli(
        "spawn", "--harness", "generic", "--name", "intruder", "--cwd", str(project),
        "--", str(script),
    ).stdout.strip()  # fmt: skip
    wait_until(lambda: (out / "done").exists(), 60, "the intruder's attempt")

    said = (out / "confirm.out").read_text()
    assert "forbidden" in said, said
    assert "may not confirm settings of config.toml that lower safety" in said
    assert "rc=0" not in said
    # Still held, and the attempt is in the intruder's timeline.
    assert HELD in volee.cli("daemon", "status").stdout
    timeline = [i["text"] for i in json.loads(volee.cli("timeline", intruder, "--json").stdout)]
    assert any("tried to confirm settings of config.toml that lower safety" in t for t in timeline)


@pytest.mark.e2e
@pytest.mark.claude
@pytest.mark.timeout(120)
def test_settings_that_lower_safety_need_the_person_real_claude_code_still_asks(
    real_claude: Path, real_sandbox: Sandbox, real_fake_anthropic: FakeAnthropic
) -> None:
    # The finding as it was seen: the next real Claude Code agent ran every tool unasked.
    env = claude_env(real_sandbox.home, real_fake_anthropic.port, real_sandbox.project)
    env["VOLEE_CLAUDE_BIN"] = str(real_claude)
    rig = Volee(real_sandbox.root / "vh", env)
    try:
        write_config(rig, LOWERED)
        rig.start()
        project = real_sandbox.project
        # Not a file edit (acceptEdits, the default, lets `echo > file` and `touch` through).
        run = "RUN: sh -c 'echo hi > {}'"
        rig.cli("spawn", "--cwd", str(project), "--name", "c1", "--", run.format("one.txt"))
        asked = rig.wait_state("c1", "needs-input", timeout=60)
        assert asked["detail"] == "permission for Bash"
        assert not (project / "one.txt").exists()

        rig.cli("config", "confirm", "--yes")
        rig.cli("spawn", "--cwd", str(project), "--name", "c2", "--", run.format("two.txt"))
        rig.wait_state("c2", "done", timeout=60)
        assert (project / "two.txt").read_text() == "hi\n"  # the person chose it: unasked
    finally:
        rig.close()
