"""Fakes live under tests/fakes/: never in the package people install, nor anywhere else in
tests/ (a reader looking for a fake finds every one there).

A fake module is one whose name says fake, or that defines a class named ``Fake*`` (or
``_Fake*``). A test module named after a fake (``test_fake_harness.py`` tests the fake
harness) is not one, unless it defines a fake itself.
"""

from __future__ import annotations

import ast
from pathlib import Path

import volee_desktop

PACKAGE_DIR = Path(volee_desktop.__file__).resolve().parent
TESTS_DIR = Path(__file__).resolve().parent
FAKES_DIR = TESTS_DIR / "fakes"


def fakes_in(path: Path) -> list[str]:
    """What makes the module at ``path`` a fake: its name, or its ``Fake*`` classes."""
    found = []
    if "fake" in path.stem.lower() and not path.stem.startswith("test_"):
        found.append("its name")
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.ClassDef) and node.name.lstrip("_").startswith("Fake"):
            found.append(f"{node.lineno}: {node.name}")
    return found


def test_no_module_of_the_package_defines_a_fake() -> None:
    found = []
    for path in sorted(PACKAGE_DIR.rglob("*.py")):
        rel = path.relative_to(PACKAGE_DIR)
        if path.stem in ("testing", "fakes"):
            found.append(str(rel))
        found.extend(f"{rel}:{what}" for what in fakes_in(path) if what != "its name")
    assert found == []


def test_every_fake_of_the_tests_is_under_tests_fakes() -> None:
    found = []
    for path in sorted(TESTS_DIR.rglob("*")):
        if FAKES_DIR in path.parents or path.is_dir() or "__pycache__" in path.parts:
            continue
        rel = path.relative_to(TESTS_DIR)
        if path.suffix == ".py":
            found.extend(f"{rel}: {what}" for what in fakes_in(path))
        elif "fake" in path.name.lower() and not path.stem.startswith("test_"):
            found.append(f"{rel}: its name")  # a fake program (tests/fakes/fake-claude)
    assert found == []


def test_the_check_finds_a_fake_by_its_name_and_by_its_classes(tmp_path: Path) -> None:
    named = tmp_path / "ipc_fakes.py"
    named.write_text("X = 1\n")
    defining = tmp_path / "helpers.py"
    defining.write_text("class Ids: ...\nclass FakeLink: ...\nclass _FakeSock: ...\n")
    tested = tmp_path / "test_fake_harness.py"
    tested.write_text("def test_it() -> None: ...\n")
    assert fakes_in(named) == ["its name"]
    assert fakes_in(defining) == ["2: FakeLink", "3: _FakeSock"]
    assert fakes_in(tested) == []
