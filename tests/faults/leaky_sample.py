"""Run only by test_leftovers.py (its name is not test_*): a test that leaves a process."""

from __future__ import annotations

import os


def test_that_leaves_a_sleeper_behind() -> None:
    os.posix_spawnp("sleep", ["sleep", "300"], dict(os.environ))
