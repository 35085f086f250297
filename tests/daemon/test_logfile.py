"""logs/daemon.log is size-capped: rotated with a few old files kept, raw stderr following it."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

CHILD = r"""
import logging, os, sys
from pathlib import Path
path = Path(sys.argv[1])
fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600)
os.dup2(fd, 1); os.dup2(fd, 2); os.close(fd)   # as start_daemon starts the daemon
from volee_desktop.daemon import logfile
logfile.setup(path, max_bytes=4000, backups=2)
log = logging.getLogger("volee_desktop.test")
for i in range(400):
    log.info("line %04d %s", i, "x" * 40)
print("RAW-STDERR-AFTER-ROTATION", file=sys.stderr, flush=True)
os.write(2, b"RAW-FD2-AFTER-ROTATION\n")
"""


def test_the_daemon_log_rotates_and_stderr_follows_the_new_file(tmp_path: Path) -> None:
    path = tmp_path / "daemon.log"
    subprocess.run([sys.executable, "-c", CHILD, str(path)], check=True, timeout=60)
    files = sorted(p.name for p in tmp_path.iterdir())
    assert files == ["daemon.log", "daemon.log.1", "daemon.log.2"]
    for name in files:
        assert (tmp_path / name).stat().st_size <= 4000 + 200, name
    current = path.read_text()
    assert "line 0399" in current
    assert "RAW-STDERR-AFTER-ROTATION" in current
    assert "RAW-FD2-AFTER-ROTATION" in current
    assert "line 0000" not in "".join((tmp_path / n).read_text() for n in files)


def test_a_daemon_run_in_a_terminal_logs_to_stderr_without_rotating(tmp_path: Path) -> None:
    import io

    from volee_desktop.daemon import logfile

    stream = io.StringIO()
    handler = logfile.setup(tmp_path / "daemon.log", stream=stream)
    try:
        assert not isinstance(handler, logfile.logging.handlers.RotatingFileHandler)
        assert not (tmp_path / "daemon.log").exists()
    finally:
        logfile.logging.getLogger().removeHandler(handler)
