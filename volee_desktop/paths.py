"""Where volee keeps its files: config, state, runtime (the IPC socket) and logs.

Everything moves under one folder when ``VOLEE_HOME`` is set (every test does
that).  Without it the platform's own places are used (platformdirs).  This
module is imported by ``volee hook`` on every hook of every agent, so it
imports platformdirs only when it needs it.
"""

from __future__ import annotations

import os
import stat
from dataclasses import dataclass
from pathlib import Path

APP = "volee"
SOCKET_NAME = "volee.sock"
# sun_path is 108 bytes on Linux (104 on macOS), with a terminating NUL.
MAX_SOCKET_PATH = 103


@dataclass(frozen=True)
class Dirs:
    """The four folders volee uses (and ``VOLEE_HOME``, their parent, when it is set)."""

    config: Path
    state: Path
    runtime: Path
    logs: Path
    home: Path | None = None

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
    def screens(self) -> Path:
        return self.state / "screens"

    @property
    def agents(self) -> Path:
        return self.state / "agents"

    @property
    def host_sockets(self) -> Path:
        return self.runtime / "hosts"

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
        return Dirs(base / "config", base / "state", base / "run", base / "logs", base)
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


def state_dir(environ: dict[str, str] | None = None) -> Path:
    """The state folder alone (it needs no runtime folder, which may be unusable)."""
    env = os.environ if environ is None else environ
    home = env.get("VOLEE_HOME")
    if home:
        return Path(home).expanduser().absolute() / "state"
    import platformdirs

    return Path(platformdirs.user_state_dir(APP, appauthor=False))


class NotPrivate(PermissionError):
    """A folder or socket volee would use belongs to another user or is open to others."""


def check_private_dir(path: Path) -> None:
    """Raise NotPrivate unless ``path`` is a real folder of this user that only it may use."""
    st = os.lstat(path)
    if not stat.S_ISDIR(st.st_mode):
        raise NotPrivate(
            f"{path} is not a folder ({stat.filemode(st.st_mode)}); volee will not use it: "
            "remove it, or point VOLEE_HOME/XDG_RUNTIME_DIR elsewhere"
        )
    if st.st_uid != os.geteuid():
        raise NotPrivate(
            f"{path} belongs to uid {st.st_uid}, not to you (uid {os.geteuid()}); volee will "
            "not use it: remove it, or point VOLEE_HOME/XDG_RUNTIME_DIR elsewhere"
        )
    if st.st_mode & 0o077:
        raise NotPrivate(
            f"{path} is open to other users ({stat.filemode(st.st_mode)}); volee will not "
            f"use it: chmod 700 {path}"
        )


def ensure_private_dir(path: Path) -> Path:
    """Create ``path`` (and the parents it lacks) 0700, whatever the umask, and check that it
    is this user's: only it may enter.  An existing folder of this user that is open to
    others is tightened; parents that existed already are left as they are.

    A folder that exists already and belongs to someone else raises NotPrivate (it is never
    chmod-ed: as root that would succeed and leave the other user's folder in use).
    """
    missing: list[Path] = []
    at = path
    while not os.path.lexists(at) and at.parent != at:
        missing.append(at)
        at = at.parent
    for folder in reversed(missing):
        try:
            folder.mkdir(mode=0o700)
        except FileExistsError:
            continue  # made meanwhile by another process: checked below like any other
        os.chmod(folder, 0o700)  # mkdir's mode went through the umask
    st = os.lstat(path)
    if stat.S_ISDIR(st.st_mode) and st.st_uid == os.geteuid() and st.st_mode & 0o077:
        os.chmod(path, 0o700)
    check_private_dir(path)
    return path


def ensure_private_folders(folders: Dirs) -> None:
    """Every folder volee keeps files in, 0700 (docs/faults.md): ``VOLEE_HOME`` itself when it
    is set, then config, state, runtime, logs and those within; created when missing, and
    tightened at start when an older volee or a umask left them open to others."""
    if folders.home is not None:
        ensure_private_dir(folders.home)
    for folder in (
        folders.config,
        folders.state,
        folders.runtime,
        folders.logs,
        folders.spool,
        folders.rejected,
        folders.hosts,
        folders.screens,
        folders.agents,
        folders.host_sockets,
    ):
        ensure_private_dir(folder)
