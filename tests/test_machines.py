"""``[machines.NAME]`` in config.toml: read, checked, written back, and the bridge's command."""

from __future__ import annotations

from pathlib import Path

import pytest

from volee_desktop.config import load_config
from volee_desktop.machines import (
    Machine,
    MachineError,
    authorized_keys_line,
    parse_machines,
    remove_machine,
    save_machine,
)


def test_ssh_starts_the_bridge_with_nothing_that_can_prompt_or_hang() -> None:
    argv = Machine("devbox", ssh="me@devbox").bridge_argv()
    assert argv[0] == "ssh"
    assert argv[-4:] == ["me@devbox", "--", "volee", "bridge"]
    options = " ".join(argv)
    for option in ("-T", "BatchMode=yes", "ConnectTimeout=", "ServerAliveInterval="):
        assert option in options


def test_via_runs_the_command_then_volee_bridge() -> None:
    machine = Machine("wsl", via="wsl.exe -d 'Ubuntu 24' --", volee="/opt/volee/bin/volee")
    assert machine.bridge_argv() == [
        "wsl.exe",
        "-d",
        "Ubuntu 24",
        "--",
        "/opt/volee/bin/volee",
        "bridge",
    ]


def test_a_bad_entry_is_a_problem_naming_it_and_the_others_are_kept() -> None:
    machines, problems = parse_machines(
        {
            "devbox": {"ssh": "devbox"},
            "both": {"ssh": "a", "via": "b"},
            "neither": {"volee": "/x"},
            "bad:name": {"ssh": "x"},
            "typo": {"shh": "x"},
            "flag": {"ssh": "-oProxyCommand=x"},
        }
    )
    assert list(machines) == ["devbox"]
    text = "\n".join(problems)
    assert len(problems) == 5
    assert "machines.both: give exactly one of ssh" in text
    assert "machines.neither: give exactly one" in text
    assert "'bad:name' cannot name a machine" in text
    assert "unknown key 'shh'" in text
    assert "not an ssh option" in text


def test_config_toml_holds_the_machines(tmp_path: Path) -> None:
    path = tmp_path / "config.toml"
    path.write_text(
        '[agents]\nrestart_on_crash = false\n\n[machines.devbox]\nssh = "me@devbox"\n'
        '[machines.wsl]\nvia = "wsl.exe -d Ubuntu --"\nvolee = "~/.local/bin/volee"\n'
        "[machines.broken]\nssh = 3\n"
    )
    loaded = load_config(path)
    assert loaded.config.agents.restart_on_crash is False
    assert loaded.config.machines == {
        "devbox": Machine("devbox", ssh="me@devbox"),
        "wsl": Machine("wsl", via="wsl.exe -d Ubuntu --", volee="~/.local/bin/volee"),
    }
    [problem] = loaded.problems
    assert "machines.broken.ssh = 3" in problem


def test_add_and_remove_keep_the_rest_of_the_file(tmp_path: Path) -> None:
    path = tmp_path / "config.toml"
    path.write_text("# my settings\n[agents]\nrestart_on_crash = false  # flaky\n")
    save_machine(path, Machine("devbox", ssh="me@devbox"))
    save_machine(path, Machine("pod", via="kubectl exec -i pod --", volee="/v/bin/volee"))
    assert set(load_config(path).config.machines) == {"devbox", "pod"}
    with pytest.raises(MachineError, match="already kept"):
        save_machine(path, Machine("devbox", ssh="other"))
    removed = remove_machine(path, "devbox")
    assert removed == Machine("devbox", ssh="me@devbox")
    remove_machine(path, "pod")
    text = path.read_text()
    assert "# my settings" in text
    assert "restart_on_crash = false  # flaky" in text
    assert "machines" not in text
    with pytest.raises(MachineError, match="no machine named 'pod'"):
        remove_machine(path, "pod")


def test_the_recommended_key_can_only_run_the_bridge() -> None:
    line = authorized_keys_line("/opt/volee/bin/volee", "ssh-ed25519 AAAAC3 me@laptop")
    assert line == 'command="/opt/volee/bin/volee bridge",restrict ssh-ed25519 AAAAC3 me@laptop'
