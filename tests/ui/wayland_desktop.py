"""A throwaway Wayland desktop: headless sway, waybar (a StatusNotifierItem tray) and mako,
on a private D-Bus; screenshots with grim (issue 28).

sway refuses to run as root (it checks that it cannot get root back), so as root it runs as
``nobody`` (``setpriv``) in a runtime directory of that user's; every other part, volee
included, is a root client of its socket. waybar and mako are this test's children, not
sway's: they share the test's session bus. Headless sway has no pointer device, so no
client gets a click; a click on the tray is the call waybar makes on one (``Activate(x,
y)``, ``com.canonical.dbusmenu`` ``Event``), sent with ``gdbus``.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

from . import procs
from .desktop import poll, session_bus

NEEDED = ("sway", "swaymsg", "waybar", "mako", "makoctl", "grim", "gdbus", "dbus-daemon")
WIDTH, HEIGHT = 1280, 800
BAR = 28  # waybar's height (its config below)
WATCHER = "org.kde.StatusNotifierWatcher"
ITEM = "org.kde.StatusNotifierItem"
KEYS = "wtype"  # only for the keyboard (``key``, ``type``): a virtual keyboard
#: ms before wtype's keys: its keyboard is new to the seat each time, the client binds it first.
KEYBOARD_WAIT = 400

WAYBAR = {
    "layer": "top",
    "position": "top",
    "height": BAR,
    "modules-left": ["clock"],
    "modules-right": ["tray"],
    "tray": {"icon-size": 22, "spacing": 6},
}
MAKO = "font=DejaVu Sans 10\nwidth=380\nheight=140\ndefault-timeout=0\nanchor=top-right\n"


def missing() -> list[str]:
    return [name for name in NEEDED if shutil.which(name) is None]


class WaylandDesktop:
    """sway + (waybar) + (mako) + a session bus, torn down in reverse order."""

    def __init__(self, bar: bool = True, notifications: bool = True) -> None:
        self.dir = Path(tempfile.mkdtemp(prefix="vw", dir="/tmp"))
        self.dir.chmod(0o755)
        self.runtime = self.dir / "run"
        self.runtime.mkdir(mode=0o700)
        self.children: list[subprocess.Popen[bytes]] = []
        self.bars: list[subprocess.Popen[bytes]] = []
        bus, self.bus = session_bus()
        self.children.append(bus)
        try:
            self._start_sway()
            if bar:
                self.start_bar()
            if notifications:
                self.start_mako()
        except BaseException:
            self.close()
            raise

    def _start_sway(self) -> None:
        conf = self.dir / "sway.conf"
        conf.write_text(f"output HEADLESS-1 resolution {WIDTH}x{HEIGHT}\n")
        conf.chmod(0o644)
        env = {
            k: v
            for k, v in os.environ.items()
            if k not in ("DISPLAY", "WAYLAND_DISPLAY", "DBUS_SESSION_BUS_ADDRESS")
        }
        env.update(
            XDG_RUNTIME_DIR=str(self.runtime),
            WLR_BACKENDS="headless",
            WLR_RENDERER="pixman",
            WLR_LIBINPUT_NO_DEVICES="1",
            HOME=str(self.dir),
        )
        argv = ["sway", "-c", str(conf)]
        if os.geteuid() == 0:
            os.chown(self.runtime, 65534, 65534)  # nobody
            argv = ["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups", *argv]
        log = (self.dir / "sway.log").open("ab")
        self.children.append(
            subprocess.Popen(argv, env=env, stdout=log, stderr=log, start_new_session=True)
        )
        log.close()

        def socket() -> str | None:
            names = [p.name for p in self.runtime.iterdir()] if self.runtime.exists() else []
            wayland = [n for n in names if re.fullmatch(r"wayland-\d+", n)]
            ipc = [n for n in names if n.startswith("sway-ipc")]
            return wayland[0] if wayland and ipc else None

        found = poll("sway's socket", socket, timeout=20)
        assert isinstance(found, str)
        ipc = next(p for p in self.runtime.iterdir() if p.name.startswith("sway-ipc"))
        self.env = dict(os.environ)
        self.env.pop("DISPLAY", None)
        self.env.update(
            WAYLAND_DISPLAY=found,
            XDG_RUNTIME_DIR=str(self.runtime),
            SWAYSOCK=str(ipc),
            DBUS_SESSION_BUS_ADDRESS=self.bus,
            QT_QPA_PLATFORM="wayland",
            XDG_SESSION_TYPE="wayland",
            XDG_CONFIG_HOME=str(self.dir / "config"),
        )

    def _spawn(self, argv: list[str], name: str = "") -> subprocess.Popen[bytes]:
        log = (self.dir / f"{name or Path(argv[0]).name}.log").open("ab")
        child = subprocess.Popen(argv, env=self.env, stdout=log, stderr=log, start_new_session=True)
        log.close()
        self.children.append(child)
        return child

    def start_bar(self) -> None:
        """waybar with its tray: it owns the StatusNotifierWatcher and registers a host."""
        conf = self.dir / "waybar.json"
        conf.write_text(json.dumps(WAYBAR))
        before = self.owner(WATCHER)
        # One log per bar: which bar lost the item is in its own log.
        self.bars.append(self._spawn(["waybar", "-c", str(conf)], f"waybar-{len(self.bars)}"))
        poll(
            "waybar's StatusNotifierWatcher",
            lambda: self.owner(WATCHER) not in ("", before),
            timeout=20,
        )

    def stop_bar(self) -> None:
        """Kill the last waybar started (a panel that crashed or was restarted)."""
        bar = self.bars.pop()
        bar.kill()
        bar.wait()
        poll("the watcher gone", lambda: not self.has_name(WATCHER), timeout=20)

    def owner(self, name: str) -> str:
        """The unique name owning ``name``, or ""."""
        out = self.run(
            "gdbus",
            "call",
            "--session",
            "-d",
            "org.freedesktop.DBus",
            "-o",
            "/org/freedesktop/DBus",
            "-m",
            "org.freedesktop.DBus.GetNameOwner",
            name,
            check=False,
        )
        found = re.search(r"'(:[^']+)'", out)
        return found.group(1) if found else ""

    def start_mako(self) -> None:
        conf = self.dir / "mako.conf"
        conf.write_text(MAKO)
        self._spawn(["mako", "-c", str(conf)])
        poll("mako on the bus", lambda: self.has_name("org.freedesktop.Notifications"))

    def run(self, *argv: str, check: bool = True) -> str:
        return subprocess.run(
            list(argv), env=self.env, capture_output=True, text=True, check=check, timeout=20
        ).stdout

    def has_name(self, name: str) -> bool:
        out = self.run(
            "gdbus",
            "call",
            "--session",
            "-d",
            "org.freedesktop.DBus",
            "-o",
            "/org/freedesktop/DBus",
            "-m",
            "org.freedesktop.DBus.NameHasOwner",
            name,
            check=False,
        )
        return "true" in out

    # --- the tray, as waybar sees it ------------------------------------------------------

    def items(self) -> list[str]:
        """The items registered with the watcher (``:1.13/StatusNotifierItem``)."""
        out = self.call(
            WATCHER,
            "/StatusNotifierWatcher",
            "org.freedesktop.DBus.Properties.Get",
            WATCHER,
            "RegisteredStatusNotifierItems",
        )
        return re.findall(r"'([^']+)'", out)

    def item(self) -> tuple[str, str]:
        """(service, path) of the one item registered."""
        found = poll("an item registered with the watcher", self.items, timeout=20)
        assert isinstance(found, list)
        service, _, path = found[0].partition("/")
        return service, "/" + path

    def call(self, dest: str, path: str, method: str, *args: str) -> str:
        return self.run("gdbus", "call", "--session", "-d", dest, "-o", path, "-m", method, *args)

    def prop(self, name: str) -> str:
        service, path = self.item()
        return self.call(service, path, "org.freedesktop.DBus.Properties.Get", ITEM, name)

    def activate(self, x: int, y: int) -> None:
        """What waybar sends on a left click on the icon."""
        service, path = self.item()
        self.call(service, path, f"{ITEM}.Activate", str(x), str(y))

    def menu_layout(self) -> Any:
        """The exported menu (``com.canonical.dbusmenu`` ``GetLayout``), as nested dicts."""
        service, _ = self.item()
        menu = re.search(r"'(/[^']*)'", self.prop("Menu"))
        assert menu is not None
        return _layout(self.bus, service, menu.group(1))

    def menu_click(self, item_id: int) -> None:
        """What waybar sends when an entry of the icon's menu is chosen."""
        service, _ = self.item()
        menu = re.search(r"'(/[^']*)'", self.prop("Menu"))
        assert menu is not None
        self.call(
            service,
            menu.group(1),
            "com.canonical.dbusmenu.Event",
            str(item_id),
            "clicked",
            "<0>",
            "0",
        )

    # --- the keyboard ---------------------------------------------------------------------

    def plug_keyboard(self) -> None:
        """A keyboard that stays, as a person's does: each ``wtype`` brings its own and takes
        it away when it ends, and with the seat's last keyboard gone Qt saw the focus leave
        volee (the list hid itself between two keys)."""
        self._spawn(["wtype", "-s", str(24 * 3600 * 1000)], "keyboard")

    def key(self, name: str) -> None:
        """A key (xdotool's names: ``Down``, ``ctrl+y``) pressed in the focused window, from
        a virtual keyboard (``wtype``: headless sway has no keyboard device of its own)."""
        *mods, key = name.split("+")
        argv = ["wtype", "-s", str(KEYBOARD_WAIT)]
        for mod in mods:
            argv += ["-M", mod]
        argv += ["-k", key]
        for mod in reversed(mods):
            argv += ["-m", mod]
        self.run(*argv)

    def type(self, text: str) -> None:
        """``text`` typed in the focused window (``wtype``)."""
        self.run("wtype", "-s", str(KEYBOARD_WAIT), text)

    # --- what is on screen ----------------------------------------------------------------

    def windows(self) -> list[dict[str, Any]]:
        """sway's windows: name, app_id, rect, focused."""
        tree = json.loads(self.run("swaymsg", "-t", "get_tree"))
        found: list[dict[str, Any]] = []

        def walk(node: dict[str, Any]) -> None:
            if node.get("type") in ("con", "floating_con") and node.get("name"):
                found.append(node)
            for child in node.get("nodes", []) + node.get("floating_nodes", []):
                walk(child)

        walk(tree)
        return found

    def window(self, title_part: str) -> dict[str, Any] | None:
        return next((w for w in self.windows() if title_part in w["name"]), None)

    def screenshot(self, path: Path) -> Path:
        path.parent.mkdir(parents=True, exist_ok=True)
        self.run("grim", str(path))
        return path

    def cards(self) -> list[dict[str, Any]]:
        """mako's notifications on screen (``makoctl list``): id, summary, body, actions."""
        data = json.loads(self.run("makoctl", "list"))["data"][0]
        return [{k: v["data"] for k, v in card.items()} for card in data]

    def bar_log(self) -> str:
        """The end of each waybar's log (``waybar-<n>.log``), for a failure's message."""
        logs = sorted(self.dir.glob("waybar-*.log"))
        return (
            "; ".join(f"{path.stem}: {path.read_text(errors='replace')[-1500:]}" for path in logs)
            or "(no waybar log)"
        )

    def item_props(self) -> str:
        """What volee's item answers to GetAll now (or the error), for a failure's message."""
        try:
            service, path = self.item()
            return self.call(service, path, "org.freedesktop.DBus.Properties.GetAll", ITEM)[:600]
        except (AssertionError, subprocess.SubprocessError) as exc:
            return f"(no answer: {exc})"

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


