"""About volee: the version, the daemon's status in words, and where the docs are."""

from __future__ import annotations

import html
import platform

from PySide6 import __version__ as pyside_version
from PySide6.QtCore import Qt
from PySide6.QtWidgets import QDialog, QDialogButtonBox, QLabel, QVBoxLayout, QWidget

from volee_desktop import __version__
from volee_desktop.core.registry import Registry
from volee_desktop.core.states import AgentState

from .live import Connection

HOME = "https://github.com/volee-dev/volee-desktop"
#: (words, page): the docs a person reaches for first.
DOCS: tuple[tuple[str, str], ...] = (
    ("README", f"{HOME}#readme"),
    ("The agent list", f"{HOME}/blob/main/docs/list.md"),
    ("The tray and notifications", f"{HOME}/blob/main/docs/tray.md"),
    ("Answering agents", f"{HOME}/blob/main/docs/answers.md"),
    ("Missions", f"{HOME}/blob/main/docs/missions.md"),
)


def daemon_words(connection: Connection, where: str, registry: Registry) -> str:
    """The daemon's status in words: "Connected to the daemon (inside the app): 49 agents,
    6 working, 1 mission." or why not."""
    if not connection.connected:
        return f"Not connected to the daemon: {connection.detail}."
    agents = registry.agents.values()
    n = len(registry.agents)
    live = sum(1 for a in agents if a.state.live)
    working = sum(1 for a in agents if a.state is AgentState.WORKING)
    missions = len(registry.missions)
    how = f" ({where})" if where else ""
    parts = [f"{n} agent{'s' if n != 1 else ''}", f"{live} running", f"{working} working"]
    if missions:
        parts.append(f"{missions} mission{'s' if missions != 1 else ''}")
    return f"Connected to the daemon{how}: {', '.join(parts)}."


def about_html(connection: Connection, where: str, registry: Registry) -> str:
    links = " · ".join(f'<a href="{url}">{html.escape(words)}</a>' for words, url in DOCS)
    return (
        f"<h3>volee desktop {html.escape(__version__)}</h3>"
        f"<p>{html.escape(daemon_words(connection, where, registry))}</p>"
        f"<p>Python {platform.python_version()} · PySide6 {pyside_version}</p>"
        f"<p>{links}</p>"
    )


class AboutDialog(QDialog):
    """The version, the daemon in words, links to the docs."""

    def __init__(
        self, connection: Connection, where: str, registry: Registry, parent: QWidget | None = None
    ) -> None:
        super().__init__(parent)
        self.setObjectName("about")
        self.setWindowTitle("About volee")
        self.text = QLabel(about_html(connection, where, registry), self)
        self.text.setObjectName("aboutText")
        self.text.setTextFormat(Qt.TextFormat.RichText)
        self.text.setOpenExternalLinks(True)
        self.text.setWordWrap(True)
        buttons = QDialogButtonBox(QDialogButtonBox.StandardButton.Close, self)
        buttons.rejected.connect(self.reject)
        layout = QVBoxLayout(self)
        layout.addWidget(self.text)
        layout.addWidget(buttons)
