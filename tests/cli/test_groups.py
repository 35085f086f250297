"""The command groups: assembled in one parser, each light to import."""

from __future__ import annotations

import ast
import json
import subprocess
import sys
from pathlib import Path

import pytest

import volee_desktop.cli
from volee_desktop.cli import main

CLI_DIR = Path(volee_desktop.cli.__file__).resolve().parent


def test_spawn_sends_the_allowed_environment_without_loading_the_daemon() -> None:
    code = (
        "import json, os, sys\n"
        "os.environ['VOLEE_SECRET_TOKEN'] = 'x'\n"
        "os.environ['ANTHROPIC_API_KEY'] = 'k'\n"
        "from volee_desktop.cli import common, main\n"
        "calls = []\n"
        "def call(args, method, **params):\n"
        "    calls.append([method, params])\n"
        "    return {'id': 'ag_x'}\n"
        "common.call = call\n"
        "status = main.main(['spawn', '--name', 'n', '--', 'fix', 'it'])\n"
        "daemon = sorted(m for m in sys.modules if m.startswith('volee_desktop.daemon'))\n"
        "print(json.dumps({'status': status, 'calls': calls, 'daemon': daemon}))\n"
    )
    result = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=30
    )
    assert result.returncode == 0, result.stderr
    out = json.loads(result.stdout.splitlines()[-1])
    assert out["daemon"] == []
    assert out["status"] == 0
    [[method, params]] = out["calls"]
    assert method == "agents.spawn"
    assert params["prompt"] == "fix it"
    assert params["env"]["ANTHROPIC_API_KEY"] == "k"
    assert "VOLEE_SECRET_TOKEN" not in params["env"]


def test_every_group_is_in_the_one_parser() -> None:
    parser = main.build_parser()
    for argv in (
        ["ls"],
        ["spawn", "--", "x"],
        ["daemon", "status"],
        ["daemon", "install"],
        ["daemon", "uninstall"],
        ["mission", "ls"],
        ["tidy"],
        ["mcp"],
        ["app"],
    ):
        assert callable(parser.parse_args(argv).func), argv


def _cli_sources() -> list[tuple[Path, ast.Module]]:
    return [(p, ast.parse(p.read_text())) for p in sorted(CLI_DIR.glob("*.py"))]


ARGPARSE_INTERNALS = frozenset({"_actions", "_SubParsersAction", "_subparsers", "_registries"})


def test_no_cli_module_reaches_into_argparse_internals() -> None:
    found = [
        f"{path.name}:{node.lineno}: {node.attr}"
        for path, tree in _cli_sources()
        for node in ast.walk(tree)
        if isinstance(node, ast.Attribute) and node.attr in ARGPARSE_INTERNALS
    ]
    assert found == []


def test_the_groups_import_common_and_not_each_other() -> None:
    groups = {"agents", "daemon", "missions"}
    found = []
    for path, tree in _cli_sources():
        if path.stem not in groups and path.stem != "common":
            continue
        for node in ast.walk(tree):
            if isinstance(node, ast.ImportFrom) and node.level == 1:
                names = {node.module} if node.module else {a.name for a in node.names}
                found.extend(f"{path.stem} -> {n}" for n in names if n != "common")
    assert found == []


@pytest.mark.parametrize(("flags", "refreshed"), [([], True), (["--no-refresh"], False)])
def test_volee_ls_asks_discovery_for_a_fresh_listing_unless_told_not_to(
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    flags: list[str],
    refreshed: bool,
) -> None:
    # Seed 002: `volee ls` sends a discovery.refresh (answered at once when nothing is new).
    from volee_desktop.cli import agents as cli_agents

    calls: list[str] = []

    class Client:
        def __enter__(self) -> Client:
            return self

        def __exit__(self, *_exc: object) -> None:
            return None

        def call(self, method: str, **_params: object) -> object:
            calls.append(method)
            return [] if method == "agents.list" else {"listed": False, "fresh": True}

    monkeypatch.setattr(cli_agents, "connect", lambda _dirs: Client())

    assert main.main(["ls", "--json", *flags]) == 0

    assert calls == (["discovery.refresh", "agents.list"] if refreshed else ["agents.list"])
    assert capsys.readouterr().out.strip() == "[]"
