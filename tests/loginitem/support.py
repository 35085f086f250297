"""Helpers for login-item tests."""

from __future__ import annotations

import os
from pathlib import Path

Tree = dict[str, str]


def snapshot(root: Path) -> Tree:
    """Every file, folder and link under ``root`` with its content, for before/after compares."""
    tree: Tree = {}
    for path in sorted(root.rglob("*")):
        rel = str(path.relative_to(root))
        if path.is_symlink():
            tree[rel] = f"link -> {os.readlink(path)}"
        elif path.is_dir():
            tree[rel] = "dir"
        else:
            tree[rel] = path.read_bytes().decode("utf-8", "replace")
    return tree
