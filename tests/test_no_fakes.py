"""Fakes live under tests/fakes/, never in the package people install."""

from __future__ import annotations

import ast
from pathlib import Path

import volee_desktop

PACKAGE_DIR = Path(volee_desktop.__file__).resolve().parent


def test_no_module_of_the_package_defines_a_fake() -> None:
    found = []
    for path in sorted(PACKAGE_DIR.rglob("*.py")):
        rel = path.relative_to(PACKAGE_DIR)
        if path.stem in ("testing", "fakes"):
            found.append(str(rel))
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.ClassDef) and node.name.lstrip("_").startswith("Fake"):
                found.append(f"{rel}:{node.lineno}: {node.name}")
    assert found == []
