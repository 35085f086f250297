"""The list left open (issue 27): the daemon with an interactive client subscribed and 5 idle
agents, everything it starts counted, for two trees of volee in one run.

    .venv/bin/python bench/list_open.py --before /tmp/main-checkout [--idle-seconds 60] [--app]

For each tree (``--before``, a checkout of the code to compare with, then this one): a real
daemon (``volee daemon run``, that tree's code through PYTHONPATH) in a throwaway
VOLEE_HOME with the pinned Claude Code as its lister (so a listing starts Node, as on a
person's machine), 5 generic agents that idle (``sleep``), and a client subscribed with
``interactive: true`` (what the tray does while its list is shown; ``--app``: the tray app
itself on Xvfb with no tray host, so it shows its list as a window).  Then, with nothing
changing, the CPU of the daemon with the children it reaped (the Node listings), of the
hosts and of the app, % of one core over ``--idle-seconds`` (``bench/counting.py``), and
the listings that ran meanwhile.  Target (issue 27): <= 0.3 % with the list open and 5 idle agents.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))

from counting import Fleet, idle_cpu  # noqa: E402
from fleet import Rig  # noqa: E402

from tests.fakes.harness_env import find_harness  # noqa: E402
from volee_desktop.ipc.client import Client  # noqa: E402


def discovery(rig: Rig) -> dict[str, Any]:
    part: dict[str, Any] = ((rig.status() or {}).get("extra") or {}).get("discovery") or {}
    return part


def subscribed(rig: Rig) -> Client:
    """A client subscribed as the shown list is (its pushes read and dropped)."""
    client = Client.connect(rig.dirs.socket, timeout=None)
    client.request("subscribe", {"since": None, "interactive": True})

    def drain() -> None:
        try:
            for _push in client.pushes():
                pass
        except Exception:
            return  # closed

    threading.Thread(target=drain, daemon=True).start()
    return client


def app_with_its_list(rig: Rig) -> None:
    """The tray app on Xvfb with no tray host: it shows its list as a window (an interactive
    client), as for a person whose panel has no tray or who keeps the window open."""
    from tests.ui import desktop as dt

    if dt.missing():
        raise SystemExit(f"--app needs {', '.join(dt.missing())}")
    rig.desk = dt.Desktop(tray=False)
    env = dict(rig.env)
    for key in ("DISPLAY", "QT_QPA_PLATFORM", "DBUS_SESSION_BUS_ADDRESS"):
        env[key] = rig.desk.env[key]
    log = open(rig.root / "app.log", "ab")  # noqa: SIM115 - held by the child
    rig.app = subprocess.Popen(
        [sys.executable, "-m", "volee_desktop.cli", "app"],
        env=env,
        stdin=subprocess.DEVNULL,
        stdout=log,
        stderr=log,
        start_new_session=True,
    )
    log.close()
    deadline = time.monotonic() + 60
    while discovery(rig).get("interactive_clients", 0) < 1:
        if time.monotonic() > deadline or rig.app.poll() is not None:
            raise SystemExit("the app did not show its list: " + (rig.root / "app.log").read_text())
        time.sleep(0.5)


def measure(tree: Path, claude: Path | None, args: argparse.Namespace) -> dict[str, Any]:
    # The tree's code, not this venv's editable install: PYTHONPATH, and the tree as the
    # current folder (``python -m`` puts the current folder first on sys.path).
    os.chdir(tree)
    rig = Rig(claude)
    rig.env["PYTHONPATH"] = str(tree)
    code = subprocess.run(
        [sys.executable, "-c", "import volee_desktop; print(volee_desktop.__file__)"],
        env=rig.env,
        capture_output=True,
        text=True,
        check=True,
    ).stdout.strip()
    try:
        rig.start_daemon()
        rig.spawn(0, args.agents)
        assert rig.daemon is not None
        fleet = Fleet(rig.dirs.hosts, daemon=rig.daemon.pid)
        client = None
        if args.app:
            app_with_its_list(rig)
            assert rig.app is not None
            fleet.app = rig.app.pid
        else:
            client = subscribed(rig)
        try:
            time.sleep(args.settle)
            listings = discovery(rig).get("listings", 0)
            cpu = idle_cpu(fleet, args.idle_seconds)
            part = discovery(rig)
        finally:
            if client is not None:
                client.close()
        return {
            "code": code,
            "app": cpu.get("app", 0.0),
            "daemon": cpu.get("daemon", 0.0),
            "hosts": cpu.get("hosts", 0.0),
            "listings": part.get("listings", 0) - listings,
            "cadence": part.get("cadence", "(not said)"),
            "interactive": part.get("interactive_clients"),
        }
    finally:
        rig.close()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--before", type=Path, required=True, help="a checkout to compare with")
    parser.add_argument("--agents", type=int, default=5)
    parser.add_argument("--idle-seconds", type=float, default=60.0)
    parser.add_argument("--settle", type=float, default=10.0)
    parser.add_argument(
        "--app", action="store_true", help="the tray app showing its list (Xvfb, no tray host)"
    )
    args = parser.parse_args()
    claude = find_harness("claude")
    if claude is None:
        raise SystemExit("the pinned Claude Code is not installed (scripts/install-harnesses)")
    results = {
        "before": measure(args.before.resolve(), claude, args),
        "after": measure(ROOT, claude, args),
    }
    client = "the app showing its list" if args.app else "1 interactive client subscribed"
    print(
        f"\n{args.agents} idle generic agents, {client}, "
        f"idle {args.idle_seconds:g} s, % of one core (children counted):"
    )
    for name, r in results.items():
        total = r["app"] + r["daemon"] + r["hosts"]
        app = f"app + reaped {r['app']:6.3f} %, " if args.app else ""
        print(
            f"  {name:6s} {app}daemon + reaped {r['daemon']:6.3f} %, hosts {r['hosts']:6.3f} %, "
            f"total {total:6.3f} %; {r['listings']} listings; cadence {r['cadence']}; "
            f"{r['interactive']} interactive client(s); code {r['code']}"
        )
    before, after = (sum(results[k][p] for p in ("app", "daemon", "hosts")) for k in results)
    ratio = f"{after / before:.3f}x" if before else "n/a"
    print(f"  after / before: {ratio} (target: <= 0.3 % after)")


if __name__ == "__main__":
    main()
