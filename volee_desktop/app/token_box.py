"""Settings' GitHub token: typed once, stored in the OS keyring (never in config.toml), tested.

The daemon reads it from the keyring under service ``volee``, user ``github``
(``daemon/forge.py``) to find and merge a mission's pull requests.  Test asks GitHub who
the token is (``GET /user``) in a thread: the app's loop, which may run the daemon, never
waits on the network.
"""

from __future__ import annotations

import os
import threading

from PySide6.QtCore import Signal
from PySide6.QtWidgets import (
    QGroupBox,
    QHBoxLayout,
    QLabel,
    QLineEdit,
    QPushButton,
    QVBoxLayout,
    QWidget,
)

from volee_desktop.daemon.forge import (
    DEFAULT_API,
    KEYRING_SERVICE,
    KEYRING_USER,
    Forge,
    ForgeError,
    read_token,
)


def check_token(token: str, api: str | None = None) -> str:
    """What GitHub says of ``token``: "GitHub knows this token: @login", or why not."""
    forge = Forge(api=api or os.environ.get("VOLEE_GITHUB_API") or DEFAULT_API, token=token)
    try:
        user = forge._request("GET", "/user")
    except ForgeError as exc:
        return f"GitHub refused it: {exc}"
    login = user.get("login") if isinstance(user, dict) else None
    return f"GitHub knows this token: @{login}" if login else "GitHub answered, without a login"


class GitHubTokenBox(QGroupBox):
    """A token field with Store (into the keyring) and Test."""

    tested = Signal(str)  # what the test found (emitted from its thread, shown here)

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__("GitHub token (for missions' pull requests)", parent)
        self.setObjectName("githubToken")
        self.token = QLineEdit(self)
        self.token.setObjectName("token")
        self.token.setEchoMode(QLineEdit.EchoMode.Password)
        self.token.setPlaceholderText("ghp_… or github_pat_…")
        self.token.setToolTip("A GitHub token, kept in the OS keyring")
        self.store = QPushButton("Store in keyring", self)
        self.store.setObjectName("storeToken")
        self.store.setAutoDefault(False)
        self.store.clicked.connect(self.store_token)
        self.test = QPushButton("Test", self)
        self.test.setObjectName("testToken")
        self.test.setAutoDefault(False)
        self.test.clicked.connect(self.test_token)
        self.status = QLabel(self)
        self.status.setObjectName("tokenStatus")
        self.status.setWordWrap(True)
        _token, note = read_token()
        self.status.setText(f"Stored token: {note}.")
        row = QHBoxLayout()
        row.addWidget(self.token, 1)
        row.addWidget(self.store)
        row.addWidget(self.test)
        column = QVBoxLayout(self)
        column.addLayout(row)
        column.addWidget(self.status)
        self.tested.connect(self.status.setText)
        self._thread: threading.Thread | None = None

    def store_token(self) -> bool:
        """Store the typed token in the keyring; whether it was (the status says why not)."""
        token = self.token.text().strip()
        if not token:
            self.status.setText("Type a token first (github.com → Settings → Developer settings).")
            return False
        try:
            import keyring
            from keyring.errors import KeyringError
        except ImportError:
            self.status.setText("Not stored: the keyring package is not installed.")
            return False
        try:
            keyring.set_password(KEYRING_SERVICE, KEYRING_USER, token)
        except KeyringError as exc:
            self.status.setText(f"Not stored: the keyring refused it ({exc}).")
            return False
        self.token.clear()
        self.status.setText(
            f"Stored in the keyring ({type(keyring.get_keyring()).__name__}); the daemon uses it "
            "from the next mission on."
        )
        return True

    def test_token(self) -> None:
        """Ask GitHub who the typed token (else the stored one) is, off the app's loop."""
        token = self.token.text().strip() or read_token()[0]
        if not token:
            self.status.setText("No token to test: type one, or store one first.")
            return
        self.status.setText("Asking GitHub…")
        self._thread = threading.Thread(
            target=lambda: self.tested.emit(check_token(token)), daemon=True
        )
        self._thread.start()
