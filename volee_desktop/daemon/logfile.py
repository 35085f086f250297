"""The daemon's log: ``logs/daemon.log``, size-capped (rotated), raw stderr kept in it.

A daemon started by ``volee`` (``cli.common.start_daemon``) has its stdout and stderr
appended to ``logs/daemon.log``, so a crash before logging starts, a traceback or a
faulthandler dump land there too. When stderr is that very file, logging goes through a
``RotatingFileHandler`` on it that, after each rotation, points stdout and stderr at the fresh
file: the log never grows past ``MAX_BYTES`` plus ``BACKUPS`` older files. Anywhere else (a
terminal, journald under the login item) the log goes to stderr, whose keeper caps it.
"""

from __future__ import annotations

import logging
import logging.handlers
import os
import sys
from pathlib import Path
from typing import TextIO

MAX_BYTES = 10 * 2**20
BACKUPS = 3  # daemon.log.1 … daemon.log.3: at most 40 MiB in all
FORMAT = "%(asctime)s %(levelname)s %(name)s: %(message)s"


class _FollowingRotatingHandler(logging.handlers.RotatingFileHandler):
    """Rotates by size, then moves stdout and stderr to the new file as well."""

    def doRollover(self) -> None:
        super().doRollover()
        if self.stream is not None:
            fd = self.stream.fileno()
            for std in (sys.stdout, sys.stderr):
                try:
                    std.flush()
                except (OSError, ValueError):
                    pass
            os.dup2(fd, 1)
            os.dup2(fd, 2)


def _same_file(stream: TextIO, path: Path) -> bool:
    try:
        mine = os.fstat(stream.fileno())
        theirs = path.stat()
    except (OSError, ValueError, AttributeError):
        return False
    return (mine.st_dev, mine.st_ino) == (theirs.st_dev, theirs.st_ino)


def setup(
    path: Path,
    *,
    max_bytes: int = MAX_BYTES,
    backups: int = BACKUPS,
    level: int = logging.INFO,
    stream: TextIO | None = None,
) -> logging.Handler:
    """Send the root logger to ``path`` (rotating) when stderr is that file, else to stderr."""
    err = stream if stream is not None else sys.stderr
    handler: logging.Handler
    if _same_file(err, path):
        handler = _FollowingRotatingHandler(
            path, maxBytes=max_bytes, backupCount=backups, encoding="utf-8"
        )
    else:
        handler = logging.StreamHandler(err)
    handler.setFormatter(logging.Formatter(FORMAT))
    root = logging.getLogger()
    root.addHandler(handler)
    root.setLevel(level)
    return handler
