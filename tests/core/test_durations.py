"""The one duration text: the CLI's columns, the tray's rows and recovery's reasons agree."""

from __future__ import annotations

import pytest

from volee_desktop.core.durations import duration


@pytest.mark.parametrize(
    ("seconds", "text"),
    [
        (-5, "0 s"),
        (0, "0 s"),
        (12.9, "12 s"),
        (59, "59 s"),
        (60, "1 min"),
        (3599, "59 min"),
        (3600, "1 h"),
        (2 * 3600 + 5 * 60 + 30, "2 h 5 min"),
        (7 * 3600, "7 h"),
        (86399, "23 h 59 min"),
        (86400, "1 d"),
        (4 * 86400 + 3600, "4 d"),
    ],
)
def test_a_duration_reads_in_its_largest_unit(seconds: float, text: str) -> None:
    assert duration(seconds) == text


def test_cli_app_and_recovery_use_the_one_formatter() -> None:
    from volee_desktop.app import delegate
    from volee_desktop.cli import agents, daemon, missions
    from volee_desktop.core import recovery

    for module in (delegate, agents, daemon, missions, recovery):
        assert module.duration is duration, module.__name__