LAYOUT = """
import asyncio, json, sys
from dbus_fast.aio import MessageBus
from dbus_fast import Message

def plain(node):
    ident, props, children = node
    out = {k: v.value for k, v in props.items() if k in ("label", "enabled", "visible")}
    out["id"] = ident
    out["children"] = [plain(c.value) for c in children]
    return out

async def main():
    bus = await MessageBus(bus_address=sys.argv[1]).connect()
    reply = await bus.call(Message(destination=sys.argv[2], path=sys.argv[3],
        interface="com.canonical.dbusmenu", member="GetLayout", signature="iias",
        body=[0, -1, []]))
    print(json.dumps(plain(reply.body[1])))

asyncio.run(main())
"""


def _layout(address: str, service: str, path: str) -> Any:
    out = subprocess.run(
        [sys.executable, "-c", LAYOUT, address, service, path],
        capture_output=True,
        text=True,
        check=True,
        timeout=20,
    ).stdout
    return json.loads(out)


def entries(layout: dict[str, Any]) -> list[dict[str, Any]]:
    """Every visible entry of a menu layout, depth first."""
    found: list[dict[str, Any]] = []
    for child in layout["children"]:
        if child.get("visible", True):
            found.append(child)
            found.extend(entries(child))
    return found


def app_proc(desktop: WaylandDesktop, home: Path, **extra: str) -> procs.Proc:
    env = dict(desktop.env)
    env.update({"VOLEE_HOME": str(home), "PYTHONUNBUFFERED": "1", "VOLEE_LOG": "INFO"})
    env.update(extra)
    return procs.Proc([sys.executable, str(procs.HERE / "app_for_test.py"), "embed"], env)
