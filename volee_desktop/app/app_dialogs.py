"""The app's own dialogs: settings (and the confirmation of what in them lowers safety),
about, a question, an error.  Each shown window is kept until it finishes (``kept``); the
controller builds ``AppDialogs`` with what it needs."""

from __future__ import annotations

import logging
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING

from PySide6.QtGui import QIcon
from PySide6.QtWidgets import QMessageBox, QWidget

from volee_desktop.core.registry import Registry

from ..ipc.methods import Method
from .errors import LinkError
from .link import DaemonLink
from .live import Connection
from .tasks import Tasks

if TYPE_CHECKING:
    from volee_desktop.loginitem.base import LoginItem

log = logging.getLogger(__name__)


class AppDialogs:
    """Opens the app's dialogs in front of the list; asks and warns."""

    def __init__(
        self,
        *,
        config_path: Path,
        login_item: Callable[[], LoginItem] | None,
        ask: Callable[[str, str], bool] | None,
        tell: Callable[[str, str], None] | None,
        parent: Callable[[], QWidget],
        status: Callable[[str, bool], None],
        icon: Callable[[], QIcon],
        link: Callable[[], DaemonLink | None],
        tasks: Tasks,
        settings_saved: Callable[[], None],
        about: Callable[[], tuple[Connection, str, Registry]],
    ) -> None:
        self.config_path = config_path
        self.login_item = login_item
        self.ask = ask  # the seams of AppOptions.confirm / show_error (None: a message box)
        self.tell = tell
        self.parent = parent  # what a message box is in front of (the list)
        self.status = status  # the list's status line (text, transient)
        self.icon = icon
        self.link = link
        self.tasks = tasks
        self.settings_saved = settings_saved
        self.about = about  # (the connection, where the daemon runs, the registry)
        self.kept: list[QWidget] = []

    def open_settings(self) -> QWidget:
        from .settings import SettingsDialog

        dialog = SettingsDialog(self.config_path, self.login_item, self.tell)
        dialog.setWindowIcon(self.icon())
        dialog.saved.connect(self.settings_saved)
        dialog.saved.connect(self.confirm_settings)
        self.keep(dialog)
        dialog.show()
        return dialog

    def confirm_settings(self) -> None:
        """Ask the person whether what config.toml asks for that lowers safety may be in
        force; the daemon records the answer (``config.confirm``, the person's alone)."""

        async def run() -> None:
            link = self.link()
            if link is None:
                return
            try:
                waiting = await link.call(Method.CONFIG_UNCONFIRMED, {})
                pending = waiting.get("unconfirmed") or []
                if not pending:
                    return
                lines = "\n".join(f"{i['key']} = {i['value']}: {i['why']}" for i in pending)
                question = (
                    f"config.toml asks for settings that lower safety:\n{lines}\n\n"
                    "Until you confirm them the safer values stand. Confirm them?"
                )
                if not self.confirm("Settings that lower safety", question):
                    return
                await link.call(Method.CONFIG_CONFIRM, {"settings": waiting.get("asked", {})})
            except LinkError as exc:
                self.show_error("Settings not confirmed", str(exc))
                return
            log.info("settings that lower safety confirmed: %s", waiting.get("asked"))
            self.status("volee: settings confirmed, in force from now on", True)

        self.tasks.spawn(run(), "confirm settings that lower safety")

    def open_about(self) -> QWidget:
        from .about import AboutDialog

        dialog = AboutDialog(*self.about())
        dialog.setWindowIcon(self.icon())
        self.keep(dialog)
        dialog.show()
        return dialog

    def keep(self, widget: QWidget) -> None:
        self.kept.append(widget)
        widget.destroyed.connect(lambda *_: None)
        if hasattr(widget, "finished"):
            widget.finished.connect(lambda *_: self.drop(widget))

    def drop(self, widget: QWidget) -> None:
        if widget in self.kept:
            self.kept.remove(widget)
        widget.deleteLater()

    def confirm(self, title: str, message: str) -> bool:
        if self.ask is not None:
            return self.ask(title, message)
        answer = QMessageBox.question(self.parent(), title, message)
        return answer == QMessageBox.StandardButton.Yes

    def show_error(self, title: str, message: str) -> None:
        log.warning("%s: %s", title, message)
        if self.tell is not None:
            self.tell(title, message)
            return
        self.status(f"{title}: {message}", True)
        box = QMessageBox(QMessageBox.Icon.Warning, title, message, parent=self.parent())
        self.keep(box)
        box.open()

    def close(self) -> None:
        for widget in list(self.kept):
            widget.close()
