"""Harness binaries: found or not, new enough or not, with messages that say what to do."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from volee_desktop.harness.versions import (
    BinaryMissing,
    Found,
    Prober,
    TooOld,
    check,
    locate,
    parse_version,
)


@pytest.mark.parametrize(
    ("text", "version"),
    [
        ("2.1.332 (Claude Code)", (2, 1, 332)),
        ("codex-cli 0.171.0", (0, 171, 0)),
        ("0.73.1\n", (0, 73, 1)),
        ("tool 3.2", (3, 2, 0)),
        ("error: unknown option '--version'", None),
    ],
)
def test_parse_version(text: str, version: tuple[int, int, int] | None) -> None:
    assert parse_version(text) == version


def test_too_old_names_the_version_found_and_the_minimum() -> None:
    found = Found("/opt/claude", (2, 0, 9), "2.0.9 (Claude Code)")
    with pytest.raises(
        TooOld, match=r"claude at /opt/claude is version 2\.0\.9; volee needs 2\.1\.0"
    ):
        check("claude", found, "2.1.0")
    check("claude", Found("/opt/claude", (2, 1, 0), ""), "2.1.0")
    check("claude", Found("/opt/claude", (10, 0, 0), ""), "2.1.0")


def test_an_unknown_version_is_let_through() -> None:
    check("claude", Found("/opt/fake", None, "usage: fake"), "2.1.0")


def test_missing_binaries_say_how_to_fix_it(tmp_path: Path) -> None:
    with pytest.raises(BinaryMissing, match="'nope-claude' is not on PATH; install claude or set"):
        locate("claude", "nope-claude", {"PATH": str(tmp_path)})
    with pytest.raises(BinaryMissing, match="VOLEE_PI_BIN"):
        locate("pi", str(tmp_path / "pi"), {})


def _script(path: Path, body: str) -> Path:
    path.write_text(f"#!/bin/sh\n{body}\n")
    path.chmod(0o755)
    return path


def test_prober_runs_the_binary_once_per_file(tmp_path: Path) -> None:
    count = tmp_path / "count"
    binary = _script(tmp_path / "codex", f'echo x >> {count}; echo "codex-cli 0.100.0"')
    env = {"PATH": os.environ["PATH"]}
    prober = Prober()

    with pytest.raises(TooOld, match=r"version 0\.100\.0; volee needs 0\.171\.0"):
        prober.require("codex", str(binary), "0.171.0", env)
    with pytest.raises(TooOld):
        prober.require("codex", str(binary), "0.171.0", env)
    assert count.read_text().count("x") == 1

    _script(binary, 'echo "codex-cli 0.172.3"')
    assert prober.require("codex", "codex", "0.171.0", {"PATH": str(tmp_path)}).version == (
        0,
        172,
        3,
    )


def test_a_binary_that_fails_version_is_unknown_not_refused(tmp_path: Path) -> None:
    binary = _script(tmp_path / "claude", "echo 'error: unknown option' >&2; exit 2")

    found = Prober().require("claude", str(binary), "2.1.0", {})

    assert found.version is None
    assert "unknown option" in found.text


def test_an_unknown_version_is_said_once_per_binary_not_at_every_launch(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    binary = _script(tmp_path / "claude", "echo 'error: unknown option' >&2; exit 2")
    prober = Prober()

    with caplog.at_level("WARNING", logger="volee_desktop.harness.versions"):
        for _ in range(3):
            prober.require("claude", str(binary), "2.1.0", {})

    said = [r.getMessage() for r in caplog.records if "could not tell" in r.getMessage()]
    assert len(said) == 1
    assert str(binary) in said[0]
    assert "trying it anyway" in said[0]


def test_a_version_printed_on_stderr_is_read(tmp_path: Path) -> None:
    # pi 0.73.1 answers `--version` on stderr.
    binary = _script(tmp_path / "pi", 'echo "0.73.1" >&2')

    found = Prober().require("pi", str(binary), "0.73.0", {"PATH": os.environ["PATH"]})

    assert found.version == (0, 73, 1)


def test_stdout_wins_over_a_number_in_a_warning_on_stderr(tmp_path: Path) -> None:
    body = 'echo "(node:12) warning 9.9.9" >&2; echo "codex-cli 0.171.0"'
    binary = _script(tmp_path / "codex", body)

    assert Prober().probe(str(binary), {"PATH": os.environ["PATH"]}).version == (0, 171, 0)


def test_help_is_read_once_per_file(tmp_path: Path) -> None:
    count = tmp_path / "count"
    binary = _script(tmp_path / "codex", f'echo x >> {count}; echo "  -a, --ask-for-approval"')
    prober = Prober()

    assert "--ask-for-approval" in prober.help(str(binary), {})
    assert "--ask-for-approval" in prober.help(str(binary), {})
    assert count.read_text().count("x") == 1
    assert prober.help(str(tmp_path / "missing"), {}) == ""
