"""The layering rule (architecture.md, "Layers"), enforced on the source with ``ast``.

core imports only the stdlib (minus anything that does IO, reads the clock or
draws randomness) and itself; store imports core, the stdlib and msgspec;
hosts import only the stdlib (no asyncio, no psutil, no core) and ``lean`` (the
stdlib-only module the lean processes share); ipc imports only core, paths, ``lean``
and the stdlib (it sits below the daemon); only app imports Qt or qasync.  Inside
every package the modules import each other without a circle (the import graph of
each package is acyclic).  Every import counts, including those under ``if
TYPE_CHECKING``, inside functions, and ``importlib.import_module("...")`` with a
literal name.
"""

from __future__ import annotations

import ast
import sys
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

import volee_desktop

PACKAGE_DIR = Path(volee_desktop.__file__).resolve().parent
ROOT = PACKAGE_DIR.parent
STDLIB = frozenset(sys.stdlib_module_names)

# Stdlib modules the core must not touch: IO, processes, the clock, randomness, concurrency.
CORE_FORBIDDEN = frozenset(
    {
        "asyncio",
        "os",
        "sys",
        "time",
        "random",
        "socket",
        "subprocess",
        "sqlite3",
        "threading",
        "pathlib",
        "io",
        "shutil",
        "tempfile",
        "uuid",
        "secrets",
    }
)
# Calls that read the clock or do IO without an import (datetime.now, open, print...).
CORE_FORBIDDEN_CALLS = frozenset({"open", "input", "print", "breakpoint"})
CLOCK_ATTRIBUTES = frozenset({"now", "utcnow", "today"})
# pathlib's pure classes only compute on strings: the core may use them, never Path.
PURE_PATHLIB = frozenset({"pathlib.PurePath", "pathlib.PurePosixPath", "pathlib.PureWindowsPath"})
QT = frozenset({"PySide6", "shiboken6", "qasync"})
# The root package holds only the version (a test below keeps it so): no layer.
ROOT_PACKAGE = "volee_desktop"
# The stdlib-only facts of the lean processes (tests/test_lean_module.py: it imports no other).
LEAN = "volee_desktop.lean"


@dataclass(frozen=True)
class Use:
    """One import (or forbidden call) found in a module."""

    path: str
    line: int
    name: str

    def __str__(self) -> str:
        return f"{self.path}:{self.line}: {self.name}"


