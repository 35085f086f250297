"""``volee allow|deny|answer``: each builds one Answer and sends its call (old wire format)."""

from __future__ import annotations

import argparse
from typing import Any

import pytest

from volee_desktop.cli import answers
from volee_desktop.cli.main import main


@pytest.fixture
def sent(monkeypatch: pytest.MonkeyPatch) -> list[tuple[str, dict[str, Any]]]:
    calls: list[tuple[str, dict[str, Any]]] = []

    def call(_args: argparse.Namespace, method: str, **params: Any) -> dict[str, Any]:
        calls.append((method, params))
        return {"name": "worker", "answer": "?", "summary": "Bash: ls"}

    monkeypatch.setattr(answers, "call", call)
    return calls


@pytest.mark.parametrize(
    ("argv", "method", "params"),
    [
        (["allow", "worker"], "agents.allow", {"always": False}),
        (["allow", "worker", "--always"], "agents.allow", {"always": True}),
        (
            ["allow", "worker", "--request", "rq_1"],
            "agents.allow",
            {"always": False, "request": "rq_1"},
        ),
        (["deny", "worker"], "agents.deny", {}),
        (["deny", "worker", "--reason", " not now "], "agents.deny", {"reason": "not now"}),
        (["answer", "worker", "2"], "agents.answer", {"option": 2}),
        (["answer", "worker", "--reply", "MySQL"], "agents.answer", {"text": "MySQL"}),
    ],
)
def test_each_command_sends_its_answer(
    sent: list[tuple[str, dict[str, Any]]], argv: list[str], method: str, params: dict[str, Any]
) -> None:
    assert main(argv) == 0
    assert sent == [(method, {"agent": "worker", **params})]


@pytest.mark.parametrize(
    ("argv", "says"),
    [
        (["answer", "worker", "0"], "volee: an option is numbered from 1, not 0"),
        (["answer", "worker", "--reply", "  "], "volee: a reply is some text, not nothing"),
        (["answer", "worker"], "give an OPTION number or --reply TEXT"),
    ],
)
def test_what_is_no_answer_is_refused_before_the_daemon(
    sent: list[tuple[str, dict[str, Any]]],
    capsys: pytest.CaptureFixture[str],
    argv: list[str],
    says: str,
) -> None:
    assert main(argv) == 2
    assert says in capsys.readouterr().err
    assert sent == []
