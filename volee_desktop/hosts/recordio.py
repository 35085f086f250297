"""The lean half of host records: atomic JSON writes and the process facts a record holds.

The host imports this module, so it stays stdlib-light (no dataclasses, no typing at
run time).  ``records`` builds the typed view on top of it.

Identity does not move with the clock (docs/faults.md): a boot is named by the kernel's
boot id (Linux ``/proc/sys/kernel/random/boot_id``, macOS ``kern.bootsessionuuid``), and a
process by its start in clock ticks since boot (``starttime`` of ``/proc/<pid>/stat``), both
compared exactly.  ``boot_time`` and ``start_time`` (wall-clock seconds, as psutil gives them)
are kept for people and for records written before the boot id: ``btime`` is derived from the
wall clock, so an NTP step or a resume from sleep moves it, and with it every start time
computed from it.  Elsewhere (no ``/proc``) the start is ``None``.
"""

from __future__ import annotations

import os
import sys
import time

# Not typing.TYPE_CHECKING: importing typing would cost every host its memory.
TYPE_CHECKING = False
if TYPE_CHECKING:
    import signal as _signal  # _signal has no stubs: it is signal's C half
else:
    import _signal  # signal imports enum: a MiB of every host

_CLOCK_TICKS: int | None = None
_SIGNAL_NAMES: dict[int, str] = {}


def boot_time() -> float | None:
    """The machine's boot time (seconds since the epoch), as psutil.boot_time() gives it."""
    try:
        with open("/proc/stat", "rb") as f:
            for line in f:
                if line.startswith(b"btime"):
                    return float(line.split()[1])
    except OSError:
        pass
    return None


def boot_id() -> str | None:
    """The kernel's id of this boot: the same for the whole boot, whatever the clock does."""
    try:
        with open("/proc/sys/kernel/random/boot_id", "rb") as f:
            text = f.read().decode("ascii", "replace").strip()
            return text or None
    except OSError:
        pass
    if sys.platform == "darwin":  # pragma: no cover - macOS
        return _sysctl_string("kern.bootsessionuuid")
    return None


def _sysctl_string(name: str) -> str | None:  # pragma: no cover - macOS
    try:
        import ctypes

        libc = ctypes.CDLL(None, use_errno=True)
        size = ctypes.c_size_t(0)
        if libc.sysctlbyname(name.encode(), None, ctypes.byref(size), None, 0) != 0:
            return None
        buf = ctypes.create_string_buffer(size.value)
        if libc.sysctlbyname(name.encode(), buf, ctypes.byref(size), None, 0) != 0:
            return None
        return buf.value.decode("ascii", "replace").strip() or None
    except (OSError, AttributeError, ValueError):
        return None


def _stat_fields(pid: int) -> list[bytes] | None:
    """The fields of /proc/<pid>/stat after the command name (which may hold spaces)."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as f:
            data = f.read()
    except OSError:
        return None
    # The name is in parentheses and may itself contain ") ": split after the last one.
    return data[data.rfind(b")") + 2 :].split()


def start_time(pid: int) -> float | None:
    """When process ``pid`` started (seconds since the epoch), or None if unknown/gone."""
    global _CLOCK_TICKS
    fields = _stat_fields(pid)
    booted = boot_time()
    if not fields or booted is None:
        return None
    if _CLOCK_TICKS is None:
        _CLOCK_TICKS = os.sysconf("SC_CLK_TCK")
    # fields[0] is the state (stat field 3); starttime is stat field 22.
    return int(fields[19]) / _CLOCK_TICKS + booted


def start_ticks(pid: int) -> int | None:
    """When process ``pid`` started, in clock ticks since boot (Linux), or None.

    The kernel keeps it so: it never moves with the wall clock, so two readings compare exactly.
    """
    fields = _stat_fields(pid)
    if not fields or len(fields) < 20:
        return None
    try:
        return int(fields[19])
    except ValueError:
        return None


def command_line(pid: int) -> list[str] | None:
    """The arguments process ``pid`` runs with (Linux ``/proc``), or None if unknown."""
    try:
        with open(f"/proc/{pid}/cmdline", "rb") as f:
            raw = f.read()
    except OSError:
        return None
    return [part.decode("utf-8", "replace") for part in raw.split(b"\0") if part]


def is_zombie(pid: int) -> bool:
    """True when ``pid`` has ended but was not reaped yet (Linux only; False elsewhere)."""
    fields = _stat_fields(pid)
    return bool(fields) and fields[0] in (b"Z", b"X")  # type: ignore[index]


def pid_exists(pid: int) -> bool:
    """True when a process with this pid exists (it may belong to another user)."""
    if pid <= 0:
        return False
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return not is_zombie(pid)


def _signal_name(number: int) -> str | None:
    """``signal.Signals(number).name``, or None: of the names of a number (``SIGABRT``,
    ``SIGIOT``), the enum keeps the first in alphabetical order, and so does this."""
    if not _SIGNAL_NAMES:
        for name in sorted(dir(_signal)):
            if (name.isupper() and name.startswith("SIG") and not name.startswith("SIG_")) or (
                name.startswith("CTRL_")
            ):
                _SIGNAL_NAMES.setdefault(getattr(_signal, name), name)
    return _SIGNAL_NAMES.get(number)


def signal_words(number: int) -> str:
    """A signal's name, also for those Python has no name for: ``SIGRTMIN+6``, ``signal 77``."""
    name = _signal_name(number)
    if name is not None:
        return name
    low, high = getattr(_signal, "SIGRTMIN", None), getattr(_signal, "SIGRTMAX", None)
    if low is not None and high is not None and low <= number <= high:
        return f"SIGRTMIN+{number - low}"
    return f"signal {number}"


def exit_fields(wait_status: int) -> dict[str, object]:
    """Decode a waitpid() status: a code, or the signal that killed the program."""
    code = os.waitstatus_to_exitcode(wait_status)
    if code < 0:
        name = signal_words(-code)
        return {"code": None, "signal": -code, "signal_name": name, "ended_at": time.time()}
    return {"code": code, "signal": None, "signal_name": None, "ended_at": time.time()}


def write_json_atomic(path: str, text: str) -> None:
    """Replace ``path`` with ``text`` so a reader sees the old or the new file, never half."""
    tmp = f"{path}.tmp{os.getpid()}"
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    try:
        data = memoryview(text.encode())
        while data:
            data = data[os.write(fd, data) :]
        os.fsync(fd)
    finally:
        os.close(fd)
    os.replace(tmp, path)
    # The rename is durable only once the folder is synced too.
    try:
        dfd = os.open(os.path.dirname(path) or ".", os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(dfd)
    except OSError:
        pass
    finally:
        os.close(dfd)
