"""The host stays lean: what it imports decides most of its memory (target <= 6 MiB USS)."""

from __future__ import annotations

import json
import subprocess
import sys

from volee_desktop.hosts.launcher import _BOOT, PACKAGE_ROOT

HEAVY = {
    "asyncio",
    "psutil",
    "dataclasses",
    "typing",
    "argparse",
    "subprocess",
    "threading",
    "logging",
    "pathlib",
    "platformdirs",
    "volee_desktop.core",
    "volee_desktop.store",
    "volee_desktop.daemon",
    "volee_desktop.paths",
}


def test_the_host_imports_nothing_heavy() -> None:
    # The launcher's own interpreter flags and boot line, stopping short of running a host.
    boot = _BOOT.replace("cli()", "import json; print(json.dumps(sorted(sys.modules)))")
    done = subprocess.run(
        [sys.executable, "-I", "-S", "-c", boot, str(PACKAGE_ROOT)],
        capture_output=True,
        text=True,
        timeout=30,
        check=True,
    )
    loaded = set(json.loads(done.stdout))

    assert "volee_desktop.hosts.host" in loaded
    assert "volee_desktop.hosts.main" in loaded
    assert not loaded & HEAVY
    assert not {m for m in loaded if m.startswith("volee_desktop.")} - {
        "volee_desktop.hosts",
        "volee_desktop.hosts.errors",  # the root of FrameError: class statements only
        "volee_desktop.hosts.host",
        "volee_desktop.hosts.main",
        "volee_desktop.hosts.recordio",
        "volee_desktop.hosts.requests",
        "volee_desktop.hosts.ring",
        "volee_desktop.hosts.spawn",
        "volee_desktop.hosts.wire",
    }
