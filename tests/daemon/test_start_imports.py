"""What the daemon's import leaves for later (issue 27: the app's list answers sooner).

The daemon is imported by the app once its icon is painted, and the list answers only after
it: a module the daemon needs only for some later work loads with that work.
"""

from __future__ import annotations

import json
import subprocess
import sys

#: Loaded with their first use: psutil with discovery's first process scan, urllib (with
#: http.client and email) with the first call to GitHub's API, pyte with the first screen.
LATER = ("psutil", "urllib.request", "http.client", "email.parser", "pyte")


def test_importing_the_daemon_leaves_what_only_later_work_needs() -> None:
    code = (
        "import json, sys\n"
        "import volee_desktop.daemon.main\n"
        f"print(json.dumps([m for m in {LATER!r} if m in sys.modules]))\n"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=60, check=True
    )
    assert json.loads(out.stdout) == []
