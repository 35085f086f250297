"""A process tree read from ``/proc`` (Linux): every descendant of a pid, to end them.

The host uses it to end what its program left behind before it exits, the daemon to end
what a killed host left behind (``daemon/agents/leftovers.py``, docs/trust-model.md).  Stdlib
only, ``os`` alone: the host imports it.  Where there is no ``/proc`` nothing is found.
"""

from __future__ import annotations

import os


def stat_fields(pid: int) -> list[bytes] | None:
    """The fields of ``/proc/<pid>/stat`` after the command name (state first), or None.

    Field ``i`` of proc(5) (1-based) is ``[i - 3]`` here: the parent is ``[1]``, the session
    ``[3]``, the start in clock ticks ``[19]``."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as f:
            stat = f.read()
    except OSError:
        return None
    # The command name is in parentheses and may hold spaces and ")" itself.
    end = stat.rfind(b")")
    fields = stat[end + 2 :].split() if end > 0 else []
    return fields if len(fields) > 19 else None


def parents() -> dict[int, int]:
    """The parent pid of every process in ``/proc`` ({} where there is none)."""
    found: dict[int, int] = {}
    try:
        names = os.listdir("/proc")
    except OSError:
        return found
    for name in names:
        if not name.isdigit():
            continue
        fields = stat_fields(int(name))
        if fields is not None:
            found[int(name)] = int(fields[1])
    return found


def descendants(roots: list[int], table: dict[int, int] | None = None) -> list[int]:
    """Every descendant of ``roots`` (not the roots), parents before their children."""
    table = parents() if table is None else table
    children: dict[int, list[int]] = {}
    for pid, parent in table.items():
        children.setdefault(parent, []).append(pid)
    found: list[int] = []
    seen = set(roots)
    todo = list(roots)
    while todo:
        for child in children.get(todo.pop(), ()):
            if child not in seen:
                seen.add(child)
                found.append(child)
                todo.append(child)
    return found


def signal_each(pids: list[int], sig: int) -> int:
    """Send ``sig`` to each of ``pids``; how many got it (gone or not ours: skipped)."""
    sent = 0
    for pid in pids:
        try:
            os.kill(pid, sig)
            sent += 1
        except (ProcessLookupError, PermissionError):
            pass
    return sent
