"""tracemalloc snapshots of the daemon and the app, for the soak (bench/soak.py --tracemalloc).

Put on PYTHONPATH with VOLEE_TRACEMALLOC=<folder>: a Python process whose command line is the
daemon's (``volee … daemon run``) or the app's (``volee … app``) starts tracemalloc (ten frames)
and writes a snapshot every VOLEE_TRACEMALLOC_EVERY seconds (default 60) into the folder, with
its RSS and glibc's arena figures beside it, so that the traced total can be set against RSS
(a leak grows both; fragmentation grows RSS only).  VOLEE_TRACEMALLOC_FRAMES=0 leaves
tracemalloc off (its own tables cost memory); VOLEE_TRACEMALLOC_TRIM=1 calls ``malloc_trim(0)``
after each sample and records RSS again (what the allocator held free);
VOLEE_TRACEMALLOC_PYMALLOC=1 adds pymalloc's own figures; VOLEE_TRACEMALLOC_GARBAGE=1
counts what a full collection finds unreachable, by type and by code, before it is freed;
VOLEE_TRACEMALLOC_COLLECT=1 runs a full
``gc.collect()`` after each sample and records what it found (cyclic garbage held till then).
Every other process is left alone.  A bench tool, not part of volee: the daemon and the app
carry no code for it.
"""

from __future__ import annotations

import ctypes
import gc
import json
import os
import sys
import threading
import time


def _role() -> str | None:
    argv = sys.argv
    if "daemon" in argv and "run" in argv:
        return "daemon"
    if argv and argv[-1] == "app":
        return "app"
    return None


_MALLINFO: list[object] = []  # glibc's mallinfo2, made once: a ctypes type made per sample
# and a CDLL opened per sample are cyclic garbage of the process measured


def _mallinfo() -> dict[str, int]:
    """glibc's mallinfo2: the heap it holds (arena, mmap) against what is in use (uordblks)."""
    names = ("arena", "ordblks", "smblks", "hblks", "hblkhd", "usmblks", "fsmblks",
             "uordblks", "fordblks", "keepcost")  # fmt: skip
    if not _MALLINFO:

        class Info(ctypes.Structure):
            _fields_ = [(n, ctypes.c_size_t) for n in names]

        try:
            call = ctypes.CDLL("libc.so.6").mallinfo2
        except (OSError, AttributeError):
            return {}
        call.restype = Info
        _MALLINFO.append(call)
    info = _MALLINFO[0]()  # type: ignore[operator]
    return {name: int(getattr(info, name)) for name in names}


def _rss() -> int:
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")


def _pymalloc() -> dict[str, int]:
    """pymalloc's own figures from ``sys._debugmallocstats()`` (it writes to fd 2: caught)."""
    import tempfile

    with tempfile.TemporaryFile() as out:
        saved = os.dup(2)
        try:
            os.dup2(out.fileno(), 2)
            sys._debugmallocstats()
        finally:
            os.dup2(saved, 2)
            os.close(saved)
        out.seek(0)
        text = out.read().decode(errors="replace")
    figures: dict[str, int] = {}
    for line in text.splitlines():
        name, sep, value = line.rpartition("=")
        if sep and name.startswith("#"):
            try:
                figures[name.strip("# ").strip()] = int(value.strip().replace(",", ""))
            except ValueError:
                pass
    return figures


def _smaps() -> dict[str, int]:
    """Resident KiB by kind of mapping: the heap, anonymous maps, stacks, files."""
    sums: dict[str, int] = {}
    kind = "anon"
    try:
        with open("/proc/self/smaps") as f:
            for line in f:
                head = line.split()
                if not head:
                    continue
                if "-" in head[0] and len(head) >= 5 and not head[0].endswith(":"):
                    path = head[5] if len(head) > 5 else ""
                    if path == "[heap]":
                        kind = "heap"
                    elif path.startswith("[stack"):
                        kind = "stack"
                    else:
                        kind = "anon" if not path else "special" if path[:1] == "[" else "file"
                elif head[0] == "Rss:":
                    sums[kind] = sums.get(kind, 0) + int(head[1])
    except OSError:
        pass
    return sums


