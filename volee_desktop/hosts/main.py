"""The host's command line and start-up: parse, detach, serve, start the program, report.

Run as ``python -m volee_desktop.hosts.main --agent AG --record PATH --socket PATH
[--cwd DIR] [--env-file F] [--rows R] [--cols C] [--linger S] [--ready-fd N] -- argv...``
(the launcher adds ``-I -S``).  What the host does once started is ``host.py``'s.
Stdlib only, like the host: no argparse (it costs the host half a MiB).
"""

from __future__ import annotations

import os
import sys

from volee_desktop import lean
from volee_desktop.hosts.host import DEFAULT_LINGER, Host, _log

# Not typing.TYPE_CHECKING: importing typing would cost every host its memory.
TYPE_CHECKING = False
if TYPE_CHECKING:
    import signal as _signal  # _signal has no stubs: it is signal's C half
else:
    import _signal  # signal imports enum: a MiB of every host

_USAGE = (
    "usage: python -m volee_desktop.hosts.main --agent AG --record PATH --socket PATH "
    "[--cwd DIR] [--env-file F] [--rows R] [--cols C] [--linger S] [--ready-fd N] "
    "[--foreground] -- argv..."
)


def _parse(args: list[str]) -> tuple[dict[str, str], list[str]]:
    """A tiny parser: argparse alone costs the host half a MiB."""
    if "--" not in args:
        raise SystemExit(_USAGE)
    split = args.index("--")
    opts, argv = args[:split], args[split + 1 :]
    known = {"agent", "record", "socket", "cwd", "env-file", "rows", "cols", "linger", "ready-fd"}
    parsed: dict[str, str] = {}
    i = 0
    while i < len(opts):
        name = opts[i][2:]
        if name == "foreground":
            parsed[name] = "1"
            i += 1
            continue
        if not opts[i].startswith("--") or name not in known or i + 1 >= len(opts):
            raise SystemExit(f"bad option {opts[i]!r}\n{_USAGE}")
        parsed[name] = opts[i + 1]
        i += 2
    for required in ("agent", "record", "socket"):
        if required not in parsed:
            raise SystemExit(f"--{required} is required\n{_USAGE}")
    if not argv:
        raise SystemExit(f"no program given\n{_USAGE}")
    return parsed, argv


def _tell(fd: int, obj: dict[str, object]) -> None:
    if fd < 0:
        return
    try:
        os.write(fd, (lean.dumps(obj) + "\n").encode())
    except OSError:
        pass
    try:
        os.close(fd)
    except OSError:
        pass


def main(args: list[str] | None = None) -> int:
    """Run a host; returns its exit status (0 unless it could not start the program)."""
    opts, argv = _parse(sys.argv[1:] if args is None else args)
    ready = int(opts.get("ready-fd", "-1"))
    env = dict(os.environ)
    if "env-file" in opts:
        with open(opts["env-file"], "rb") as f:
            env = lean.loads(f.read())
        os.unlink(opts["env-file"])
    if "foreground" not in opts:
        if os.getsid(0) != os.getpid():
            os.setsid()
        if os.fork() > 0:
            os._exit(0)
    os.umask(0o077)
    os.chdir("/")  # hold no folder (the program gets its own cwd)
    _signal.signal(_signal.SIGHUP, _signal.SIG_IGN)  # until run() installs its handlers
    host = Host(
        agent=opts["agent"],
        record_path=opts["record"],
        socket_path=opts["socket"],
        argv=argv,
        cwd=os.path.abspath(opts.get("cwd", os.getcwd())),
        env=env,
        rows=int(opts.get("rows", "40")),
        cols=int(opts.get("cols", "120")),
        linger=float(opts.get("linger", str(DEFAULT_LINGER))),
    )
    try:
        host.listen()
    except OSError as exc:
        error = f"cannot serve socket {opts['socket']}: {exc.strerror or exc}"
        _log(error)
        host.record = host.base_record()
        host.record["error"] = error
        host.write_record()
        _tell(ready, {"ok": False, "error": error, "record": host.record})
        return 1
    failure = host.start()
    if failure is not None:
        _log(failure)
        _tell(ready, {"ok": False, "error": failure, "record": host.record})
        return 1
    _log(f"started {argv!r} as pid {host.pid}")
    _tell(ready, {"ok": True, "record": host.record})
    host.run()
    _log("host exits")
    return 0


def cli() -> None:
    """Entry point: run a host and exit with its status."""
    try:
        code = main()
    except OSError as exc:
        _log(f"host failed: {exc}")
        code = 1
    sys.exit(code)


if __name__ == "__main__":
    cli()
