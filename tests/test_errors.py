"""Each package has one root of its errors: catching it catches everything the package raises."""

from __future__ import annotations

import importlib
import inspect
import pkgutil

import pytest

ROOTS = {
    "core": "volee_desktop.core.errors.Error",
    "store": "volee_desktop.store.errors.StoreError",
    "hosts": "volee_desktop.hosts.errors.Error",
    "harness": "volee_desktop.harness.base.Error",
    "ipc": "volee_desktop.ipc.protocol.Error",
    "daemon": "volee_desktop.daemon.errors.Error",
    "app": "volee_desktop.app.errors.Error",
    "cli": "volee_desktop.cli.common.CliError",
    "loginitem": "volee_desktop.loginitem.base.LoginItemError",
    "mcp": "volee_desktop.mcp.protocol.Error",
}


def _root(package: str) -> type[BaseException]:
    module, _, name = ROOTS[package].rpartition(".")
    root: type[BaseException] = getattr(importlib.import_module(module), name)
    return root


# Files run on their own (``python -I -S file.py``): they cannot import their package.
STANDALONE = frozenset({"volee_desktop.cli.hookshim", "volee_desktop.mcp.relay"})


def _errors_of(package: str) -> list[type[BaseException]]:
    found = []
    prefix = f"volee_desktop.{package}"
    names = [prefix] + [
        m.name
        for m in pkgutil.walk_packages(importlib.import_module(prefix).__path__, prefix + ".")
    ]
    for name in names:
        if name.endswith(".__main__") or name in STANDALONE:
            continue
        module = importlib.import_module(name)
        for _, obj in inspect.getmembers(module, inspect.isclass):
            if issubclass(obj, BaseException) and obj.__module__ == name:
                found.append(obj)
    return found


@pytest.mark.parametrize("package", sorted(ROOTS))
def test_every_error_of_a_package_descends_from_its_root(package: str) -> None:
    root = _root(package)
    errors = _errors_of(package)
    assert root in errors
    strays = [f"{e.__module__}.{e.__qualname__}" for e in errors if not issubclass(e, root)]
    assert strays == []


def test_the_errors_named_in_issue_10_have_their_roots() -> None:
    from volee_desktop.daemon import errors, forge, git
    from volee_desktop.daemon.discovery import listers
    from volee_desktop.store import codec, integrity
    from volee_desktop.store.errors import StoreError

    assert issubclass(git.GitError, errors.Error)
    assert issubclass(forge.ForgeError, errors.Error)
    assert issubclass(listers.Error, errors.Error)
    assert issubclass(codec.CodecError, StoreError)
    assert issubclass(codec.CodecError, ValueError)  # still caught where a ValueError was
    assert issubclass(integrity.BadRecord, StoreError)
