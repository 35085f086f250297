"""Typed fakes for the login-item seam (commands, the registry) and for a whole login item.

No mocks: each fake keeps state and answers like the real thing for the calls
volee makes (the login-item tests and the tray's settings use them).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field

from volee_desktop.loginitem.base import LoginItemError, LoginItemStatus
from volee_desktop.loginitem.system import DEFAULT_TIMEOUT, RunResult

__all__ = [
    "BUS_UNREACHABLE",
    "OK",
    "FakeLoginItem",
    "FakeRunKeyStore",
    "FakeRunner",
    "Handler",
]

OK = RunResult(0, "", "")
# What `systemctl --user daemon-reload` says in a container (desktop-testing.md §5).
BUS_UNREACHABLE = RunResult(1, "", "Failed to connect to bus: No medium found\n")

Handler = Callable[[Sequence[str], Mapping[str, str]], RunResult]


class FakeRunner:
    """Answers commands from a table of argv prefixes (longest wins); records every call."""

    def __init__(self, default: RunResult = OK) -> None:
        self.default = default
        self.calls: list[tuple[str, ...]] = []
        self._answers: dict[tuple[str, ...], RunResult | Handler] = {}

    def on(self, *prefix: str, answer: RunResult | Handler) -> FakeRunner:
        """Answer commands starting with ``prefix`` with a fixed result or a handler's."""
        self._answers[prefix] = answer
        return self

    def run(
        self, argv: Sequence[str], env: Mapping[str, str], timeout: float = DEFAULT_TIMEOUT
    ) -> RunResult:
        call = tuple(argv)
        self.calls.append(call)
        matches = [prefix for prefix in self._answers if call[: len(prefix)] == prefix]
        if not matches:
            return self.default
        answer = self._answers[max(matches, key=len)]
        return answer if isinstance(answer, RunResult) else answer(call, env)


class FakeRunKeyStore:
    """An in-memory HKEY_CURRENT_USER: ``values[(key, name)]``; set ``fail`` to refuse writes."""

    def __init__(self) -> None:
        self.values: dict[tuple[str, str], str | bytes] = {}
        self.fail: OSError | None = None

    def get(self, key: str, name: str) -> str | bytes | None:
        return self.values.get((key, name))

    def set(self, key: str, name: str, value: str) -> None:
        if self.fail is not None:
            raise self.fail
        self.values[(key, name)] = value

    def delete(self, key: str, name: str) -> bool:
        if self.fail is not None:
            raise self.fail
        return self.values.pop((key, name), None) is not None


@dataclass
class FakeLoginItem:
    """A login item that lives in memory; set ``install_error`` to make install fail."""

    installed: bool = False
    install_error: LoginItemError | None = None
    calls: list[str] = field(default_factory=list)

    def render(self) -> str:
        return "fake login item\n"

    def install(self) -> None:
        self.calls.append("install")
        if self.install_error is not None:
            raise self.install_error
        self.installed = True

    def uninstall(self) -> None:
        self.calls.append("uninstall")
        self.installed = False

    def status(self) -> LoginItemStatus:
        return LoginItemStatus(
            self.installed,
            self.installed,
            "fake",
            "enabled" if self.installed else "not installed",
        )
