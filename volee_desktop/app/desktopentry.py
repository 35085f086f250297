"""The menu entry and the icon in the XDG folders: for the .deb (``/usr/share``) and for one user.

A wheel installed with pipx or uv has no way to put files in the XDG folders, so
``volee desktop-entry install`` does it for the person who asks (``$XDG_DATA_HOME``, by
default ``~/.local/share``) and ``volee desktop-entry uninstall`` removes exactly those files.
The .deb builder (``installers/debian/build_deb.py``) lays out the same files under
``/usr/share``. The icon goes in as the SVG (``hicolor/scalable``) and as PNGs rendered from it
with Qt, for the panels and menus that read no SVG.

Neither ever writes a login item (ADR 0024): the autostart entry is ``volee daemon install``'s.
"""

from __future__ import annotations

import os
import shutil
import subprocess
from dataclasses import dataclass
from pathlib import Path

from volee_desktop import datafiles
from volee_desktop.app.errors import Error

ICON_NAME = "volee"
DESKTOP_FILE = "volee.desktop"
# The sizes the hicolor theme's index lists for apps that panels and menus ask for.
PNG_SIZES = (16, 22, 24, 32, 48, 64, 128, 256)


class DesktopEntryError(Error):
    """The entry or the icon cannot be written or rendered (the message says what to do)."""


@dataclass(frozen=True)
class Layout:
    """Where the entry and the icons go under one XDG data folder (``share``)."""

    share: Path

    @property
    def entry(self) -> Path:
        return self.share / "applications" / DESKTOP_FILE

    @property
    def svg(self) -> Path:
        return self.share / "icons" / "hicolor" / "scalable" / "apps" / f"{ICON_NAME}.svg"

    def png(self, size: int) -> Path:
        return self.share / "icons" / "hicolor" / f"{size}x{size}" / "apps" / f"{ICON_NAME}.png"

    def files(self) -> list[Path]:
        """Every file this layout writes (and the only ones uninstall removes)."""
        return [self.entry, self.svg, *(self.png(size) for size in PNG_SIZES)]


def user_share(environ: dict[str, str] | None = None) -> Path:
    """``$XDG_DATA_HOME``, or ``~/.local/share`` (the XDG Base Directory default)."""
    env = os.environ if environ is None else environ
    data_home = env.get("XDG_DATA_HOME")
    if data_home and Path(data_home).is_absolute():
        return Path(data_home)
    return Path(env.get("HOME") or Path.home()) / ".local" / "share"


def source_entry() -> Path:
    found = datafiles.find("resources", DESKTOP_FILE)
    if found is None:
        raise DesktopEntryError(f"this installation of volee lacks resources/{DESKTOP_FILE}")
    return found


def source_svg() -> Path:
    found = datafiles.find("resources", f"{ICON_NAME}.svg")
    if found is None:
        raise DesktopEntryError(f"this installation of volee lacks resources/{ICON_NAME}.svg")
    return found


def entry_text(executable: str | None) -> str:
    """``resources/volee.desktop``, with ``Exec``/``TryExec`` set to ``executable`` if given.

    The .deb keeps ``Exec=volee`` (``/usr/bin`` is on every session's PATH); a user install
    writes the absolute path of its ``volee``, since ``~/.local/bin`` often is not on the PATH
    a desktop session starts programs with.
    """
    lines = source_entry().read_text(encoding="utf-8").splitlines()
    if executable is not None:
        quoted = _quote_exec(executable)
        lines = [
            f"Exec={quoted}"
            if line.startswith("Exec=")
            else f"TryExec={executable}"
            if line.startswith("TryExec=")
            else line
            for line in lines
        ]
    return "\n".join(lines) + "\n"


def _quote_exec(path: str) -> str:
    # Desktop Entry Specification: quote arguments holding reserved characters.
    if any(ch in path for ch in " \t\n\"'\\><~|&;$*?#()`"):
        escaped = path.replace("\\", "\\\\").replace('"', '\\"').replace("`", "\\`")
        escaped = escaped.replace("$", "\\$")
        return f'"{escaped}"'
    return path


def render_pngs(svg: Path, sizes: tuple[int, ...] = PNG_SIZES) -> dict[int, bytes]:
    """The SVG rendered as square PNGs (Qt, offscreen when there is no application yet)."""
    os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")
    from PySide6.QtCore import QBuffer, QByteArray, QIODevice, Qt
    from PySide6.QtGui import QImage, QPainter
    from PySide6.QtSvg import QSvgRenderer
    from PySide6.QtWidgets import QApplication

    _app = QApplication.instance() or QApplication(["volee"])
    renderer = QSvgRenderer(str(svg))
    if not renderer.isValid():
        raise DesktopEntryError(f"cannot read the icon {svg}")
    out: dict[int, bytes] = {}
    for size in sizes:
        image = QImage(size, size, QImage.Format.Format_ARGB32)
        image.fill(Qt.GlobalColor.transparent)
        painter = QPainter(image)
        painter.setRenderHint(QPainter.RenderHint.Antialiasing)
        renderer.render(painter)
        painter.end()
        data = QByteArray()
        buffer = QBuffer(data)
        buffer.open(QIODevice.OpenModeFlag.WriteOnly)
        saved = image.save(buffer, "PNG")  # type: ignore[call-overload]  # stubs: bytes; runtime: str
        if not saved:
            raise DesktopEntryError(f"cannot encode the {size} px icon as PNG")
        buffer.close()
        out[size] = bytes(data.data())
    del _app
    return out


def write(layout: Layout, executable: str | None) -> list[Path]:
    """Write the entry and every icon under ``layout``; the files written."""
    pngs = render_pngs(source_svg())
    contents: dict[Path, bytes] = {
        layout.entry: entry_text(executable).encode(),
        layout.svg: source_svg().read_bytes(),
    }
    for size, data in pngs.items():
        contents[layout.png(size)] = data
    for path, data in contents.items():
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = path.with_name(f".{path.name}.tmp")
        tmp.write_bytes(data)
        tmp.chmod(0o644)
        tmp.replace(path)
    return list(contents)


def remove(layout: Layout) -> list[Path]:
    """Remove the files ``write`` puts there (and the folders left empty); the files removed."""
    removed: list[Path] = []
    for path in layout.files():
        if path.is_file() or path.is_symlink():
            path.unlink()
            removed.append(path)
            _prune_empty(path.parent, layout.share)
    return removed


def _prune_empty(folder: Path, stop: Path) -> None:
    # Only the per-size folders we may have made; never the share folder or hicolor itself.
    keep = {stop, stop / "applications", stop / "icons", stop / "icons" / "hicolor"}
    while folder not in keep and folder.is_relative_to(stop):
        try:
            folder.rmdir()
        except OSError:
            return
        folder = folder.parent


def refresh_caches(layout: Layout) -> list[str]:
    """Tell the desktop the menu and the icons changed (best effort); the tools that ran."""
    ran: list[str] = []
    # No update-desktop-database: it caches MIME types, and the entry declares none (menus
    # watch the applications folder themselves).
    for argv in (["gtk-update-icon-cache", "-q", "-t", "-f", str(layout.svg.parents[2])],):
        if shutil.which(argv[0]) is None or not Path(argv[-1]).is_dir():
            continue
        if argv[0] == "gtk-update-icon-cache" and not (Path(argv[-1]) / "index.theme").exists():
            # A user's hicolor folder has no index.theme: the cache tool refuses it, and
            # desktops notice the folder's new mtime on their own.
            continue
        done = subprocess.run(argv, capture_output=True, timeout=30, check=False)
        if done.returncode == 0:
            ran.append(argv[0])
    return ran
