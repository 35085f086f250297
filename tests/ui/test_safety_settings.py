"""Issue 22, finding 5, in the app: a value of config.toml that lowers safety waits for the
person's confirmation, which the daemon keeps in its log (settings-confirmed)."""

from __future__ import annotations

from typing import Any

from tests.fakes.app_link import FakeDaemonLink
from volee_desktop.core import events as ev


def test_settings_that_lower_safety_need_the_person_needs_input_off_waits_for_confirmation(
    controller: Any, link: FakeDaemonLink, qtbot: Any
) -> None:
    # Issue 22, finding 5: an agent wrote needs_input = false; the app read config.toml
    # itself and stopped notifying permission requests.
    path = controller.options.config_path
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("[notifications]\nneeds_input = false\nfailed = false\n")
    controller.load_notify_settings()
    assert controller.notifications.settings.needs_input is True  # held until confirmed
    assert controller.notifications.settings.failed is False  # not a safety setting
    held = "config.toml asks for notifications.needs_input = false: not in force until you confirm"
    controller.live.on_notice({"kind": "config-unconfirmed", "problems": [held], "text": held})
    assert held in controller.panel.status.text()  # the tray says why
    # The daemon records the person's confirmation; the app follows it.
    link.push(ev.SettingsConfirmed(at=5.0, settings={"notifications.needs_input": "false"}))
    qtbot.waitUntil(lambda: controller.notifications.settings.needs_input is False, timeout=5000)
    assert not [n for n in controller.live.connection.notices if n["kind"] == "config-unconfirmed"]


def test_saving_settings_asks_the_person_to_confirm_what_lowers_safety(
    controller: Any, link: FakeDaemonLink, qtbot: Any, recorder: Any
) -> None:
    asked = {"notifications.needs_input": "false"}
    pending = {"key": "notifications.needs_input", "value": "false", "standing": "true"}
    link.handlers["config.unconfirmed"] = lambda _p: {
        "asked": asked,
        "unconfirmed": [{**pending, "why": "no notification would say that an agent asks"}],
    }
    link.handlers["config.confirm"] = lambda p: {"confirmed": p["settings"]}
    controller.confirm_settings()  # what saving the Settings dialog does
    qtbot.waitUntil(lambda: any(c.method == "config.confirm" for c in link.calls), timeout=5000)
    title, question = recorder.confirms[-1]
    assert title == "Settings that lower safety"
    assert "notifications.needs_input = false" in question
    confirm = next(c for c in link.calls if c.method == "config.confirm")
    assert confirm.params == {"settings": asked}  # what the person was shown


def test_a_person_who_declines_confirms_nothing(
    controller: Any, link: FakeDaemonLink, qtbot: Any, recorder: Any
) -> None:
    link.handlers["config.unconfirmed"] = lambda _p: {
        "asked": {"claude.permission_mode": '"bypassPermissions"'},
        "unconfirmed": [
            {"key": "claude.permission_mode", "value": '"bypassPermissions"', "why": "w"}
        ],
    }
    recorder.confirm_answer = False
    controller.confirm_settings()
    qtbot.waitUntil(lambda: bool(recorder.confirms), timeout=5000)
    assert not any(c.method == "config.confirm" for c in link.calls)
