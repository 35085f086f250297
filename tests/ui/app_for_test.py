"""Runs the real tray app (``run_app``) for process-level tests.

``python tests/ui/app_for_test.py embed``: no daemon runs, so the app embeds
the fake daemon (the ``start_daemon`` seam); ``client``: the app only connects;
``real``: run_app's defaults (the real daemon embedded).
Opening an agent in a terminal runs ``$TERMINAL`` (tests point it at a script).
"""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))


def main() -> int:
    from tests.fakes.fake_daemon import FakeDaemon
    from volee_desktop.app.main import run_app
    from volee_desktop.paths import dirs

    mode = sys.argv[1] if len(sys.argv) > 1 else "embed"
    if mode == "real":  # run_app's defaults: the real daemon, embedded
        return run_app(["volee", *sys.argv[2:]])
    start = FakeDaemon(dirs().socket).serve if mode == "embed" else None
    return run_app(["volee", *sys.argv[2:]], start_daemon=start)


if __name__ == "__main__":
    sys.exit(main())