def module_name(path: Path) -> str:
    """The dotted name of a module file under the project root."""
    parts = list(path.relative_to(ROOT).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def _resolve(module: str, node: ast.ImportFrom, is_package: bool) -> str:
    if not node.level:
        return node.module or ""
    # A package's own __init__ counts as level 1 of itself; a module's as its parent.
    base = module.split(".") if is_package else module.split(".")[:-1]
    base = base[: len(base) - (node.level - 1)]
    return ".".join([*base, node.module] if node.module else base)


def _imports_dynamically(func: ast.expr) -> bool:
    if isinstance(func, ast.Name):
        return func.id == "__import__"
    return isinstance(func, ast.Attribute) and func.attr == "import_module"


def imports_in(source: str, module: str, path: str, is_package: bool = False) -> list[Use]:
    """Every module imported by ``source`` (absolute names), with its line."""
    found: list[Use] = []
    for node in ast.walk(ast.parse(source, filename=path)):
        if isinstance(node, ast.Import):
            found.extend(Use(path, node.lineno, alias.name) for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            target = _resolve(module, node, is_package)
            for alias in node.names:
                # Keep the imported name: `from volee_desktop import paths` imports a module
                # of another layer, and `from pathlib import PurePath` is pure.
                name = target if alias.name == "*" else f"{target}.{alias.name}"
                found.append(Use(path, node.lineno, name))
        elif isinstance(node, ast.Call) and node.args and _imports_dynamically(node.func):
            arg = node.args[0]
            literal = arg.value if isinstance(arg, ast.Constant) else None
            # A relative name needs `package=`: not followed; neither is a computed name.
            if isinstance(literal, str) and not literal.startswith("."):
                found.append(Use(path, node.lineno, literal))
    # ast.walk is breadth-first: report in source order.
    return sorted(found, key=lambda use: use.line)


def forbidden_calls_in(source: str, path: str) -> list[Use]:
    """Calls that do IO or read the clock: open(), print(), datetime.now(), date.today()..."""
    found: list[Use] = []
    for node in ast.walk(ast.parse(source, filename=path)):
        if not isinstance(node, ast.Call):
            continue
        func = node.func
        if isinstance(func, ast.Name) and func.id in CORE_FORBIDDEN_CALLS:
            found.append(Use(path, node.lineno, f"{func.id}() call"))
        elif isinstance(func, ast.Attribute) and func.attr in CLOCK_ATTRIBUTES:
            owner = func.value
            owner_name = (
                owner.id
                if isinstance(owner, ast.Name)
                else owner.attr
                if isinstance(owner, ast.Attribute)
                else ""
            )
            if owner_name in ("datetime", "date"):
                found.append(Use(path, node.lineno, f"{owner_name}.{func.attr}() call"))
    return found


def modules(under: str = "") -> Iterator[tuple[Path, str, str]]:
    """(path, dotted name, source) of every module of volee_desktop (or of a subpackage)."""
    for path in sorted((PACKAGE_DIR / under).rglob("*.py")):
        yield path, module_name(path), path.read_text(encoding="utf-8")


def module_imports(under: str = "") -> Iterator[Use]:
    """Every import in volee_desktop (or in one of its subpackages)."""
    for path, name, source in modules(under):
        rel = str(path.relative_to(ROOT))
        yield from imports_in(source, name, rel, is_package=path.name == "__init__.py")


def _within(name: str, package: str) -> bool:
    return name == package or name.startswith(package + ".")


def _top(name: str) -> str:
    return name.split(".")[0]


def core_allows(name: str) -> bool:
    """core: the stdlib minus IO/clock/randomness, and the core itself."""
    if _within(name, "volee_desktop.core") or name in PURE_PATHLIB or name == ROOT_PACKAGE:
        return True
    return _top(name) in STDLIB and _top(name) not in CORE_FORBIDDEN


def store_allows(name: str) -> bool:
    """store: the stdlib, msgspec, the core and the store itself."""
    if name == ROOT_PACKAGE:
        return True
    if _within(name, "volee_desktop.store") or _within(name, "volee_desktop.core"):
        return True
    return _top(name) == "msgspec" or _top(name) in STDLIB


def hosts_allows(name: str) -> bool:
    """hosts: the stdlib without asyncio, and ``lean`` (a host runs for every agent: it stays
    lean)."""
    if _within(name, "volee_desktop.hosts") or name in {ROOT_PACKAGE, LEAN}:
        return True
    return _top(name) in STDLIB and _top(name) != "asyncio"


def ipc_allows(name: str) -> bool:
    """ipc: the stdlib, the core, ``paths`` (where the socket is), ``lean`` (the socket rule)
    and itself; it sits below the daemon (which serves through it) and the clients alike."""
    if name == ROOT_PACKAGE or _within(name, "volee_desktop.ipc"):
        return True
    if _within(name, "volee_desktop.paths") or name == LEAN:
        return True
    return _within(name, "volee_desktop.core") or _top(name) in STDLIB


def offences(uses: Iterator[Use] | list[Use], allows: Callable[[str], bool]) -> list[str]:
    """The imports a layer's rule refuses, one line each."""
    return [str(use) for use in uses if not allows(use.name)]


def package_graph(sources: dict[str, tuple[str, str]]) -> dict[str, set[str]]:
    """Which modules of one package each module imports: ``{module: {module, ...}}``.

    ``sources`` maps the dotted name of each module of the package (not its ``__init__``)
    to its (path, source).  ``from .git import x`` and ``from . import git`` both import git.
    """
    graph: dict[str, set[str]] = {name: set() for name in sources}
    for name, (path, source) in sources.items():
        for use in imports_in(source, name, path):
            target = use.name
            while target and target not in sources:
                target = target.rpartition(".")[0]
            if target and target != name:
                graph[name].add(target)
    return graph


def circles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The groups of modules that import each other in a circle (Tarjan's strongly connected
    components of more than one module), each sorted, in order of their first module."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []

    def visit(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        on_stack.add(node)
        for other in sorted(graph[node]):
            if other not in index:
                visit(other)
                low[node] = min(low[node], low[other])
            elif other in on_stack:
                low[node] = min(low[node], index[other])
        if low[node] == index[node]:
            group = []
            while True:
                member = stack.pop()
                on_stack.discard(member)
                group.append(member)
                if member == node:
                    break
            if len(group) > 1:
                found.append(sorted(group))

    for node in sorted(graph):
        if node not in index:
            visit(node)
    return sorted(found)


def packages() -> dict[str, dict[str, tuple[str, str]]]:
    """Every package of volee_desktop with the (path, source) of each of its modules."""
    found: dict[str, dict[str, tuple[str, str]]] = {}
    for path, name, source in modules():
        if path.name == "__init__.py":
            found.setdefault(name, {})
            continue
        package = name.rpartition(".")[0]
        found.setdefault(package, {})[name] = (str(path.relative_to(ROOT)), source)
    return found


def _report(title: str, found: list[str]) -> str:
    return f"{title} ({len(found)}):\n  " + "\n  ".join(found)


# --- the rules -----------------------------------------------------------------------------


def test_the_layout_is_where_the_rules_expect_it() -> None:
    # A moved package would make every rule below pass on nothing.
    for package in ("core", "store", "hosts", "app"):
        assert (PACKAGE_DIR / package / "__init__.py").is_file(), package
    assert len(list(modules("core"))) >= 5


def test_the_root_package_imports_nothing() -> None:
    # Every layer may import the root package (for its version or location) only because
    # importing it pulls in no layer.
    source = (PACKAGE_DIR / "__init__.py").read_text(encoding="utf-8")
    uses = imports_in(source, "volee_desktop", "volee_desktop/__init__.py", is_package=True)
    assert [u.name for u in uses if u.name != "__future__.annotations"] == []


def test_core_imports_only_the_stdlib_and_itself() -> None:
    found = offences(module_imports("core"), core_allows)
    assert not found, _report(
        "core must import only the stdlib (no IO, clock, randomness or asyncio) and "
        "volee_desktop.core; offending imports",
        found,
    )


def test_core_never_reads_the_clock_or_does_io() -> None:
    found = [
        str(use)
        for path, _name, source in modules("core")
        for use in forbidden_calls_in(source, str(path.relative_to(ROOT)))
    ]
    assert not found, _report("core calls that read the clock or do IO", found)


def test_only_app_imports_qt_or_qasync() -> None:
    found = [
        str(use)
        for use in module_imports()
        if _top(use.name) in QT and not use.path.startswith("volee_desktop/app/")
    ]
    assert not found, _report("PySide6/qasync imported outside volee_desktop/app/", found)


def test_store_imports_only_core_stdlib_and_msgspec() -> None:
    found = offences(module_imports("store"), store_allows)
    assert not found, _report("store must import only core, the stdlib and msgspec", found)


def test_hosts_import_only_the_stdlib() -> None:
    found = offences(module_imports("hosts"), hosts_allows)
    assert not found, _report(
        "hosts must import only the stdlib (no asyncio, psutil or core)", found
    )


def test_ipc_imports_only_core_and_the_stdlib() -> None:
    found = offences(module_imports("ipc"), ipc_allows)
    assert not found, _report(
        "ipc must import only core, paths and the stdlib (never the daemon)", found
    )


def test_no_package_imports_itself_in_a_circle() -> None:
    found = [
        " -> ".join(member.rpartition(".")[2] for member in group) + f" (in {package})"
        for package, sources in sorted(packages().items())
        for group in circles(package_graph(sources))
    ]
    assert not found, _report(
        "modules of one package import each other in a circle (the graph must be acyclic: "
        "pass what a module needs to it, or move what both need to a third module)",
        found,
    )


# The daemon's rooms (architecture.md, "The daemon's rooms"): the kernel at the package's root,
# one package per capability.  Each may import only what this table names (and the layers
# below the daemon); ``daemon.main``, the composition root, may import every room.
DAEMON = "volee_desktop.daemon"
ROOMS: dict[str, frozenset[str]] = {
    "kernel": frozenset({"kernel"}),
    "agents": frozenset({"kernel", "agents"}),
    "discovery": frozenset({"kernel", "discovery"}),
    "missions": frozenset({"kernel", "agents", "missions"}),
    "machines": frozenset({"kernel", "machines"}),
    "serving": frozenset({"kernel", "agents", "serving"}),
}
COMPOSITION_ROOT = f"{DAEMON}.main"


def room_of(name: str) -> str | None:
    """The room a module of the daemon is in (``kernel`` for the root's modules), or None for
    a name outside the daemon; ``main`` is a room of its own."""
    if not _within(name, DAEMON) or name == DAEMON:
        return None
    head = name[len(DAEMON) + 1 :].split(".")[0]
    if f"{DAEMON}.{head}" == COMPOSITION_ROOT:
        return "main"
    return head if head in ROOMS else "kernel"


def room_offences(uses: Iterator[Use] | list[Use], module: str) -> list[str]:
    """The imports of one daemon module that go to a room its own may not import."""
    here = room_of(module)
    if here == "main":
        return []
    allowed = ROOMS.get(here or "", frozenset())
    found = []
    for use in uses:
        there = room_of(use.name)
        if there is not None and (there == "main" or there not in allowed):
            found.append(f"{use} ({here} -> {there})")
    return found


def test_the_daemon_has_its_rooms_each_saying_what_it_owns() -> None:
    for room in ROOMS:
        if room == "kernel":
            continue
        init = PACKAGE_DIR / "daemon" / room / "__init__.py"
        assert init.is_file(), room
        doc = ast.get_docstring(ast.parse(init.read_text(encoding="utf-8")))
        assert doc, f"{room}/__init__.py has no docstring"
        assert "owns" in doc, f"{room}/__init__.py must say what the room owns"
        assert len(list(modules(f"daemon/{room}"))) >= 3, room
    subpackages = {p.parent.name for p in (PACKAGE_DIR / "daemon").glob("*/__init__.py")}
    assert subpackages == set(ROOMS) - {"kernel"}


def test_the_daemon_rooms_import_one_way() -> None:
    found = []
    for path, name, source in modules("daemon"):
        rel = str(path.relative_to(ROOT))
        uses = imports_in(source, name, rel, is_package=path.name == "__init__.py")
        found += room_offences(uses, name)
    assert not found, _report(
        "a room of the daemon imports one it may not (tests/test_layers.py ROOMS; pass what it "
        "needs to its constructor instead)",
        found,
    )


def test_the_room_rule_refuses_an_upward_arrow() -> None:
    up = [Use("x.py", 1, f"{DAEMON}.serving.access.Rule")]
    assert room_offences(up, f"{DAEMON}.agents.runner") == [
        f"x.py:1: {DAEMON}.serving.access.Rule (agents -> serving)"
    ]
    assert room_offences(up, f"{DAEMON}.serving.api") == []
    assert room_offences(up, COMPOSITION_ROOT) == []
    to_main = [Use("x.py", 2, f"{COMPOSITION_ROOT}.Daemon")]
    assert room_offences(to_main, f"{DAEMON}.errors") == [
        f"x.py:2: {COMPOSITION_ROOT}.Daemon (kernel -> main)"
    ]
    kernel_up = [Use("x.py", 3, f"{DAEMON}.agents")]
    assert room_offences(kernel_up, f"{DAEMON}.params") == [
        f"x.py:3: {DAEMON}.agents (kernel -> agents)"
    ]
    assert room_offences([Use("x.py", 4, "volee_desktop.core.model")], f"{DAEMON}.params") == []


# --- the checker itself (else the rules above could pass on nothing) -----------------------

BAD_CORE = """\
from __future__ import annotations
import os, json
import random as rnd
from typing import TYPE_CHECKING
from datetime import datetime
from pathlib import PurePosixPath, Path
from . import events
from .model import Agent
from ..store import codec
from .. import paths
import psutil
if TYPE_CHECKING:
    import asyncio
importlib.import_module("subprocess")
__import__("sqlite3")
stamp = datetime.now()
today = datetime.date.today()
open("x")
"""


def test_the_checker_finds_every_kind_of_import() -> None:
    uses = imports_in(BAD_CORE, "volee_desktop.core.fake", "core/fake.py")
    assert [u.name for u in uses] == [
        "__future__.annotations",
        "os",
        "json",
        "random",
        "typing.TYPE_CHECKING",
        "datetime.datetime",
        "pathlib.PurePosixPath",
        "pathlib.Path",
        "volee_desktop.core.events",
        "volee_desktop.core.model.Agent",
        "volee_desktop.store.codec",
        "volee_desktop.paths",
        "psutil",
        "asyncio",
        "subprocess",
        "sqlite3",
    ]


def test_the_core_rule_lists_every_offending_import() -> None:
    uses = imports_in(BAD_CORE, "volee_desktop.core.fake", "core/fake.py")
    assert offences(uses, core_allows) == [
        "core/fake.py:2: os",
        "core/fake.py:3: random",
        "core/fake.py:6: pathlib.Path",
        "core/fake.py:9: volee_desktop.store.codec",
        "core/fake.py:10: volee_desktop.paths",
        "core/fake.py:11: psutil",
        "core/fake.py:13: asyncio",
        "core/fake.py:14: subprocess",
        "core/fake.py:15: sqlite3",
    ]
    assert [str(u) for u in forbidden_calls_in(BAD_CORE, "core/fake.py")] == [
        "core/fake.py:16: datetime.now() call",
        "core/fake.py:17: date.today() call",
        "core/fake.py:18: open() call",
    ]


def test_circles_are_found_through_type_checking_and_function_imports() -> None:
    sources = {
        "p.main": ("p/main.py", "from . import agents\nfrom .leaf import x\n"),
        "p.agents": ("p/agents.py", "from .recovery import Runner\n"),
        "p.recovery": (
            "p/recovery.py",
            "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from .main import Daemon\n",
        ),
        "p.missions": ("p/missions.py", "def f():\n    from .approval import A\n"),
        "p.approval": ("p/approval.py", "from .missions import M\nfrom .leaf import y\n"),
        "p.leaf": ("p/leaf.py", "import os\nfrom ..other import z\n"),
    }
    graph = package_graph(sources)
    assert graph["p.main"] == {"p.agents", "p.leaf"}
    assert graph["p.leaf"] == set()
    assert circles(graph) == [
        ["p.agents", "p.main", "p.recovery"],
        ["p.approval", "p.missions"],
    ]
    del sources["p.recovery"]
    assert circles(package_graph(sources)) == [["p.approval", "p.missions"]]


def test_relative_imports_resolve_from_a_package_init() -> None:
    uses = imports_in(
        "from .codec import x\nfrom ..core import events\n",
        "volee_desktop.store",
        "store/__init__.py",
        is_package=True,
    )
    assert [u.name for u in uses] == ["volee_desktop.store.codec.x", "volee_desktop.core.events"]


def test_from_imports_of_other_packages_keep_their_top_level_name() -> None:
    uses = imports_in(
        "from msgspec import Struct\nfrom PySide6.QtCore import QObject\n", "x", "x.py"
    )
    assert [u.name.split(".")[0] for u in uses] == ["msgspec", "PySide6"]


@pytest.mark.parametrize(
    ("allows", "name", "ok"),
    [
        (store_allows, "msgspec", True),
        (store_allows, "sqlite3", True),
        (store_allows, "volee_desktop.daemon.service", False),
        (store_allows, "volee_desktop.paths", False),
        (hosts_allows, "os", True),
        (hosts_allows, "asyncio", False),
        (hosts_allows, "psutil", False),
        (hosts_allows, "volee_desktop.core.events", False),
        (core_allows, "dataclasses", True),
        (core_allows, "volee_desktop.core", True),
        (core_allows, "volee_desktop.corex", False),
        (core_allows, "uuid", False),
        (core_allows, "pathlib.PurePath", True),
        (core_allows, "pathlib.Path", False),
        (core_allows, "pathlib", False),
        (core_allows, "os.path", False),
        (core_allows, "volee_desktop", True),
        (hosts_allows, "volee_desktop", True),
        (hosts_allows, "volee_desktop.paths", False),
        (ipc_allows, "volee_desktop.core.events", True),
        (ipc_allows, "volee_desktop.ipc.protocol", True),
        (ipc_allows, "socket", True),
        (ipc_allows, "volee_desktop.paths.dirs", True),
        (ipc_allows, "volee_desktop.daemon.serving.api", False),
        (ipc_allows, "volee_desktop.store.codec", False),
    ],
)
def test_layer_rules(allows: Callable[[str], bool], name: str, ok: bool) -> None:
    assert allows(name) is ok
