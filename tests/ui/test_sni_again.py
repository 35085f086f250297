"""volee's tray item registers with a watcher that replaced another once the hosts settle
(app/sni_again.py): a registration that lands while the older bar's host re-registers is lost
for it (seen under load with two waybars: the icon in one bar only)."""

from __future__ import annotations

from typing import Any

from volee_desktop.app.sni_again import WatcherReplaced


class Clock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


def replaced(qtbot: Any, clock: Clock) -> tuple[WatcherReplaced, list[int]]:
    calls: list[int] = []

    def register() -> int:
        calls.append(1)
        return 1

    watcher = WatcherReplaced(
        register=register, settle=0.3, settle_max=1.0, clock=clock, watch=False
    )
    return watcher, calls


def test_an_owner_change_registers_once_the_hosts_have_settled(qtbot: Any) -> None:
    clock = Clock()
    watcher, calls = replaced(qtbot, clock)
    watcher.owner_changed("org.kde.StatusNotifierWatcher", ":1.4", ":1.9")
    assert watcher.pending  # not at once: the hosts re-register first
    assert calls == []
    clock.now += 0.15
    watcher.host_registered()  # the new bar's host: wait the whole settling again
    assert watcher.due_in() > 0.2
    qtbot.waitUntil(lambda: calls == [1], timeout=5000)
    assert not watcher.pending
    assert watcher.registrations == 1
    qtbot.wait(400)
    assert calls == [1]  # once


def test_hosts_that_keep_registering_do_not_put_it_off_beyond_the_most(qtbot: Any) -> None:
    clock = Clock()
    watcher, calls = replaced(qtbot, clock)
    watcher.owner_changed("org.kde.StatusNotifierWatcher", ":1.4", ":1.9")
    clock.now += 0.9  # 0.1 s left of the most
    watcher.host_registered()
    assert watcher.due_in() <= 0.15  # 0.1 s, not 0.3 s: the most is kept
    qtbot.waitUntil(lambda: calls == [1], timeout=5000)
    clock.now += 5
    watcher.host_registered()  # a host after the registration: nothing pending, nothing done
    qtbot.wait(400)
    assert calls == [1]


def test_a_gap_is_qts_own_case_and_a_host_alone_registers_nothing(qtbot: Any) -> None:
    clock = Clock()
    watcher, calls = replaced(qtbot, clock)
    watcher.owner_changed("org.kde.StatusNotifierWatcher", "", ":1.9")  # a panel started
    watcher.owner_changed("org.kde.StatusNotifierWatcher", ":1.9", "")  # a panel gone
    watcher.host_registered()
    assert not watcher.pending
    qtbot.wait(400)
    assert calls == []
