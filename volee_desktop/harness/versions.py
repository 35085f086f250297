"""Is the harness binary there, and new enough?  (``<binary> --version`` against a minimum.)

``parse_version`` and ``check`` are pure; ``probe`` runs the binary (once per binary file:
the answer is cached by path, size and modification time, since pi takes ~2 s to answer).
A binary whose answer holds no version number (a wrapper, a fork, the test fake) is let
through with a warning: volee cannot tell, and refusing would break working setups.
"""

from __future__ import annotations

import logging
import os
import re
import shutil
import subprocess
from collections.abc import Mapping
from dataclasses import dataclass

from .base import Error

log = logging.getLogger(__name__)

PROBE_TIMEOUT = 15.0
_VERSION = re.compile(r"(?<![\d.])(\d+)\.(\d+)(?:\.(\d+))?")


class BinaryMissing(Error):
    """The harness executable is not there."""


class TooOld(Error):
    """The harness executable is older than volee needs."""


@dataclass(frozen=True)
class Found:
    """What probing a binary found: its path and version (None when it cannot be told)."""

    path: str
    version: tuple[int, int, int] | None
    text: str


def parse_version(text: str) -> tuple[int, int, int] | None:
    """The first ``X.Y[.Z]`` in a ``--version`` answer: ``2.1.332 (Claude Code)``,
    ``codex-cli 0.171.0``, ``0.73.1``."""
    match = _VERSION.search(text)
    if match is None:
        return None
    major, minor, patch = match.groups()
    return int(major), int(minor), int(patch or 0)


def show(version: tuple[int, int, int]) -> str:
    """``(2, 1, 332)`` -> ``2.1.332``."""
    return ".".join(str(part) for part in version)


def check(harness: str, found: Found, minimum: str) -> None:
    """Raise TooOld when ``found`` is older than ``minimum`` (pure)."""
    least = parse_version(minimum)
    if least is None:
        raise ValueError(f"bad minimum version {minimum!r}")
    if found.version is None:
        return  # unknown: tried anyway (Prober.require says so once)
    if found.version < least:
        raise TooOld(
            f"{harness} at {found.path} is version {show(found.version)}; volee needs "
            f"{minimum} or newer: update it (e.g. `npm install -g` the newer release) or point "
            f"VOLEE_{harness.upper()}_BIN at a newer one"
        )


def locate(harness: str, binary: str, env: Mapping[str, str]) -> str:
    """The full path of ``binary`` (a path or a name on the agent's PATH); BinaryMissing."""
    hint = f"install {harness} or set VOLEE_{harness.upper()}_BIN to its executable"
    if os.sep in binary:
        if not (os.path.isfile(binary) and os.access(binary, os.X_OK)):
            raise BinaryMissing(
                f"{harness} executable {binary} does not exist or cannot run; {hint}"
            )
        return binary
    found = shutil.which(binary, path=env.get("PATH", os.defpath))
    if found is None:
        raise BinaryMissing(f"{harness} executable {binary!r} is not on PATH; {hint}")
    return found


class Prober:
    """Runs ``--version`` once per binary file and remembers the answer."""

    def __init__(self) -> None:
        self._warned: set[Found] = set()
        self._answers: dict[
            tuple[str, int, int, str], subprocess.CompletedProcess[str] | Exception
        ] = {}

    def _answer(
        self, path: str, flag: str, env: Mapping[str, str]
    ) -> subprocess.CompletedProcess[str] | Exception:
        """What ``path flag`` answers, once per binary file (path, size, modification time)."""
        st = os.stat(path)  # OSError: the caller says what it means
        key = (os.path.realpath(path), st.st_size, st.st_mtime_ns, flag)
        if key not in self._answers:
            try:
                self._answers[key] = subprocess.run(
                    [path, flag],
                    env=dict(env),
                    stdin=subprocess.DEVNULL,
                    capture_output=True,
                    text=True,
                    errors="replace",
                    timeout=PROBE_TIMEOUT,
                    check=False,
                )
            except (OSError, subprocess.SubprocessError) as exc:
                self._answers[key] = exc
        return self._answers[key]

    def probe(self, path: str, env: Mapping[str, str]) -> Found:
        """The version ``path --version`` reports (None when it prints none or fails)."""
        try:
            done = self._answer(path, "--version", env)
        except OSError as exc:
            raise BinaryMissing(f"cannot read {path}: {exc}") from exc
        if isinstance(done, Exception):
            return Found(path, None, str(done))
        version = None
        if done.returncode == 0:
            # pi 0.73 prints its version on stderr; stdout first, where the others print it,
            # so that a warning on stderr with a number in it is never taken instead.
            version = parse_version(done.stdout or "") or parse_version(done.stderr or "")
        text = (done.stdout or "") + (done.stderr or "")
        return Found(path, version, text.strip())

    def help(self, path: str, env: Mapping[str, str]) -> str:
        """What ``path --help`` prints (empty when it fails), once per binary file."""
        try:
            done = self._answer(path, "--help", env)
        except OSError:
            return ""
        if isinstance(done, Exception) or done.returncode != 0:
            return ""
        return done.stdout or ""

    def require(
        self, harness: str, binary: str, minimum: str | None, env: Mapping[str, str]
    ) -> Found:
        """Locate ``binary`` and check its version (BinaryMissing, TooOld)."""
        path = locate(harness, binary, env)
        found = self.probe(path, env) if minimum else Found(path, None, "")
        if minimum:
            check(harness, found, minimum)
            if found.version is None and found not in self._warned:
                self._warned.add(found)  # once per binary file, not at every launch
                log.warning(
                    "could not tell the version of %s (%s answered %r); trying it anyway",
                    harness,
                    found.path,
                    found.text[:80],
                )
        return found
