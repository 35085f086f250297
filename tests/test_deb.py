"""The .deb, built as `scripts/dev package` builds it, installed with dpkg on this machine, removed.

What a person gets from it: `volee` on the PATH (the installed one, not this checkout's),
a daemon that runs a generic agent in the packaged native host (and, with VOLEE_HOST=python, in
the Python host on the packaged interpreter, ``-I -S``), the tray
app's icon in a real XEmbed tray (trayer under Xvfb), also when trayer starts ten seconds after
the app, a menu entry and hicolor icons, no login item; then ``dpkg -r`` leaves nothing behind.

It needs root (dpkg) and takes about a minute: marked ``deb`` and ``slow``; it runs once per
`scripts/dev test`. Runs on one machine are serialised by a lock file.
"""

from __future__ import annotations

import fcntl
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

import volee_desktop
from tests.ui import desktop as dt
from tests.ui import procs
from volee_desktop import datafiles
from volee_desktop.app.desktopentry import PNG_SIZES

pytestmark = [pytest.mark.deb, pytest.mark.slow, pytest.mark.timeout(900)]

ROOT = datafiles.CHECKOUT
ARTIFACTS = ROOT / "test-artifacts"
PACKAGE = "volee-desktop"
PREFIX = Path("/opt/volee")
LOCK = Path("/tmp/volee-deb-test.lock")
#: Written before ``dpkg -i``, removed once the package is purged: a run killed in between (a
#: ``timeout``, the end of a session: no teardown) left the package on the machine, and the next
#: run takes its own leftover away instead of skipping (CI once skipped the whole module so).
#: Beside dpkg's own records, which outlive /tmp as the package does.
MARK = Path("/var/lib/volee-deb-test.installed")
sys.path.insert(0, str(ROOT / "installers" / "debian"))
import build_deb  # noqa: E402


def _why_not() -> str | None:
    if sys.platform != "linux" or shutil.which("dpkg-deb") is None:
        return "needs Debian's dpkg"
    if os.geteuid() != 0:
        return "installs with dpkg -i: needs root (CI runs as root)"
    if not Path("/usr/bin/python3").exists():
        return "the package runs on the system Python, /usr/bin/python3"
    return None


def run(argv: list[str], env: dict[str, str] | None = None, timeout: float = 600) -> str:
    # From /: a `python -c` from the checkout would import the checkout's code.
    done = subprocess.run(
        argv, env=env, cwd="/", capture_output=True, text=True, timeout=timeout, check=False
    )
    assert done.returncode == 0, f"{argv} exited {done.returncode}:\n{done.stdout}{done.stderr}"
    return done.stdout


def known() -> bool:
    """dpkg still has a record of it (installed, or removed with its postrm kept)."""
    done = subprocess.run(
        ["dpkg-query", "-W", "-f=${Status}", PACKAGE], capture_output=True, text=True, check=False
    )
    return done.returncode == 0 and "not-installed" not in done.stdout


def installed() -> bool:
    done = subprocess.run(
        ["dpkg-query", "-W", "-f=${Status}", PACKAGE], capture_output=True, text=True, check=False
    )
    return "install ok installed" in done.stdout


