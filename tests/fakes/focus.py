"""A fake command runner for bringing an agent's terminal forward (tmux, xdotool)."""

from __future__ import annotations

from collections.abc import Sequence


class FakeRunner:
    """Answers like tmux and xdotool would; records every command."""

    def __init__(self, answers: dict[str, str | None]) -> None:
        self.answers = answers
        self.commands: list[list[str]] = []

    def __call__(self, argv: Sequence[str]) -> str | None:
        self.commands.append(list(argv))
        key = " ".join(argv[:3])
        for prefix, answer in self.answers.items():
            if key.startswith(prefix) or " ".join(argv).startswith(prefix):
                return answer
        return ""
