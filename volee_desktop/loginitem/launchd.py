"""macOS: a launchd agent in ~/Library/LaunchAgents that starts the tray app at login.

LaunchAgents in the person's folder load in their GUI (Aqua) session only, so
this always starts the tray, which embeds the daemon.  ``launchctl bootstrap
gui/<uid>`` loads it now (RunAtLoad starts it: a second volee finds the
first one's lock and exits 0, which KeepAlive {SuccessfulExit: false} does not
restart).  Uninstall does not ``bootout`` a running job: that would kill the
very tray whose "Start at login" box was just unticked; the job stays loaded
until the person quits volee or logs out, and is gone after that.
"""

from __future__ import annotations

import plistlib
import re
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from .base import (
    FileSet,
    LoginItemError,
    LoginItemStatus,
    captured_environment,
    describe_command,
    template_path,
)
from .system import Runner, RunResult

__all__ = ["LABEL", "LaunchdAgent"]

LABEL = "com.volee.desktop"
LAUNCHCTL = "launchctl"


# Over ssh, or before the GUI session exists, there is no gui/<uid> to load into.
# ("Could not find service ... in domain for user gui" is merely "not loaded".)
_UNREACHABLE = ("could not find domain", "domain does not support")


def is_unreachable(result: RunResult) -> bool:
    """launchctl could not reach the person's GUI domain (or could not run at all)."""
    lowered = result.output.lower()
    return result.returncode in (124, 127) or any(mark in lowered for mark in _UNREACHABLE)


def parse_print_state(stdout: str) -> str | None:
    """The ``state = running`` line of ``launchctl print``: "running", "not running", or None."""
    match = re.search(r"^\s*state = (.+?)\s*$", stdout, re.MULTILINE)
    return match.group(1) if match else None


class LaunchdAgent:
    """``~/Library/LaunchAgents/com.volee.desktop.plist``, loaded into ``gui/<uid>``."""

    def __init__(
        self,
        command: Sequence[str],
        environ: Mapping[str, str],
        runner: Runner,
        uid: int,
        logs_dir: Path,
        templates: Path | None = None,
    ) -> None:
        home = environ.get("HOME")
        if not home:
            raise LoginItemError(
                "Cannot find your home folder",
                "HOME is not set, so volee does not know where your LaunchAgents folder is. "
                "Set HOME and try again.",
            )
        self._command = tuple(command)
        self._environ = dict(environ)
        self._runner = runner
        self._uid = uid
        self._logs_dir = logs_dir
        self._templates = templates
        self.agents_dir = Path(home) / "Library" / "LaunchAgents"
        self.plist_path = self.agents_dir / f"{LABEL}.plist"
        self.domain = f"gui/{uid}"
        self.target = f"{self.domain}/{LABEL}"

    def render(self) -> bytes:
        """The plist: the template's fixed keys, this volee's command, PATH and log files."""
        name = f"{LABEL}.plist.in"
        path = self._templates / name if self._templates else template_path("launchd", name)
        plist: dict[str, Any] = plistlib.loads(path.read_bytes())
        args: list[str] = []
        for arg in plist["ProgramArguments"]:
            args.extend(self._command if arg == "@VOLEE@" else [arg])
        plist["ProgramArguments"] = args
        plist["EnvironmentVariables"] = captured_environment(self._environ)
        for key in ("StandardOutPath", "StandardErrorPath"):
            plist[key] = plist[key].replace("@LOGS@", str(self._logs_dir))
        return plistlib.dumps(plist, fmt=plistlib.FMT_XML)

    def _launchctl(self, *args: str) -> RunResult:
        return self._runner.run((LAUNCHCTL, *args), self._environ)

    def _failure(self, argv: Sequence[str], result: RunResult) -> LoginItemError:
        said = result.output or f"exit status {result.returncode}"
        if result.returncode == 127:
            return LoginItemError(
                "launchctl was not found",
                "volee starts at login through launchd, and launchctl is missing here. "
                "Nothing was installed.",
            )
        lowered = said.lower()
        if is_unreachable(result):
            return LoginItemError(
                "Your login session is not reachable",
                f"`{describe_command(argv)}` said: {said}. volee can be added to "
                f"{self.domain} only from your desktop session (not over ssh). Nothing was "
                "installed; run `volee daemon install` from Terminal on this Mac's desktop.",
            )
        if "disabled" in lowered:
            return LoginItemError(
                "volee is not allowed to start at login",
                f"`{describe_command(argv)}` said: {said}. Allow volee in System Settings → "
                "General → Login Items, then try again. Nothing was installed.",
            )
        return LoginItemError(
            "Could not make volee start at login",
            f"`{describe_command(argv)}` failed: {said}. Nothing was installed; fix what it "
            "says and run `volee daemon install` again.",
        )

    def install(self) -> None:
        """Write the plist and bootstrap it into the GUI session; undo everything on failure."""
        data = self.render()
        files = FileSet()
        try:
            files.make_dir(self._logs_dir)  # launchd does not create the log file's folder
            files.write(self.plist_path, data)
        except OSError as exc:
            files.roll_back()
            raise LoginItemError(
                "Could not write the login item",
                f"{exc}. Nothing was installed; check that {self.agents_dir} is writable.",
            ) from exc
        if self._launchctl("print", self.target).ok:
            return  # already loaded (an earlier install): the new plist applies from next login
        # A person may have disabled the label before; asking to install undoes that.
        self._launchctl("enable", self.target)
        bootstrap = (LAUNCHCTL, "bootstrap", self.domain, str(self.plist_path))
        result = self._runner.run(bootstrap, self._environ)
        if not result.ok:
            files.roll_back()
            raise self._failure(bootstrap, result)

    def uninstall(self) -> None:
        """Unload the job unless it is running (see the module docstring), remove the plist."""
        shown = self._launchctl("print", self.target)
        if shown.ok and parse_print_state(shown.stdout) != "running":
            self._launchctl("bootout", self.target)  # "No such process" is fine: gone already
        try:
            self.plist_path.unlink(missing_ok=True)
        except OSError as exc:
            raise LoginItemError(
                "Could not remove the login item", f"{exc}. Remove {self.plist_path} by hand."
            ) from exc

    def status(self) -> LoginItemStatus:
        """Installed (the plist), enabled (loaded into the GUI session), running or not."""
        if not self.plist_path.is_file():
            return LoginItemStatus(False, False, str(self.plist_path), "not installed")
        shown = self._launchctl("print", self.target)
        parts: list[str] = []
        enabled: bool | None
        if shown.ok:
            enabled = True
            parts.append(f"loaded, {parse_print_state(shown.stdout) or 'state unknown'}")
        elif is_unreachable(shown):
            enabled = None
            parts.append("login session not reachable")
        else:
            enabled = False
            parts.append("not loaded: it starts at your next login")
        try:
            current = self.plist_path.read_bytes() == self.render()
        except (OSError, LoginItemError):
            current = False
        if not current:
            parts.append("written by another volee: run `volee daemon install` to update it")
        return LoginItemStatus(True, enabled, str(self.plist_path), "; ".join(parts))
