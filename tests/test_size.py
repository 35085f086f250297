"""No module of volee_desktop is over 600 lines (issue 23): a module past that holds more than
one concern, and whoever must change one of them reads them all.  Split it by concern."""

from __future__ import annotations

from pathlib import Path

import volee_desktop

PACKAGE_DIR = Path(volee_desktop.__file__).resolve().parent
MAX_LINES = 600


def oversized(package: Path, limit: int = MAX_LINES) -> list[str]:
    """The modules under ``package`` longer than ``limit`` lines, with their length."""
    found = []
    for path in sorted(package.rglob("*.py")):
        lines = len(path.read_text(encoding="utf-8").splitlines())
        if lines > limit:
            found.append(f"{path.relative_to(package.parent)}: {lines} lines")
    return found


def test_no_module_is_over_600_lines() -> None:
    found = oversized(PACKAGE_DIR)
    assert not found, f"modules over {MAX_LINES} lines (split them by concern):\n  " + (
        "\n  ".join(found)
    )


def test_the_check_finds_a_long_module(tmp_path: Path) -> None:
    package = tmp_path / "pkg"
    (package / "sub").mkdir(parents=True)
    (package / "short.py").write_text("x = 1\n" * MAX_LINES, encoding="utf-8")
    (package / "sub" / "long.py").write_text("x = 1\n" * (MAX_LINES + 1), encoding="utf-8")
    assert oversized(package) == [f"pkg/sub/long.py: {MAX_LINES + 1} lines"]
