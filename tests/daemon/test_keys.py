"""``agents.keys``: Esc, Shift+Tab and a dialog's numbered option, typed into an agent's
host; an option only once its dialog is on screen, never into an open request's dialog."""

from __future__ import annotations

import pytest

from volee_desktop.core.states import AgentState
from volee_desktop.ipc.protocol import IpcError

from .test_agents import Rig, asking, rig, root, typed

__all__ = ["rig", "root", "typed"]


async def test_esc_and_shift_tab_are_typed_as_a_terminal_sends_them(
    rig: Rig,
    typed: list[bytes],
) -> None:
    view = await rig.spawn("hello")
    await rig.wait_state(view["id"], AgentState.DONE)
    shift_tab = await rig.call("agents.keys", agent=view["id"], key="shift-tab")
    await rig.call("agents.keys", agent=view["id"], key="esc")
    assert typed == [b"\x1b[Z", b"\x1b"]
    assert shift_tab["taken"] is True  # its terminal echoed it: the screen moved
    with pytest.raises(IpcError, match="is not one of esc, shift-tab, option:N"):
        await rig.call("agents.keys", agent=view["id"], key="ctrl-c")


async def test_an_option_needs_its_dialog_on_screen_and_never_answers_a_request(
    rig: Rig,
    typed: list[bytes],
) -> None:
    done = await rig.spawn("hello")
    await rig.wait_state(done["id"], AgentState.DONE)
    with pytest.raises(IpcError, match="shows no dialog with an option 2; nothing typed"):
        await rig.call("agents.keys", agent=done["id"], key="option:2")
    view = await asking(rig)
    with pytest.raises(IpcError, match="answer it with allow, deny or answer"):
        await rig.call("agents.keys", agent=view["id"], key="option:1")
    assert typed == []
    assert not (rig.project / "asked.txt").exists()


async def test_a_key_its_screen_never_shows_taken_is_said_so(
    rig: Rig, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Checked on the screen like an answer (issue 26): a key the program never got leaves
    # the screen as it was, and the reply says so (it is not typed again: a second Esc is
    # another key).
    from volee_desktop.daemon.agents import screen_keys

    view = await rig.spawn("hello")
    await rig.wait_state(view["id"], AgentState.DONE)
    swallowed: list[bytes] = []
    monkeypatch.setattr(screen_keys, "type_keys", lambda _client, data: swallowed.append(data))
    for _ in range(3):  # the done agent's last output may still come within the first wait
        result = await rig.call("agents.keys", agent=view["id"], key="shift-tab")
        if not result["taken"]:
            break
    assert result["taken"] is False
    assert swallowed[0] == b"\x1b[Z"
