"""A throwaway X11 desktop with a StatusNotifierItem tray: Xvfb, a private D-Bus, openbox,
xfce4-panel (its systray plugin is a StatusNotifierWatcher and host, and draws the items'
menus itself from ``com.canonical.dbusmenu``) and xfce4-notifyd (issue 28).

Unlike headless sway, X11 takes real clicks: ``xdotool`` clicks the icon the panel drew, the
entries of the menu it drew, and the buttons of xfce4-notifyd's cards.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path

from PySide6.QtGui import QImage

from . import procs
from .desktop import poll, session_bus, xvfb

NOTIFYD = "/usr/lib/x86_64-linux-gnu/xfce4/notifyd/xfce4-notifyd"
NEEDED = ("Xvfb", "dbus-daemon", "xfce4-panel", "openbox", "xdotool", "xwininfo", "import")
WIDTH, HEIGHT = 1280, 800
PANEL = 27  # the default panel's height at the top
#: xfce4-notifyd's buttons, right-aligned in the card's last row (Allow, Deny, Open): where
#: to press each, back from the card's bottom-right corner.
CARD_BUTTONS = {"allow": (241, 31)}


def missing() -> list[str]:
    absent = [name for name in NEEDED if shutil.which(name) is None]
    if not Path(NOTIFYD).exists():
        absent.append("xfce4-notifyd")
    return absent


class XfceDesktop:
    """Xvfb + D-Bus + openbox + (xfce4-panel) + xfce4-notifyd, torn down in reverse."""

    def __init__(self, panel: bool = True) -> None:
        self.dir = Path(tempfile.mkdtemp(prefix="vf", dir="/tmp"))
        self.children: list[subprocess.Popen[bytes]] = []
        self.panel: subprocess.Popen[bytes] | None = None
        server, number = xvfb(WIDTH, HEIGHT)
        self.children.append(server)
        bus, self.bus = session_bus()
        self.children.append(bus)
        self.env = dict(os.environ)
        for name in ("WAYLAND_DISPLAY", "SWAYSOCK", "SESSION_MANAGER"):
            self.env.pop(name, None)
        self.env.update(
            DISPLAY=f":{number}",
            DBUS_SESSION_BUS_ADDRESS=self.bus,
            QT_QPA_PLATFORM="xcb",
            XDG_RUNTIME_DIR=str(self.dir),
            XDG_CONFIG_HOME=str(self.dir / "config"),  # the panel's default layout
            XDG_CACHE_HOME=str(self.dir / "cache"),
        )
        try:
            self._spawn(["openbox"])
            self._spawn([NOTIFYD])
            poll("xfce4-notifyd on the bus", lambda: self.has_name("org.freedesktop.Notifications"))
            self.before = self.dir / "before.png"
            if panel:
                self.start_panel()
        except BaseException:
            self.close()
            raise

    def _spawn(self, argv: list[str]) -> subprocess.Popen[bytes]:
        log = (self.dir / f"{Path(argv[0]).name}.log").open("ab")
        child = subprocess.Popen(argv, env=self.env, stdout=log, stderr=log, start_new_session=True)
        log.close()
        self.children.append(child)
        return child

    def start_panel(self, baseline: bool = True) -> None:
        """xfce4-panel with its default layout; its systray plugin owns the watcher. With
        ``baseline``, the panel as drawn then is what ``new_in_bar`` compares with."""
        self.panel = self._spawn(["xfce4-panel"])
        poll(
            "xfce4-panel's StatusNotifierWatcher",
            lambda: self.has_name("org.kde.StatusNotifierWatcher"),
            timeout=30,
        )
        poll("the panel drawn", lambda: self._drawn_bar(), timeout=20)
        if baseline:
            self.screenshot(self.before)

    def stop_panel(self) -> None:
        """End xfce4-panel (its watcher goes with it), as a panel that crashed."""
        assert self.panel is not None, "no panel was started"
        self.panel.kill()
        self.panel.wait(10)
        poll(
            "the watcher gone with the panel",
            lambda: not self.has_name("org.kde.StatusNotifierWatcher"),
            timeout=20,
        )

    def _drawn_bar(self) -> bool:
        shot = self.screenshot(self.dir / "bar.png")
        image = QImage(str(shot))
        return len({image.pixel(x, PANEL // 2) for x in range(0, WIDTH, 4)}) > 4

    def run(self, *argv: str, check: bool = True) -> str:
        return subprocess.run(
            list(argv), env=self.env, capture_output=True, text=True, check=check, timeout=20
        ).stdout

    def has_name(self, name: str) -> bool:
        out = self.run(
            "dbus-send",
            "--session",
            "--print-reply",
            "--dest=org.freedesktop.DBus",
            "/org/freedesktop/DBus",
            "org.freedesktop.DBus.NameHasOwner",
            f"string:{name}",
            check=False,
        )
        return "boolean true" in out

    def screenshot(self, path: Path) -> Path:
        path.parent.mkdir(parents=True, exist_ok=True)
        self.run("import", "-window", "root", str(path))
        return path

    def click(self, x: int, y: int, button: int = 1) -> None:
        self.run("xdotool", "mousemove", str(x), str(y), "click", str(button))

    def window(self, title_part: str) -> tuple[int, int, int, int] | None:
        """(x, y, w, h) of the first mapped window whose title holds ``title_part``. (Named
        through the class: tests/ui/test_notify_replaced.py calls it on another rig's desktop,
        which has ``run`` alone.)"""
        found = XfceDesktop.windows(self, title_part)
        return found[0] if found else None

    def windows(self, title_part: str) -> list[tuple[int, int, int, int]]:
        """(x, y, w, h) of each mapped window whose title holds ``title_part``."""
        found = self.run(
            "xdotool", "search", "--onlyvisible", "--name", title_part, check=False
        ).split()
        return [g for w in found if (g := XfceDesktop.geometry(self, w)) is not None]

    def geometry(self, wid: str) -> tuple[int, int, int, int] | None:
        """(x, y, w, h) of the window ``wid`` on the screen."""
        info = self.run("xwininfo", "-id", wid, check=False)
        values: dict[str, int] = {}
        for line in info.splitlines():
            key, _, value = line.strip().partition(":")
            if value.strip().lstrip("-").isdigit():
                values[key] = int(value)
        try:
            return (
                values["Absolute upper-left X"],
                values["Absolute upper-left Y"],
                values["Width"],
                values["Height"],
            )
        except KeyError:
            return None

    def cards(self) -> list[tuple[int, int, int, int]]:
        """xfce4-notifyd's cards on screen, top to bottom."""
        return sorted(self.windows("xfce4-notifyd"), key=lambda card: (card[1], card[0]))

    def press(self, x: int, y: int) -> None:
        """A real press of the left button at (x, y), as GTK takes one: the pointer enters
        the button first, then the button goes down and up."""
        self.run("xdotool", "mousemove", str(x), str(y))
        time.sleep(0.5)  # GTK takes a press only on a button the pointer entered
        self.run("xdotool", "mousedown", "1")
        time.sleep(0.1)
        self.run("xdotool", "mouseup", "1")

    def press_on_card(self, card: tuple[int, int, int, int], button: str = "allow") -> None:
        """A real press on one of the buttons xfce4-notifyd draws in ``card``."""
        x, y, w, h = card
        dx, dy = CARD_BUTTONS[button]
        self.press(x + w - dx, y + h - dy)

    def close_cards(self) -> None:
        """Close what the notification server shows (a killed app left its cards up)."""
        for nid in range(1, 30):
            self.run(
                "dbus-send",
                "--session",
                "--dest=org.freedesktop.Notifications",
                "/org/freedesktop/Notifications",
                "org.freedesktop.Notifications.CloseNotification",
                f"uint32:{nid}",
                check=False,
            )
        poll("no card", lambda: self.window("xfce4-notifyd") is None, timeout=10)

    def new_in_bar(self, shot: Path) -> tuple[int, int, int, int] | None:
        """(x, y, w, h) of what ``shot`` shows in the panel that the panel alone never had:
        colours absent before the app, at least ten pixels each (the icon)."""
        a, b = QImage(str(self.before)), QImage(str(shot))
        old = {a.pixel(x, y) for x in range(WIDTH) for y in range(PANEL)}
        counts = Counter(
            b.pixel(x, y) for x in range(WIDTH) for y in range(PANEL) if b.pixel(x, y) not in old
        )
        keep = {c for c, n in counts.items() if n >= 10}
        points = [(x, y) for x in range(WIDTH) for y in range(PANEL) if b.pixel(x, y) in keep]
        if not points:
            return None
        xs, ys = [p[0] for p in points], [p[1] for p in points]
        return min(xs), min(ys), max(xs) - min(xs) + 1, max(ys) - min(ys) + 1

    def close(self) -> None:
        for child in reversed(self.children):
            if child.poll() is None:
                child.terminate()
                try:
                    child.wait(5)
                except subprocess.TimeoutExpired:
                    child.kill()
                    child.wait()
        shutil.rmtree(self.dir, ignore_errors=True)


def app_proc(desktop: XfceDesktop, home: Path, **extra: str) -> procs.Proc:
    env = dict(desktop.env)
    env.update({"VOLEE_HOME": str(home), "PYTHONUNBUFFERED": "1", "VOLEE_LOG": "INFO"})
    env.update(extra)
    return procs.Proc([sys.executable, str(procs.HERE / "app_for_test.py"), "embed"], env)
