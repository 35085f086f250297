"""codex 0.171's usage limit, on the screen it recorded against the fake API (samples/limits/):
codex fires no hook, so its screen is what tells (docs/limits.md)."""

from __future__ import annotations

from datetime import datetime

from volee_desktop.daemon.agents.limits import codex_reset
from volee_desktop.harness.codex import ScreenLimit, screen_limit

from .support import SAMPLES


def recorded() -> list[str]:
    text = (SAMPLES / "limits" / "codex-0.171.0-screens.txt").read_text()
    return [line for line in text.splitlines() if not line.startswith(("#", "---"))]


NOW = datetime(2026, 12, 1, 23, 59).timestamp()


def test_the_recorded_screen_is_a_usage_limit_with_its_reset() -> None:
    seen = screen_limit(recorded())
    assert seen == ScreenLimit(clock="Dec 2nd, 2026 2:12 AM")
    assert codex_reset(seen, NOW) == datetime(2026, 12, 2, 2, 12).timestamp()


def test_a_reset_later_today_pm_and_a_message_without_a_time() -> None:
    lines = ["■ You’ve hit your usage limit. Upgrade to Pro", "or try again at 12:12 AM."]
    today = screen_limit(lines)
    assert today == ScreenLimit(clock="12:12 AM")
    assert codex_reset(today, NOW) == datetime(2026, 12, 2, 0, 12).timestamp()
    pm = screen_limit(["■ You've hit your usage limit. … or try again at Jan 3rd, 2027 4:05 PM."])
    assert pm is not None
    assert codex_reset(pm, NOW) == datetime(2027, 1, 3, 16, 5).timestamp()
    bare = screen_limit(["■ You’ve hit your usage limit."])
    assert bare == ScreenLimit(clock=None)
    assert codex_reset(bare, NOW) is None


def test_words_about_usage_limits_in_the_conversation_are_no_limit() -> None:
    assert screen_limit(["• I read how you hit your usage limit in the docs", "› next"]) is None
    assert screen_limit(["› Ask Codex to do anything"]) is None
