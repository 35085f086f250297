"""Where volee keeps its files: config, state, runtime (the IPC socket) and logs.

Everything moves under one folder when ``VOLEE_HOME`` is set (every test does
that).  Without it the platform's own places are used (platformdirs).  This
module is imported by ``volee hook`` on every hook of every agent, so it
imports platformdirs only when it needs it.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

APP = "volee"
SOCKET_NAME = "volee.sock"
# sun_path is 108 bytes on Linux (104 on macOS), with a terminating NUL.
MAX_SOCKET_PATH = 103


@dataclass(frozen=True)
class Dirs:
    """The four folders volee uses."""

    config: Path
    state: Path
    runtime: Path
    logs: Path

    @property
    def config_file(self) -> Path:
        return self.config / "config.toml"

    @property
    def events_db(self) -> Path:
        return self.state / "events.db"

    @property
    def hosts(self) -> Path:
        return self.state / "hosts"

    @property
    def spool(self) -> Path:
        return self.state / "spool"

    @property
    def rejected(self) -> Path:
        return self.state / "spool" / "rejected"

    @property
    def socket(self) -> Path:
        return self.runtime / SOCKET_NAME

    @property
    def daemon_lock(self) -> Path:
        return self.state / "daemon.lock"

    @property
    def app_lock(self) -> Path:
        return self.state / "app.lock"


def dirs(environ: dict[str, str] | None = None) -> Dirs:
    """The folders for this user, honouring ``VOLEE_HOME``."""
    env = os.environ if environ is None else environ
    home = env.get("VOLEE_HOME")
    if home:
        base = Path(home).expanduser().absolute()
        return Dirs(base / "config", base / "state", base / "run", base / "logs")
    import platformdirs

    runtime = env.get("XDG_RUNTIME_DIR")
    run_dir = (
        Path(runtime) / APP
        if runtime
        else Path(platformdirs.user_runtime_dir(APP, appauthor=False))
    )
    return Dirs(
        Path(platformdirs.user_config_dir(APP, appauthor=False)),
        Path(platformdirs.user_state_dir(APP, appauthor=False)),
        run_dir,
        Path(platformdirs.user_log_dir(APP, appauthor=False)),
    )


def ensure_private_dir(path: Path) -> Path:
    """Create ``path`` (and parents) and make it 0700: only this user may enter."""
    path.mkdir(parents=True, exist_ok=True)
    os.chmod(path, 0o700)
    return path