def _garbage() -> dict[str, object]:
    """What a full collection finds unreachable, by type and by the module of its code.

    ``DEBUG_SAVEALL`` keeps the unreachable objects in ``gc.garbage`` instead of freeing
    them, so they can be counted; then they are let go.
    """
    gc.set_debug(gc.DEBUG_SAVEALL)
    try:
        found = gc.collect()
        types: dict[str, int] = {}
        where: dict[str, int] = {}
        for obj in gc.garbage:
            kind = type(obj)
            name = f"{kind.__module__}.{kind.__qualname__}"
            types[name] = types.get(name, 0) + 1
            frame = getattr(obj, "tb_frame", None)  # a traceback: where it was raised
            code = (
                getattr(obj, "f_code", None)
                or getattr(obj, "cr_code", None)
                or getattr(obj, "__code__", None)
                or getattr(frame, "f_code", None)
            )
            if code is not None:
                at = f"{code.co_filename}:{code.co_firstlineno} {code.co_name}"
                where[at] = where.get(at, 0) + 1
    finally:
        gc.garbage.clear()
        gc.set_debug(0)
    top = sorted(types.items(), key=lambda kv: -kv[1])[:25]
    code_top = sorted(where.items(), key=lambda kv: -kv[1])[:25]
    return {"found": found, "types": dict(top), "code": dict(code_top)}


def _dump_forever(folder: str, role: str, every: float, trim: bool) -> None:
    import tracemalloc

    n = 0
    while True:
        time.sleep(every)
        stem = os.path.join(folder, f"{role}-{os.getpid()}-{n:03d}")
        traced, peak = 0, 0
        if tracemalloc.is_tracing():
            tracemalloc.take_snapshot().dump(stem + ".snap")
            traced, peak = tracemalloc.get_traced_memory()
        meta: dict[str, object] = {"at": time.time(), "rss": _rss(), "traced": traced}
        meta["peak"] = peak
        meta["mallinfo"] = _mallinfo()
        meta["smaps_kib"] = _smaps()
        meta["threads"] = threading.active_count()
        meta["gc_count"] = list(gc.get_count())
        meta["gc_stats"] = gc.get_stats()
        if os.environ.get("VOLEE_TRACEMALLOC_GARBAGE") == "1":
            meta["gc_garbage"] = _garbage()
            meta["rss_collected"] = _rss()
        elif os.environ.get("VOLEE_TRACEMALLOC_COLLECT") == "1":
            # Cyclic garbage a full collection would free (then RSS again after it).
            # What the daemon's collection after work costs: wall time, and this thread's CPU
            # time (the wall time of a loaded machine counts other processes' turns too).
            began, cpu = time.perf_counter(), time.thread_time()
            meta["gc_collected"] = gc.collect()
            meta["gc_seconds"] = time.perf_counter() - began
            meta["gc_cpu_seconds"] = time.thread_time() - cpu
            meta["gc_tracked"] = len(gc.get_objects())
            meta["rss_collected"] = _rss()
        if os.environ.get("VOLEE_TRACEMALLOC_PYMALLOC") == "1":
            meta["pymalloc"] = _pymalloc()
        if trim:  # how much of RSS the allocator held free: given back, then measured
            ctypes.CDLL(None).malloc_trim(0)
            meta["rss_trimmed"] = _rss()
        with open(stem + ".json", "w") as f:
            json.dump(meta, f)
        n += 1


def _start() -> None:
    folder = os.environ.get("VOLEE_TRACEMALLOC")
    role = _role() if folder else None
    if not folder or role is None:
        return
    import tracemalloc

    frames = int(os.environ.get("VOLEE_TRACEMALLOC_FRAMES", "10"))
    if frames:  # 0: RSS and the allocator's figures only (tracemalloc costs memory itself)
        tracemalloc.start(frames)
    every = float(os.environ.get("VOLEE_TRACEMALLOC_EVERY", "60"))
    trim = os.environ.get("VOLEE_TRACEMALLOC_TRIM") == "1"
    threading.Thread(target=_dump_forever, args=(folder, role, every, trim), daemon=True).start()


_start()
