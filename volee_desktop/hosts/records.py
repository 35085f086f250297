"""Host records: what a host writes to ``<state>/hosts/<agent>.json`` and how to read it.

The host writes the record when the program started (``exit`` is None) and again when it
ended.  ``host_alive`` and ``program_alive`` need no psutil: ``os.kill(pid, 0)`` plus the
process start in clock ticks since boot from ``/proc`` (pid reuse) and the kernel's boot id
(a pid from an earlier boot is never alive).  Neither moves when the wall clock is stepped
(NTP after a resume from sleep), so a live host is never taken for dead.  Records written
before the boot id (``boot_id`` None) fall back to the wall-clock boot and start times.  On
platforms without ``/proc`` the start is None and only the pid (and the boot) is checked.
"""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from volee_desktop.hosts import recordio
from volee_desktop.hosts.errors import RecordError

RECORD_VERSION = 1
# Start times are computed from the same clock-tick count each time; anything off by more
# than this is another process that got the same pid.
START_TIME_TOLERANCE = 0.5
BOOT_TIME_TOLERANCE = 1.0


@dataclass(frozen=True)
class ExitStatus:
    """How the program ended: a code, or the signal that killed it (never success)."""

    code: int | None
    signal: int | None
    signal_name: str | None
    ended_at: float
    # volee asked the program to stop (``stop``), so an end by SIGTERM is expected.
    stop_requested: bool = False
    # The host itself got this signal (machine stopping, host killed) and hung up.
    host_signal: str | None = None

    @property
    def success(self) -> bool:
        """True only for exit code 0; a death by signal is never success."""
        return self.signal is None and self.code == 0

    @property
    def killed_by(self) -> str | None:
        """The signal that killed the program, in words, named or not (None: it exited).

        Records written before volee named real-time signals have ``signal`` without
        ``signal_name``: a death by signal must never read as an ordinary exit."""
        if self.signal is None:
            return self.signal_name
        if self.signal_name:
            return self.signal_name
        return recordio.signal_words(self.signal)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> ExitStatus:
        """Build from a record's ``exit`` object."""
        return cls(
            code=data.get("code"),
            signal=data.get("signal"),
            signal_name=data.get("signal_name"),
            ended_at=float(data["ended_at"]),
            stop_requested=bool(data.get("stop_requested", False)),
            host_signal=data.get("host_signal"),
        )


@dataclass(frozen=True)
class HostRecord:
    """One host's record: who runs, since when, and how the program ended."""

    agent: str
    host_pid: int
    program_pid: int | None
    program_create_time: float | None
    boot_time: float | None
    started_at: float
    argv: tuple[str, ...]
    cwd: str
    socket: str = ""
    host_create_time: float | None = None
    # The boot and the starts as the kernel keeps them (they do not move with the clock).
    boot_id: str | None = None
    host_start_ticks: int | None = None
    program_start_ticks: int | None = None
    exit: ExitStatus | None = None
    # Set when the program could not be started ("cannot start 'x': not found on PATH").
    error: str | None = None
    v: int = field(default=RECORD_VERSION)

    @property
    def running(self) -> bool:
        """The record says the program started and has not ended (the host may be gone)."""
        return self.error is None and self.exit is None and self.program_pid is not None

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> HostRecord:
        """Build from the record's JSON object; KeyError/TypeError/ValueError if malformed."""
        version = int(data.get("v", 1))
        if version > RECORD_VERSION:
            raise ValueError(f"record version {version} is newer than {RECORD_VERSION}")
        exit_data = data.get("exit")
        return cls(
            agent=str(data["agent"]),
            host_pid=int(data["host_pid"]),
            program_pid=None if data.get("program_pid") is None else int(data["program_pid"]),
            program_create_time=_opt_float(data.get("program_create_time")),
            boot_time=_opt_float(data.get("boot_time")),
            started_at=float(data["started_at"]),
            argv=tuple(str(a) for a in data["argv"]),
            cwd=str(data["cwd"]),
            socket=str(data.get("socket") or ""),
            host_create_time=_opt_float(data.get("host_create_time")),
            boot_id=None if data.get("boot_id") is None else str(data["boot_id"]),
            host_start_ticks=_opt_int(data.get("host_start_ticks")),
            program_start_ticks=_opt_int(data.get("program_start_ticks")),
            exit=None if exit_data is None else ExitStatus.from_dict(exit_data),
            error=data.get("error"),
            v=version,
        )

    def to_dict(self) -> dict[str, Any]:
        """The JSON object the host writes."""
        data = asdict(self)
        data["argv"] = list(self.argv)
        return data


def _opt_float(value: Any) -> float | None:
    return None if value is None else float(value)


def _opt_int(value: Any) -> int | None:
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int):
        raise TypeError(f"expected a whole number, got {value!r}")
    return value


def read_record(path: Path | str) -> HostRecord | None:
    """The record at ``path``; None when there is none; RecordError when it is unreadable."""
    try:
        text = Path(path).read_text(encoding="utf-8")
    except FileNotFoundError:
        return None
    except OSError as exc:
        raise RecordError(f"cannot read host record {path}: {exc.strerror}") from exc
    try:
        return HostRecord.from_dict(json.loads(text))
    except (ValueError, KeyError, TypeError, AttributeError) as exc:
        raise RecordError(
            f"host record {path} is not a valid record ({exc!r}); "
            "remove it if no host runs for that agent"
        ) from exc


def write_record_atomic(path: Path | str, record: HostRecord) -> None:
    """Write ``record`` to ``path`` atomically (temp file, fsync, rename)."""
    recordio.write_json_atomic(str(path), json.dumps(record.to_dict(), indent=1))


def same_boot(record: HostRecord) -> bool | None:
    """Whether ``record`` was written in this boot; None when nothing says."""
    if record.boot_id is not None:
        current = recordio.boot_id()
        if current is not None:
            return current == record.boot_id
    # A record from before the boot id: the wall-clock boot time is all there is.
    booted = recordio.boot_time()
    if record.boot_time is None or booted is None:
        return None
    return abs(booted - record.boot_time) <= BOOT_TIME_TOLERANCE


def _same_process(
    record: HostRecord, pid: int, ticks: int | None, recorded_start: float | None
) -> bool:
    if not recordio.pid_exists(pid):
        return False
    if same_boot(record) is False:
        return False  # a pid from an earlier boot: whatever has it now is not ours
    if ticks is not None:
        now_ticks = recordio.start_ticks(pid)
        return now_ticks is None or now_ticks == ticks
    if recorded_start is None:
        return True  # nothing to compare with (no /proc): trust the pid
    now_start = recordio.start_time(pid)
    return now_start is None or abs(now_start - recorded_start) <= START_TIME_TOLERANCE


def host_alive(record: HostRecord) -> bool:
    """True when the record's host process still runs (not a reused pid, not a zombie)."""
    return _same_process(record, record.host_pid, record.host_start_ticks, record.host_create_time)


def program_alive(record: HostRecord) -> bool:
    """True when the record's program still runs (not a reused pid, not a zombie)."""
    if record.program_pid is None or record.exit is not None:
        return False
    return _same_process(
        record, record.program_pid, record.program_start_ticks, record.program_create_time
    )


def record_path(hosts_dir: Path, agent_id: str) -> Path:
    """Where the host of ``agent_id`` keeps its record."""
    return hosts_dir / f"{agent_id}.json"


__all__ = [
    "ExitStatus",
    "HostRecord",
    "host_alive",
    "program_alive",
    "read_record",
    "record_path",
    "same_boot",
    "write_record_atomic",
]
