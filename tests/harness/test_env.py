"""Finding 22.2: agents no longer get the person's desktop (display, session bus) unless
``agents.desktop`` names their harness; unit rules, then a real daemon and a real host."""

from __future__ import annotations

import os
from pathlib import Path

from tests.polling import until
from volee_desktop.daemon.main import Daemon
from volee_desktop.harness.env import DESKTOP_VARS, allowed_env, without_desktop
from volee_desktop.ipc.aclient import AsyncClient
from volee_desktop.paths import dirs

DESKTOP = {
    "DISPLAY": ":0",
    "WAYLAND_DISPLAY": "wayland-0",
    "DBUS_SESSION_BUS_ADDRESS": "unix:path=/run/user/1000/bus",
    "XAUTHORITY": "/home/me/.Xauthority",
}


def test_the_desktop_is_kept_out_unless_the_setting_names_the_harness() -> None:
    env = {"PATH": "/usr/bin", **DESKTOP}
    assert without_desktop(env, "claude", ()) == {"PATH": "/usr/bin"}
    assert without_desktop(env, "codex", ("claude",)) == {"PATH": "/usr/bin"}
    assert without_desktop(env, "claude", ("claude",)) == env
    # Recorded with the launch all the same: the setting decides at each start.
    assert set(DESKTOP_VARS) <= set(allowed_env(env))


async def _env_of_agent(root: Path, config: str, confirm: bool = False) -> dict[str, str]:
    """The environment a generic agent's program saw, spawned through a real daemon (after the
    person confirmed what config.toml asks for that lowers safety, when ``confirm``)."""
    folders = dirs()
    folders.config.mkdir(parents=True, exist_ok=True)
    folders.config_file.write_text(config)
    out = root / "env.out"
    daemon = await Daemon.start(folders)
    try:
        client = await AsyncClient.connect(folders.socket)
        try:
            if confirm:
                asked = await client.call("config.unconfirmed", {})
                await client.call("config.confirm", {"settings": asked["asked"]})
            await client.call(
                "agents.spawn",
                {
                    "harness": "generic",
                    "name": "envdump",
                    "argv": ["sh", "-c", f"env > {out}.tmp && mv {out}.tmp {out}"],
                    "cwd": str(root),
                    "env": {**allowed_env(dict(os.environ)), **DESKTOP},
                },
                timeout=30,
            )
        finally:
            await client.close()
        await until(out.exists, what="the agent to write its environment", timeout=20)
    finally:
        await daemon.close()
    lines = out.read_text().splitlines()
    return dict(line.split("=", 1) for line in lines if "=" in line)


async def test_an_agent_gets_no_display_or_session_bus_by_default(tmp_path: Path) -> None:
    env = await _env_of_agent(tmp_path, "")
    assert env.get("VOLEE_AGENT", "").startswith("ag_")
    for name in DESKTOP_VARS:
        assert name not in env, f"{name} reached the agent: {env.get(name)}"


async def test_agents_desktop_gives_the_named_harness_its_desktop(tmp_path: Path) -> None:
    env = await _env_of_agent(tmp_path, '[agents]\ndesktop = ["generic"]\n', confirm=True)
    for name, value in DESKTOP.items():
        assert env.get(name) == value


async def test_agents_desktop_waits_for_the_persons_confirmation(tmp_path: Path) -> None:
    # It lowers safety (config.SAFETY_LOWERING): written by an agent, it is not in force.
    env = await _env_of_agent(tmp_path, '[agents]\ndesktop = ["generic"]\n')
    for name in DESKTOP_VARS:
        assert name not in env, f"{name} reached the agent before the person confirmed"
