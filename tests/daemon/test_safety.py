"""Issue 22, finding 5, in the daemon: what it tells the tray about held settings, and a
confirmation of a file that changed since the person looked."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest

from volee_desktop.core import events as ev
from volee_desktop.daemon.main import Daemon
from volee_desktop.ipc.aclient import AsyncClient
from volee_desktop.ipc.protocol import IpcError
from volee_desktop.paths import dirs

LOWERED = '[claude]\npermission_mode = "bypassPermissions"\n'


async def test_settings_that_lower_safety_need_the_person_and_the_tray_is_told_why(
    volee_home: Path,
) -> None:
    folders = dirs()
    folders.config.mkdir(parents=True, exist_ok=True)
    folders.config_file.write_text(LOWERED)
    d = await Daemon.start(folders)
    client = await AsyncClient.connect(folders.socket)
    try:
        assert d.config.claude.permission_mode == "acceptEdits"
        notices: list[dict[str, Any]] = []
        got = asyncio.Event()

        def on_notice(p: dict[str, Any]) -> None:
            notices.append(p)
            got.set()

        client.on_push("notice", on_notice)
        await client.call("subscribe", {"since": None})
        await asyncio.wait_for(got.wait(), 5)
        assert notices[0]["kind"] == "config-unconfirmed"
        assert notices[0]["text"].startswith(
            'config.toml asks for claude.permission_mode = "bypassPermissions": not in force '
            "until you confirm: `volee config confirm`"
        )
        # The file changes between what the person was shown and the confirmation.
        shown = (await client.call("config.unconfirmed", {}))["asked"]
        folders.config_file.write_text(LOWERED + "[notifications]\nneeds_input = false\n")
        with pytest.raises(IpcError, match=r"config\.toml changed since you looked"):
            await client.call("config.confirm", {"settings": shown})
        assert d.config.claude.permission_mode == "acceptEdits"
        assert not [e for _, e in d.service.events_after(0) if isinstance(e, ev.SettingsConfirmed)]
        # What it asks for now, confirmed: in force at once for what starts next.
        shown = (await client.call("config.unconfirmed", {}))["asked"]
        await client.call("config.confirm", {"settings": shown})
        assert d.config.claude.permission_mode == "bypassPermissions"
        assert d.agents.config.claude.permission_mode == "bypassPermissions"
        assert d.service.registry.confirmed_settings == shown
        status = await client.call("daemon.status", {})
        assert status["unconfirmed_settings"] == []
    finally:
        await client.close()
        await d.close()