@pytest.fixture(scope="module")
def built(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """The sdist, the wheel built from it, and the .deb built from the wheel."""
    why = _why_not()
    if why:
        pytest.skip(why)
    out = tmp_path_factory.mktemp("dist")
    run([sys.executable, "-m", "build", "--no-isolation", "--outdir", str(out), str(ROOT)])
    (sdist,) = out.glob("volee_desktop-*.tar.gz")
    (wheel,) = out.glob("volee_desktop-*.whl")
    deb = build_deb.build(wheel, out, "/usr/bin/python3", "zstd", [])
    return {"sdist": sdist, "wheel": wheel, "deb": deb}


@pytest.fixture(scope="module")
def deb(built: dict[str, Path]) -> Iterator[dict[str, object]]:
    """The package installed with dpkg -i for the module; removed (and checked) after."""
    LOCK.touch()
    with LOCK.open() as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if MARK.exists():
            _remove_the_package()  # what an earlier run, killed, left
        if installed() or known() or PREFIX.exists():
            pytest.skip(f"{PACKAGE} or {PREFIX} is already on this machine: not touching it")
        before = {p for p in Path("/usr/share/icons/hicolor").rglob("*")}
        MARK.write_text(f"{os.getpid()}\n")
        try:
            run(["dpkg", "-i", str(built["deb"])])
            files = run(["dpkg-query", "-L", PACKAGE]).splitlines()
            yield {"files": files, "before": before}
        finally:
            _remove_the_package()


def _remove_the_package() -> None:
    """End what runs from the package, purge it, and drop the mark once nothing is left."""
    _end_installed_processes()
    if known():
        run(["dpkg", "--purge", PACKAGE])
    if not known():
        shutil.rmtree(PREFIX, ignore_errors=True)  # a dpkg -i killed half-way
        MARK.unlink(missing_ok=True)


def _end_installed_processes() -> None:
    import psutil

    for proc in psutil.process_iter(["cmdline"]):
        cmdline = proc.info["cmdline"] or []
        # Under /opt/volee itself: not the staged venv of another run's build
        # (/tmp/volee-deb-…/root/opt/volee/bin/python, pip's interpreter while it installs).
        if any(part.startswith(f"{PREFIX}/") for part in cmdline[:2]):
            try:
                proc.kill()
            except psutil.Error:
                pass


def clean_env(home: Path, **extra: str) -> dict[str, str]:
    """What a desktop session gives a program: no venv, no checkout on any path."""
    env = {
        "PATH": "/usr/local/bin:/usr/bin:/bin",
        "HOME": str(home / "home"),
        "VOLEE_HOME": str(home),
        "LANG": "C.UTF-8",
    }
    (home / "home").mkdir(parents=True, exist_ok=True)
    env.update(extra)
    return env


def test_the_package_installs_volee_on_the_path_with_a_menu_entry_and_no_login_item(
    deb: dict[str, object], tmp_path: Path
) -> None:
    files = deb["files"]
    assert isinstance(files, list)
    assert shutil.which("volee", path="/usr/bin") == "/usr/bin/volee"
    out = run(["volee", "--version"], env=clean_env(tmp_path))
    assert out.strip() == f"volee {volee_desktop.__version__}"
    assert "/usr/share/applications/volee.desktop" in files
    entry = Path("/usr/share/applications/volee.desktop").read_text()
    assert "Exec=volee\n" in entry
    assert "Icon=volee\n" in entry
    if shutil.which("desktop-file-validate"):
        # Not even a hint (two main categories would list volee twice in some menus).
        assert run(["desktop-file-validate", "/usr/share/applications/volee.desktop"]) == ""
    assert "/usr/share/icons/hicolor/scalable/apps/volee.svg" in files
    for size in PNG_SIZES:
        png = Path(f"/usr/share/icons/hicolor/{size}x{size}/apps/volee.png")
        assert str(png) in files
        assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
        assert _png_size(png) == (size, size)
    # Never a login item (ADR 0024): nothing in the autostart folders or the service managers.
    login = re.compile(r"^/(etc/xdg/autostart|etc/systemd|usr/lib/systemd|lib/systemd)/")
    assert not [f for f in files if login.match(f)]
    assert not list(Path("/etc/xdg/autostart").glob("volee*"))
    # The installed code is the package's own, not this checkout's.
    probe = run(
        ["/opt/volee/bin/python", "-c", "import volee_desktop; print(volee_desktop.__file__)"],
        env=clean_env(tmp_path),
    )
    assert probe.startswith("/opt/volee/lib/python3"), probe


def _png_size(path: Path) -> tuple[int, int]:
    data = path.read_bytes()
    return int.from_bytes(data[16:20], "big"), int.from_bytes(data[20:24], "big")


def test_the_installed_daemon_runs_a_generic_agent_in_the_packaged_native_host(
    deb: dict[str, object],
) -> None:
    # The wheel carries the native host built (setup.py), without its source: the installed
    # daemon starts that binary; VOLEE_HOST=python still runs the Python host, on the packaged
    # interpreter with -I -S. Each with a daemon of its own (VOLEE_HOST is read by the daemon).
    files = deb["files"]
    assert isinstance(files, list)
    (binary,) = [f for f in files if f.endswith("/volee_desktop/hosts/native/volee-host")]
    assert binary.startswith(f"{PREFIX}/lib/python3"), binary
    assert not [f for f in files if f.endswith(("/volee_host.c", "/volee-host.sha256"))]
    # Short homes: a host's socket path (under VOLEE_HOME/run) must fit in 103 bytes, and
    # tmp_path under xdist (…/popen-gw1/test_the_installed_…) leaves no room for a subfolder.
    short = Path(tempfile.mkdtemp(prefix="vdeb", dir="/tmp"))
    try:
        native = _hosts_of_a_sleeper(clean_env(short / "n"))
        assert [binary] in [argv[:1] for argv in native], native
        python = _hosts_of_a_sleeper(clean_env(short / "p", VOLEE_HOST="python"))
        assert [f"{PREFIX}/bin/python", "-I", "-S"] in [argv[:3] for argv in python], python
    finally:
        shutil.rmtree(short, ignore_errors=True)


def _hosts_of_a_sleeper(env: dict[str, str]) -> list[list[str]]:
    """Spawn a generic agent with the installed `volee`; the command lines of the hosts of
    the daemon of ``env``'s VOLEE_HOME while it runs; then stop it and that daemon."""
    import psutil

    try:
        spawned = json.loads(
            run(
                [
                    *("volee", "spawn", "--harness", "generic", "--name", "sleeper", "--json"),
                    *("--", "sleep", "300"),
                ],
                env=env,
                timeout=60,
            )
        )
        assert spawned["state"] == "working"
        assert spawned["location"] == "host"
        listed = json.loads(run(["volee", "ls", "--json"], env=env))
        assert [a["name"] for a in listed] == ["sleeper"]
        status = run(["volee", "daemon", "status"], env=env)
        assert f"volee daemon {volee_desktop.__version__}: running" in status
        home = env["VOLEE_HOME"]
        hosts = []
        for proc in psutil.process_iter(["cmdline"]):
            cmdline = proc.info["cmdline"] or []
            # A host's --record and --socket are under its daemon's VOLEE_HOME.
            if "--record" in cmdline and any(part.startswith(home) for part in cmdline):
                hosts.append(cmdline)
        assert hosts, "no host of the sleeper runs"
        stopped = run(["volee", "stop", "sleeper"], env=env)
        assert "stopped" in stopped
        return hosts
    finally:
        subprocess.run(
            ["volee", "daemon", "stop"], env=env, cwd="/", capture_output=True, timeout=60
        )


def test_the_installed_hook_shim_reaches_the_installed_daemon(
    deb: dict[str, object], tmp_path: Path
) -> None:
    # A claude agent (the fake one: tests/fakes) whose hooks run the packaged interpreter's
    # shim with -I -S: the daemon counts them and links the session they name.
    env = clean_env(tmp_path, VOLEE_CLAUDE_BIN=str(ROOT / "tests" / "fakes" / "fake-claude"))
    try:
        run(["volee", "spawn", "--name", "hooked", "--", "hello"], env=env, timeout=60)

        def hooks() -> int:
            status = json.loads(run(["volee", "daemon", "status", "--json"], env=env))
            return int(status["hooks_accepted"])

        dt.poll("a hook from the agent", lambda: hooks() >= 1, timeout=30)
        (agent,) = json.loads(run(["volee", "ls", "--json"], env=env))
        assert agent["session_id"]
        run(["volee", "stop", "hooked"], env=env)
    finally:
        subprocess.run(
            ["volee", "daemon", "stop"], env=env, cwd="/", capture_output=True, timeout=60
        )


# Run by the installed interpreter: the real app, connected to the installed daemon, shows its
# list, an agent's window and the settings dialog offscreen, then prints the Qt libraries and
# plugins it has mapped (/proc/self/maps) and quits.
WINDOWS = """
import json, sys
from PySide6.QtCore import QTimer
from PySide6.QtWidgets import QApplication
from volee_desktop.app import controller as c, main

made = []
init = c.AppController.__init__


def record(self, *args, **kwargs):
    init(self, *args, **kwargs)
    made.append(self)
    timer.start(50)


def step():
    ctl = made[0]
    agents = list(ctl.live.registry.agents)
    if not agents:
        return
    timer.stop()
    ctl.show_list()
    ctl.actions.show_output(agents[0])
    settings = ctl.open_settings()
    QApplication.processEvents()
    shown = sorted(type(w).__name__ for w in QApplication.topLevelWidgets() if w.isVisible())
    maps = {line.split()[-1] for line in open("/proc/self/maps") if "/" in line}
    qt = sorted(m for m in maps if "/PySide6/" in m or "/shiboken6/" in m or "libQt6" in m)
    rss = [line.split()[1] for line in open("/proc/self/status") if line.startswith("VmRSS:")]
    report = {"shown": shown, "settings": type(settings).__name__, "qt": qt, "rss_kib": rss[0]}
    print(json.dumps(report))
    ctl.quit_requested.emit()


c.AppController.__init__ = record
timer = QTimer()
timer.timeout.connect(step)
sys.exit(main.run_app([], start_daemon=None))
"""


def _windows(python: str, env: dict[str, str]) -> dict[str, Any]:
    out = run([python, "-c", WINDOWS], env=env, timeout=120)
    seen: dict[str, Any] = json.loads(out.strip().splitlines()[-1])
    return seen


def test_the_installed_app_opens_its_windows_on_the_qt_the_package_ships(
    deb: dict[str, object], tmp_path: Path
) -> None:
    # What the slimmed Qt must still hold: a module, plugin or library left out of the package
    # stops the import, the platform or a window here, or is mapped from outside /opt/volee.
    files = deb["files"]
    assert isinstance(files, list)
    env = clean_env(tmp_path, QT_QPA_PLATFORM="offscreen")
    try:
        run(
            ["volee", "spawn", "--harness", "generic", "--name", "w", "--", "sleep", "300"], env=env
        )
        seen = _windows("/opt/volee/bin/python", env)
        assert {"AgentPanel", "AgentWindow", "SettingsDialog"} <= set(seen["shown"]), seen
        loaded = seen["qt"]
        outside = [m for m in loaded if not m.startswith(f"{PREFIX}/")]
        assert not outside, f"Qt mapped from outside the package: {outside}"
        assert not [m for m in loaded if m not in files], "mapped but not in the package"
        # The same windows on this checkout's whole PySide6: every library and plugin it maps
        # (a plugin is dlopen'ed quietly: without it an icon is blank, no error) the package has.
        full = _windows(sys.executable, env)
        names = {Path(m).name for m in loaded}
        assert {Path(m).name for m in full["qt"]} <= names, sorted(
            {Path(m).name for m in full["qt"]} - names
        )
        for needed in ("libQt6Svg.so.6", "libqsvgicon.so", "libqoffscreen.so", "QtDBus.abi3.so"):
            assert needed in names, (needed, sorted(names))
    finally:
        subprocess.run(
            ["volee", "daemon", "stop"], env=env, cwd="/", capture_output=True, timeout=60
        )


def test_the_package_installs_in_at_most_120_mib(
    built: dict[str, Path], deb: dict[str, object]
) -> None:
    # Issue 27: only the Qt volee loads, no test dependencies, symbols stripped, bytecode kept.
    declared = int(run(["dpkg-deb", "-f", str(built["deb"]), "Installed-Size"]).strip())
    assert declared == int(run(["dpkg-query", "-W", "-f=${Installed-Size}", PACKAGE]).strip())
    assert declared <= 120 * 1024, f"Installed-Size {declared} KiB > 120 MiB"
    site = next(PREFIX.glob("lib/python3*/site-packages"))
    assert list(site.glob("volee_desktop/**/__pycache__/*.pyc")), "bytecode not kept"
    for test_only in ("pytest", "mcp", "hypothesis"):
        assert not (site / test_only).exists(), test_only


def _app(desktop: dt.Desktop, home: Path) -> procs.Proc:
    env = clean_env(home, VOLEE_LOG="INFO")
    for name in ("DISPLAY", "DBUS_SESSION_BUS_ADDRESS", "QT_QPA_PLATFORM", "XDG_RUNTIME_DIR"):
        env[name] = desktop.env[name]
    return procs.Proc(["volee"], env, cwd=Path("/"))


def _quit(app: procs.Proc) -> None:
    """SIGTERM, as a session's logout sends it: the app quits on its own."""
    if app.popen.poll() is None:
        os.killpg(app.popen.pid, signal.SIGTERM)
        try:
            app.popen.wait(30)
        except subprocess.TimeoutExpired:
            pass
    app.kill()


def _icon_drawn(desktop: dt.Desktop, shot: Path) -> None:
    desktop.settled_tray_icon(timeout=30)
    from PySide6.QtGui import QImage

    def drawn() -> bool:
        # Embedded first, painted a moment later, and trayer may still be placing it (once it
        # was read at x = the screen's width): its geometry and pixels again at each look.
        icon = desktop.tray_icon()
        if icon is None:
            return False
        x, y, w, h = icon
        image = QImage(str(desktop.screenshot(shot)))
        inside = [
            (x + i, y + j)
            for i in range(w)
            for j in range(h)
            if 0 <= x + i < image.width() and 0 <= y + j < image.height()
        ]
        if w < 16 or h < 16 or len(inside) < w * h:
            return False
        return len({image.pixel(px, py) for px, py in inside}) > 8

    dt.poll("the tray icon drawn (not the panel's flat tint)", drawn, timeout=30)


def test_the_installed_tray_app_shows_its_icon_under_xvfb_with_trayer(
    deb: dict[str, object], tmp_path: Path
) -> None:
    if dt.missing():
        pytest.skip(f"needs {', '.join(dt.missing())}")
    desktop = dt.Desktop()
    try:
        app = _app(desktop, tmp_path)
        try:
            app.wait_line(r"connected to the volee daemon", timeout=60)
            _icon_drawn(desktop, ARTIFACTS / "deb-tray.png")
        finally:
            _quit(app)
    finally:
        desktop.close()


def test_the_installed_tray_app_moves_into_trayer_started_ten_seconds_after_it(
    deb: dict[str, object], tmp_path: Path
) -> None:
    if dt.missing():
        pytest.skip(f"needs {', '.join(dt.missing())}")
    desktop = dt.Desktop(tray=False)
    try:
        app = _app(desktop, tmp_path)
        try:
            app.wait_line(r"no system tray yet: watching for one", timeout=60)
            # The login race as it happens: the panel comes up well after the app.
            time.sleep(10)
            assert desktop.tray_icon() is None
            desktop.start_trayer()
            app.wait_line(r"moved into the system tray", timeout=30)
            _icon_drawn(desktop, ARTIFACTS / "deb-tray-late.png")
        finally:
            _quit(app)
    finally:
        desktop.close()


def test_removing_the_package_leaves_nothing(
    built: dict[str, Path], deb: dict[str, object]
) -> None:
    # Last in the module: remove it here (the fixture's removal then has nothing to do).
    files = deb["files"]
    before = deb["before"]
    assert isinstance(files, list)
    assert isinstance(before, set)
    # Run the installed Python once more so it writes what it writes at run time.
    run(["/opt/volee/bin/python", "-c", "import volee_desktop.cli.main"])
    _end_installed_processes()
    run(["dpkg", "-r", PACKAGE])
    assert not installed()
    assert not PREFIX.exists()
    assert not Path("/usr/bin/volee").exists()
    assert not Path("/usr/share/applications/volee.desktop").exists()
    left = [f for f in files if Path(f).exists() and not Path(f).is_dir()]
    assert not left, left
    after = {p for p in Path("/usr/share/icons/hicolor").rglob("*")}
    assert not [p for p in after - before if p.name != "icon-theme.cache"]
    assert not Path("/usr/share/doc/volee-desktop").exists()
    # dpkg keeps the postrm until a purge (state "rc"): purge leaves no record at all.
    run(["dpkg", "--purge", PACKAGE])
    assert not known()
