"""What a piece of the controller needs to call the daemon and say how it went (``Calls``).

``ManyActions`` and ``MissionReviews`` both read the live registry, call the daemon on a task,
withdraw a notification and report the outcome in the status line: the controller builds one
``Calls`` and hands it to both, so the two cannot drift apart in what they are given.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass

from volee_desktop.core.registry import Registry

from .link import DaemonLink
from .tasks import Tasks


@dataclass(frozen=True, kw_only=True)
class Calls:
    """The live registry, the daemon link, the tasks, and how an outcome is told."""

    registry: Callable[[], Registry]
    link: Callable[[], DaemonLink]
    tasks: Tasks
    #: Withdraw the notification of an agent or a mission (its answer is on its way).
    withdraw: Callable[[str], None]
    #: A line in the status bar; the float is when the work started (None: not timed).
    said: Callable[[str, float | None], None]
    #: A failure: its short line and the details.
    failed: Callable[[str, str], None]
    #: A method was called (the controller's ``called`` signal).
    called: Callable[[str], None]
    monotonic: Callable[[], float] = time.monotonic
