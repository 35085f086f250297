"""A throwaway desktop for real-X tests: Xvfb on a free display, a private D-Bus, trayer, dunst.

Each part is started as a child and waited for by polling a condition with a
deadline (the X socket, the tray panel, the notification service's name).
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

from . import procs

NEEDED = (
    "Xvfb",
    "dbus-daemon",
    "dbus-monitor",
    "trayer",
    "dunst",
    "dunstctl",
    "xdotool",
    "xwininfo",
    "import",
)

DUNSTRC = """\
[global]
    monitor = 0
    follow = none
    width = 360
    height = 120
    origin = top-right
    offset = 10x40
    font = DejaVu Sans 10
    frame_width = 1
    frame_color = "#868e96"
    format = "<b>%s</b>\\n%b"
    show_indicators = no
    icon_position = left
    min_icon_size = 32
    max_icon_size = 32
[urgency_normal]
    background = "#ffffff"
    foreground = "#212529"
    timeout = 0
"""


def xvfb(width: int, height: int) -> tuple[subprocess.Popen[bytes], str]:
    """Xvfb on a display it picks itself (``-displayfd``): its process and the number it
    reported ("" if it reported none)."""
    read, write = os.pipe()
    server = subprocess.Popen(
        [
            "Xvfb",
            "-displayfd",
            str(write),
            "-screen",
            "0",
            f"{width}x{height}x24",
            "-nolisten",
            "tcp",
        ],
        pass_fds=(write,),
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        start_new_session=True,
    )
    os.close(write)
    with os.fdopen(read) as fh:
        return server, fh.readline().strip()


def session_bus() -> tuple[subprocess.Popen[bytes], str]:
    """A private D-Bus session bus in a session of its own: its process and its address."""
    bus = subprocess.Popen(
        ["dbus-daemon", "--session", "--nofork", "--print-address=1"],
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        start_new_session=True,
    )
    assert bus.stdout is not None
    address = bus.stdout.readline().decode().strip()
    bus.stdout.close()
    return bus, address


def missing() -> list[str]:
    return [name for name in NEEDED if shutil.which(name) is None]


def poll(what: str, check: Callable[[], object], timeout: float = 10.0) -> object:
    deadline = time.monotonic() + timeout
    while True:
        value = check()
        if value:
            return value
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting for {what}")
        time.sleep(0.05)  # polling an outside process: there is nothing to wait on


class Desktop:
    """Xvfb + D-Bus session + trayer + dunst, torn down in reverse order.

    ``tray=False`` leaves trayer out until ``start_trayer()`` (a panel that comes up late).
    """

    def __init__(self, width: int = 1280, height: int = 800, tray: bool = True) -> None:
        self.dir = Path(tempfile.mkdtemp(prefix="vx", dir="/tmp"))
        self.width, self.height = width, height
        self.children: list[subprocess.Popen[bytes]] = []
        self.procs: list[procs.Proc] = []
        self.trayer: subprocess.Popen[bytes] | None = None
        server, number = xvfb(width, height)
        self.children.append(server)
        if not number:
            self.close()
            raise RuntimeError("Xvfb did not report a display number")
        self.display = f":{number}"
        bus, self.bus = session_bus()
        self.children.append(bus)
        self.env = dict(os.environ)
        self.env.update(
            DISPLAY=self.display,
            DBUS_SESSION_BUS_ADDRESS=self.bus,
            QT_QPA_PLATFORM="xcb",
            XDG_RUNTIME_DIR=str(self.dir),
        )
        self.env.pop("WAYLAND_DISPLAY", None)
        if tray:
            self.start_trayer()
        # dunst's context menu (`dunstctl context`) runs dmenu: this one picks the line
        # holding the text in `choice` (what a person would click in the menu).
        self.choice = self.dir / "choice"
        dmenu = self.dir / "fake-dmenu"
        dmenu.write_text(
            "#!/bin/sh\n"
            "menu=$(cat)\n"
            f"printf '%s\\n' \"$menu\" >> {self.dir}/dmenu-input\n"
            f'printf \'%s\\n\' "$menu" | grep -m1 -F -- "$(cat {self.choice})"\n'
            f"touch {self.dir}/dmenu-done\n"
        )
        dmenu.chmod(0o755)
        rc = self.dir / "dunstrc"
        rc.write_text(DUNSTRC.replace("[global]\n", f"[global]\n    dmenu = {dmenu}\n", 1))
        self.spawn(["dunst", "-config", str(rc)])
        poll("dunst on the bus", self.dunst_up)
        self.monitor = procs.Proc(
            ["dbus-monitor", "interface='org.freedesktop.Notifications'"], self.env
        )
        self.procs.append(self.monitor)
        self.monitor.wait_line(r"NameAcquired|member=", timeout=10)

    def spawn(self, argv: list[str]) -> subprocess.Popen[bytes]:
        log = (self.dir / f"{Path(argv[0]).name}.log").open("ab")
        child = subprocess.Popen(
            argv,
            env=self.env,
            stdout=log,
            stderr=log,
            start_new_session=True,
        )
        log.close()
        self.children.append(child)
        return child

    def start_trayer(self) -> None:
        argv = [
            "trayer",
            "--edge",
            "top",
            "--align",
            "right",
            "--widthtype",
            "request",
            "--height",
            "28",
            "--transparent",
            "false",
            "--tint",
            "0x3b4148",
            "--SetDockType",
            "true",
        ]
        for attempt in range(2):
            trayer = self.spawn(argv)
            try:
                poll("the trayer panel", lambda: self.panel() is not None, timeout=15)
                self.trayer = trayer
                return
            except AssertionError:
                state = f"exited {trayer.returncode}" if trayer.poll() is not None else "running"
                log = (self.dir / "trayer.log").read_text(errors="replace")[-2000:]
                if attempt == 1:
                    raise AssertionError(
                        f"trayer showed no panel on {self.display} ({state}): {log}"
                    ) from None
                trayer.kill()

    def stop_trayer(self) -> None:
        """End trayer (the tray selection's owner), as a panel that crashed."""
        assert self.trayer is not None, "no trayer was started"
        self.trayer.kill()
        self.trayer.wait(10)
        self.trayer = None
        poll("the trayer panel gone", lambda: self.panel() is None, timeout=15)

    def dunst_up(self) -> bool:
        done = subprocess.run(
            ["dunstctl", "is-paused"], env=self.env, capture_output=True, text=True, check=False
        )
        return done.returncode == 0

    def run(self, *argv: str, check: bool = True) -> str:
        return subprocess.run(
            list(argv), env=self.env, capture_output=True, text=True, check=check, timeout=20
        ).stdout

    # --- what is on screen ----------------------------------------------------------------

    def tree(self) -> str:
        return self.run("xwininfo", "-root", "-tree")

    def panel(self) -> tuple[int, int, int, int] | None:
        """The trayer panel's (x, y, width, height)."""
        for line in self.tree().splitlines():
            if '"panel": ("panel" "trayer")' in line:
                return _geometry(line)
        return None

    def tray_icon(self, name: str = "volee") -> tuple[int, int, int, int] | None:
        """(x, y, w, h) of the window called ``name`` embedded in the trayer panel."""
        inside = False
        depth = 0
        for line in self.tree().splitlines():
            if '"panel": ("panel" "trayer")' in line:
                inside, depth = True, len(line) - len(line.lstrip())
                continue
            if inside:
                indent = len(line) - len(line.lstrip())
                if line.strip() and indent <= depth:
                    inside = False
                    continue
                if f'"{name}": ("{name}"' in line:
                    return _geometry(line, absolute=True)
        return None

    def settled_tray_icon(
        self, name: str = "volee", timeout: float = 30.0
    ) -> tuple[int, int, int, int]:
        """The icon's (x, y, w, h) once trayer has placed it: on screen, and the same twice in
        a row (right after embedding, trayer may still move it; once it was read at x = the
        screen's width, and a click there missed it)."""
        last: list[tuple[int, int, int, int] | None] = [None]

        def settled() -> tuple[int, int, int, int] | None:
            icon = self.tray_icon(name)
            before, last[0] = last[0], icon
            if icon is None or icon != before:
                time.sleep(0.3)
                return None
            x, y, w, h = icon
            on_screen = x >= 0 and y >= 0 and x + w <= self.width and y + h <= self.height
            return icon if on_screen and w > 0 and h > 0 else None

        found = poll(f"the {name} icon settled in the tray", settled, timeout)
        assert isinstance(found, tuple)
        return found

    def visible(self, title_part: str) -> bool:
        """Whether a mapped window's title contains ``title_part``."""
        done = subprocess.run(
            ["xdotool", "search", "--onlyvisible", "--name", title_part],
            env=self.env,
            capture_output=True,
            text=True,
            check=False,
        )
        return bool(done.stdout.strip())

    def screenshot(self, path: Path) -> Path:
        path.parent.mkdir(parents=True, exist_ok=True)
        self.run("import", "-window", "root", str(path))
        return path

    def click(self, x: int, y: int, button: int = 1) -> None:
        self.run("xdotool", "mousemove", str(x), str(y), "click", str(button))

    def choose(self, label: str) -> None:
        """Choose the first action holding ``label`` in dunst's context menu (which lists
        every card's actions); returns once the menu was answered."""
        done = self.dir / "dmenu-done"
        done.unlink(missing_ok=True)
        self.choice.write_text(label)
        self.run("dunstctl", "context")
        poll("dunst's context menu", done.exists)

    def menu_offered(self) -> str:
        """What dunst's context menus offered so far (the lines given to dmenu)."""
        path = self.dir / "dmenu-input"
        return path.read_text() if path.exists() else ""

    def notifies(self) -> list[list[str]]:
        """The string arguments of every Notify call seen on the bus so far."""
        self.monitor.output()
        calls: list[list[str]] = []
        current: list[str] | None = None
        for line in self.monitor.lines:
            if "member=Notify" in line:
                current = []
                calls.append(current)
            elif line.startswith(("method call", "signal", "method return", "error")):
                current = None
            elif current is not None and line.strip().startswith("string "):
                current.append(line.strip()[len("string ") :].strip('"'))
        return calls

    def close(self) -> None:
        for proc in reversed(self.procs):
            proc.kill()
        for child in reversed(self.children):
            if child.poll() is None:
                child.terminate()
                try:
                    child.wait(5)
                except subprocess.TimeoutExpired:
                    child.kill()
                    child.wait()
        shutil.rmtree(self.dir, ignore_errors=True)


def _geometry(line: str, absolute: bool = False) -> tuple[int, int, int, int]:
    """(x, y, w, h) from an xwininfo -tree line: ``22x26+1+1  +1257+1``."""
    parts = line.split(")")[-1].split()
    size, rel = parts[0].split("+", 1)
    w, h = (int(v) for v in size.split("x"))
    pos = parts[1] if absolute and len(parts) > 1 else "+" + rel
    x, y = (int(v) for v in pos.lstrip("+").replace("-", "+-").split("+") if v)
    return x, y, w, h


def app_proc(desktop: Desktop, home: Path, **extra: str) -> procs.Proc:
    env = dict(desktop.env)
    env.update({"VOLEE_HOME": str(home), "PYTHONUNBUFFERED": "1", "VOLEE_LOG": "INFO"})
    env.update(extra)
    return procs.Proc([sys.executable, str(procs.HERE / "app_for_test.py"), "embed"], env)
