"""Linux: a systemd user unit for the daemon, plus an XDG autostart entry for the tray icon.

Why two files: the unit starts when the person's systemd user manager starts
(any login: desktop, ssh, a lingering user), which is before a desktop session
has told systemd its DISPLAY/WAYLAND_DISPLAY, and on desktops that never do.
A tray started from it would race the session, and die (and be restarted in a
loop) when the session ends.  So the unit runs the headless daemon, which
needs no display (and so is not PartOf=graphical-session.target), and the
desktop session itself starts the tray through ``~/.config/autostart``, which
every XDG desktop honours; the tray then finds the daemon running and is its
client.  Without a desktop only the daemon starts: ADR 0024's "agents come
back without opening volee".

``systemctl --user enable`` and ``is-enabled`` work on the files alone;
``daemon-reload`` needs the running user manager, so it is what tells
"unreachable" (in a container: "Failed to connect to bus: No medium found").
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from pathlib import Path

from .base import (
    FileSet,
    LoginItemError,
    LoginItemStatus,
    captured_environment,
    describe_command,
    prune_empty_parents,
    remove_file,
    template_path,
)
from .system import Runner, RunResult

__all__ = ["SystemdUserUnit"]

UNIT_NAME = "volee.service"
AUTOSTART_NAME = "volee.desktop"
SYSTEMCTL = ("systemctl", "--user")

_UNREACHABLE = (
    "failed to connect to bus",
    "no medium found",
    "failed to connect to user scope bus",
    "xdg_runtime_dir",
    "system has not been booted with systemd",
    "host is down",
)


def _systemd_word(arg: str, *, expands: bool) -> str:
    """One word of ExecStart=/Environment=, quoted so systemd reads it back unchanged."""
    if "\n" in arg or "\r" in arg or "\0" in arg:
        raise LoginItemError(
            "Cannot write the login item",
            f"{arg!r} contains a line break, which a systemd unit cannot hold; "
            "install volee in a folder whose name has none.",
        )
    escaped = arg.replace("\\", "\\\\").replace('"', '\\"').replace("%", "%%")
    if expands:
        # ExecStart expands $VAR in its arguments (not in the program's path,
        # nor in Environment=), so only there a literal $ is written $$.
        escaped = escaped.replace("$", "$$")
    if escaped != arg or not arg or re.search(r"[\s';]", arg):
        return f'"{escaped}"'
    return arg


def _desktop_word(arg: str) -> str:
    """One argument of a .desktop Exec= line (quoted per the Desktop Entry spec)."""
    if re.search(r"[\s\"'\\><~|&;$*?#()`%]", arg) or not arg:
        inner = re.sub(r'(["`$\\])', r"\\\1", arg).replace("%", "%%")
        arg = f'"{inner}"'
    # Then the string-level escape every .desktop value gets.
    return arg.replace("\\", "\\\\")


def _config_home(environ: Mapping[str, str]) -> Path:
    xdg = environ.get("XDG_CONFIG_HOME", "")
    # The XDG spec: a relative XDG_CONFIG_HOME is invalid and must be ignored.
    if xdg and Path(xdg).is_absolute():
        return Path(xdg)
    home = environ.get("HOME")
    if not home:
        raise LoginItemError(
            "Cannot find your home folder",
            "Neither XDG_CONFIG_HOME nor HOME is set, so volee does not know where your "
            "systemd user units live. Set HOME and try again.",
        )
    return Path(home) / ".config"


class SystemdUserUnit:
    """The daemon's user unit and the tray's autostart entry, under XDG_CONFIG_HOME."""

    def __init__(
        self,
        command: Sequence[str],
        environ: Mapping[str, str],
        runner: Runner,
        templates: Path | None = None,
    ) -> None:
        self._command = tuple(command)
        self._environ = dict(environ)
        self._runner = runner
        self._templates = templates
        self.config_home = _config_home(environ)
        self.unit_path = self.config_home / "systemd" / "user" / UNIT_NAME
        self.autostart_path = self.config_home / "autostart" / AUTOSTART_NAME
        # What `systemctl --user enable` creates, from WantedBy=default.target.
        self.wants_link = self.config_home / "systemd" / "user" / "default.target.wants" / UNIT_NAME

    # --- rendering (pure) ---------------------------------------------------

    def _template(self, name: str) -> str:
        path = self._templates / name if self._templates else template_path("systemd", name)
        return path.read_text(encoding="utf-8")

    def render(self) -> str:
        """The unit file: the headless daemon with the PATH and VOLEE_HOME of now."""
        argv = [*self._command, "daemon", "run"]
        exec_start = " ".join(
            [_systemd_word(argv[0], expands=False)]
            + [_systemd_word(arg, expands=True) for arg in argv[1:]]
        )
        env_lines = "\n".join(
            f"Environment={_systemd_word(f'{key}={value}', expands=False)}"
            for key, value in captured_environment(self._environ).items()
        )
        text = self._template("volee.service.in").replace("@EXEC_START@", exec_start)
        text = text.replace("@ENVIRONMENT@\n", f"{env_lines}\n" if env_lines else "")
        return text

    def render_autostart(self) -> str:
        """The XDG autostart entry that starts the tray in a desktop session."""
        env = captured_environment(self._environ)
        prefix = ("/usr/bin/env", *(f"{k}={v}" for k, v in env.items())) if env else ()
        exec_line = " ".join(_desktop_word(arg) for arg in (*prefix, *self._command, "app"))
        try_exec = self._command[0].replace("\\", "\\\\")
        text = self._template("volee-autostart.desktop.in")
        return text.replace("@EXEC@", exec_line).replace("@TRY_EXEC@", try_exec)

    # --- service manager ----------------------------------------------------

    def _systemctl(self, *args: str) -> RunResult:
        return self._runner.run((*SYSTEMCTL, *args), self._environ)

    def _failure(self, argv: Sequence[str], result: RunResult) -> LoginItemError:
        said = result.output or f"exit status {result.returncode}"
        if result.returncode == 127:
            return LoginItemError(
                "systemd was not found",
                "volee starts at login through your systemd user session, and systemctl is "
                "not installed here. Nothing was installed. Start volee yourself (`volee`, or "
                "`volee daemon run` without a desktop), for example from your session's "
                "autostart settings.",
            )
        lowered = said.lower()
        if result.returncode == 124 or any(mark in lowered for mark in _UNREACHABLE):
            return LoginItemError(
                "Your systemd user session is not reachable",
                f"`{describe_command(argv)}` said: {said}. This happens over ssh or in a "
                "container without a user session, or without systemd. Nothing was installed. "
                "Run `volee daemon install` again from your desktop session (or, for a "
                "machine without one, `volee daemon install --linger`).",
            )
        return LoginItemError(
            "Could not make volee start at login",
            f"`{describe_command(argv)}` failed: {said}. Nothing was installed; "
            "fix what it says and run `volee daemon install` again.",
        )

    def _is_enabled(self) -> bool | None:
        result = self._systemctl("is-enabled", UNIT_NAME)
        word = result.stdout.strip().splitlines()[0] if result.stdout.strip() else ""
        if word in ("enabled", "enabled-runtime"):
            return True
        if word:
            return False  # disabled, masked, static, linked, ...
        if "no such file" in result.output.lower() or "not found" in result.output.lower():
            return False
        return None

    def install(self) -> None:
        """Write both files, reload the user manager, enable the unit; undo it all on failure."""
        unit = self.render().encode("utf-8")
        autostart = self.render_autostart().encode("utf-8")
        was_enabled = self._is_enabled() is True
        files = FileSet()
        try:
            files.write(self.unit_path, unit)
            files.write(self.autostart_path, autostart)
        except OSError as exc:
            files.roll_back()
            raise LoginItemError(
                "Could not write the login item",
                f"{exc}. Nothing was installed; check that {self.config_home} is writable.",
            ) from exc

        reload = (*SYSTEMCTL, "daemon-reload")
        result = self._runner.run(reload, self._environ)
        if not result.ok:
            files.roll_back()
            raise self._failure(reload, result)

        enable = (*SYSTEMCTL, "enable", UNIT_NAME)
        result = self._runner.run(enable, self._environ)
        if not result.ok:
            if not was_enabled:
                self._systemctl("disable", UNIT_NAME)
                self.wants_link.unlink(missing_ok=True)
            files.roll_back()
            self._systemctl("daemon-reload")
            raise self._failure(enable, result)

    def linger(self) -> str:
        """``loginctl enable-linger``: the user manager, this unit and its agents outlive
        logout and start at boot (``linger.py``); the user's name."""
        from .linger import enable_linger

        return enable_linger(self._runner, self._environ)

    def start(self) -> RunResult:
        """Start the unit now (its daemon, and the hosts it starts, in the unit's cgroup)."""
        return self._systemctl("start", UNIT_NAME)

    def uninstall(self) -> None:
        """Disable the unit, remove both files; a running daemon keeps running."""
        disabled = self._systemctl("disable", UNIT_NAME)
        if not disabled.ok and self.wants_link.is_symlink():
            # systemctl could not do it (gone, broken): the link is ours, remove it.
            self.wants_link.unlink(missing_ok=True)
            prune_empty_parents(self.wants_link.parent, self.config_home)
        try:
            removed = remove_file(self.unit_path, self.config_home)
            remove_file(self.autostart_path, self.config_home)
        except OSError as exc:
            raise LoginItemError(
                "Could not remove the login item",
                f"{exc}. Remove {self.unit_path} and {self.autostart_path} by hand.",
            ) from exc
        if removed:
            self._systemctl("daemon-reload")  # best effort: the files are what counts

    def status(self) -> LoginItemStatus:
        """Installed (the unit file), enabled (``is-enabled``), and whether it runs now."""
        installed = self.unit_path.is_file()
        if not installed:
            return LoginItemStatus(False, False, str(self.unit_path), "not installed")
        enabled = self._is_enabled()
        parts = [
            {True: "enabled", False: "disabled", None: "state unknown"}[enabled],
        ]
        active = self._systemctl("is-active", UNIT_NAME)
        if active.stdout.strip() and "bus" not in active.output.lower():
            parts.append(f"now {active.stdout.strip()}")
        else:
            parts.append("user session not reachable")
        try:
            current = self.unit_path.read_text(encoding="utf-8") == self.render()
        except (OSError, LoginItemError):
            current = False
        if not current:
            parts.append("written by another volee: run `volee daemon install` to update it")
        if not self.autostart_path.is_file():
            parts.append(f"no tray entry at {self.autostart_path}")
        return LoginItemStatus(True, enabled, str(self.unit_path), "; ".join(parts))
