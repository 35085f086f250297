"""Every method named once (``ipc/methods.py``), and its parameters decoded once, typed.

The names: the daemon registers exactly the ``Method`` members, and no module writes a method's
name as a string literal (the two stdlib-only entry points excepted, checked here).  The
parameters: each handler the table holds takes a typed value, not a ``dict[str, Any]``; the
requests the current CLI and app send decode to the values the handlers read before, and a
wrong type is a ``bad_request`` naming the parameter and what it must be.
"""

from __future__ import annotations

import inspect
import io
import tokenize
import typing
from collections.abc import AsyncIterator
from dataclasses import fields
from pathlib import Path
from typing import Any

import pytest

from volee_desktop.core.model import Harness, Message, MessageKind, Mission, MissionKind, Role
from volee_desktop.daemon.agents.limits import ContinueParams
from volee_desktop.daemon.agents.runner import (
    HarnessesParams,
    ResumeParams,
    ScreenParams,
    SendParams,
)
from volee_desktop.daemon.errors import Refused
from volee_desktop.daemon.machines.runner import ListParams as ListMachines
from volee_desktop.daemon.machines.runner import ReloadParams
from volee_desktop.daemon.main import Daemon
from volee_desktop.daemon.missions.params import (
    AgentOrMission,
    AnswerParams,
    ChangesParams,
    CreateParams,
    DiscardParams,
    EvidenceParams,
    InviteParams,
    JoinParams,
    LogParams,
    MergeParams,
    MissionParams,
    PostParams,
    ReadParams,
    ReportParams,
    SpawnWorkerParams,
    TidyParams,
)
from volee_desktop.daemon.missions.params import ListParams as ListMissions
from volee_desktop.daemon.missions.results import MessageView
from volee_desktop.daemon.params import AgentParams, NoParameters, SpawnParams, decode
from volee_desktop.daemon.serving.access import RULES, UNKNOWN_MAY
from volee_desktop.daemon.serving.desktop import PeerParams
from volee_desktop.daemon.serving.mcphub import SessionParams
from volee_desktop.daemon.serving.queries import ListParams
from volee_desktop.daemon.serving.safety import ConfirmParams
from volee_desktop.daemon.serving.subscriptions import InteractiveParams, SubscribeParams
from volee_desktop.daemon.views import MissionFields
from volee_desktop.ipc.methods import Method
from volee_desktop.ipc.protocol import ErrorCode, IpcError
from volee_desktop.paths import dirs

PACKAGE = Path(__file__).resolve().parents[2] / "volee_desktop"
#: They load nothing of volee's (``-I -S``): the one name each sends is a literal.
STDLIB_ONLY = {"cli/hookshim.py": Method.HOOK, "mcp/relay.py": Method.MCP_SESSION}
#: Their parameters are the answer's (issue 23, item 3): read from a dict until then.
UNTYPED_YET: frozenset[str] = frozenset()


@pytest.fixture
async def daemon() -> AsyncIterator[Daemon]:
    d = await Daemon.start(dirs(), serve=False)
    yield d
    await d.close()


async def test_the_daemon_serves_exactly_the_named_methods(daemon: Daemon) -> None:
    assert set(daemon.api.methods.names) == {str(m) for m in Method}
    assert set(RULES) <= set(Method)
    assert set(UNKNOWN_MAY) <= set(Method)


def method_literals(source: str) -> list[tuple[int, str]]:
    """The string literals of ``source`` that are a method's name (docstrings aside)."""
    names = {str(m) for m in Method}
    found = []
    for token in tokenize.generate_tokens(io.StringIO(source).readline):
        text = token.string
        if token.type != tokenize.STRING or text[:3] in ('"""', "'''") or text[0] not in "\"'":
            continue
        if text[1:-1] in names:
            found.append((token.start[0], text[1:-1]))
    return found


def test_the_literal_scan_finds_a_method_name() -> None:
    assert method_literals('call("agents.list", x="tidy")\n"""agents.get"""\n') == [
        (1, "agents.list"),
        (1, "tidy"),
    ]


# Literals that are the same word but not a method: a sub-command, a harness's argv.
NOT_METHODS = {
    ("cli/conventions.py", "hook"),
    ("cli/conventions.py", "tidy"),
    ("cli/entry.py", "hook"),
    ("cli/main.py", "hook"),
    ("cli/missions.py", "tidy"),
    ("harness/base.py", "hook"),
    # The three methods that carry an answer are written once, in the core (an Answer renders
    # its call); ipc/methods.py's Method takes their values from there.
    ("core/answer.py", "agents.allow"),
    ("core/answer.py", "agents.deny"),
    ("core/answer.py", "agents.answer"),
}


def test_no_module_writes_a_method_name_as_a_string() -> None:
    found = []
    for path in sorted(PACKAGE.rglob("*.py")):
        rel = str(path.relative_to(PACKAGE))
        if rel == "ipc/methods.py":
            continue
        for line, name in method_literals(path.read_text(encoding="utf-8")):
            if (rel, name) in NOT_METHODS or STDLIB_ONLY.get(rel) == name:
                continue
            found.append(f"{rel}:{line}: {name!r}")
    assert not found, "write Method.<NAME> (volee_desktop/ipc/methods.py):\n" + "\n".join(found)


def test_the_stdlib_only_entry_points_send_a_named_method() -> None:
    for rel, method in STDLIB_ONLY.items():
        assert f'"method": "{method}"' in (PACKAGE / rel).read_text(encoding="utf-8"), rel


def untyped_handlers(daemon: Daemon) -> list[str]:
    """The methods whose handler takes its parameters as a ``dict[str, Any]``."""
    found = []
    for name in daemon.api.methods.names:
        handler = daemon.api.methods.handler(name)
        hints = typing.get_type_hints(handler)
        second = list(inspect.signature(handler).parameters)[1]
        if hints[second] == dict[str, Any]:
            found.append(name)
    return found


async def test_every_handler_takes_typed_parameters(daemon: Daemon) -> None:
    untyped = untyped_handlers(daemon)
    print(f"handlers taking dict[str, Any]: {len(untyped)} of {len(daemon.api.methods.names)}")
    assert set(untyped) <= UNTYPED_YET, sorted(set(untyped) - UNTYPED_YET)


def loose(hint: Any) -> str | None:
    """What of ``hint`` mypy cannot see through: ``Any``, or a ``dict[str, Any]``, in it, in
    its arguments (a list's items, a ``Reply``'s result) or in a TypedDict's fields."""
    if hint is Any:
        return "Any"
    if hint == dict[str, Any]:
        return "dict[str, Any]"
    if typing.is_typeddict(hint):
        for key, field in typing.get_type_hints(hint).items():
            found = loose(field)
            if found is not None:
                return f"{hint.__name__}[{key!r}]: {found}"
        return None
    for arg in typing.get_args(hint):
        found = loose(arg)
        if found is not None:
            return found
    return None


def test_the_loose_check_sees_through_results() -> None:
    class Typed(typing.TypedDict):
        names: list[str]

    class Loose(typing.TypedDict):
        raw: list[dict[str, Any]]

    assert loose(Typed) is None
    assert loose(list[Typed] | None) is None
    assert loose(Any) == "Any"
    assert loose(list[dict[str, Any]]) == "dict[str, Any]"
    assert loose(Loose) == "Loose['raw']: dict[str, Any]"


def loose_signatures(daemon: Daemon) -> dict[str, str]:
    """Each method whose handler's signature (parameters or result) mypy cannot see through."""
    found = {}
    for name in daemon.api.methods.names:
        handler = daemon.api.methods.handler(name)
        hints = typing.get_type_hints(handler)
        hints.pop(next(iter(inspect.signature(handler).parameters)))  # the connection
        if "return" not in hints:
            found[name] = "no result annotated"
        for where, hint in hints.items():
            what = loose(hint)
            if what is not None:
                found[name] = f"{where}: {what}"
    return found


async def test_every_handler_answers_a_typed_result(daemon: Daemon) -> None:
    found = loose_signatures(daemon)
    print(
        f"handlers typed: {len(daemon.api.methods.names) - len(found)} of "
        f"{len(daemon.api.methods.names)}"
    )
    assert not found, "\n".join(f"{name}: {what}" for name, what in sorted(found.items()))


# What the CLI and the app send today (their JSON, with and without the optional parameters),
# and the value the handler receives: what the readers of daemon/params.py gave it before.
OLD_REQUESTS: list[tuple[type[Any], dict[str, Any], Any]] = [
    (ListParams, {"all": False}, ListParams(all=False)),
    (ListParams, {"all": True}, ListParams(all=True)),
    (ListParams, {}, ListParams(all=False)),
    (ListParams, {"all": None}, ListParams(all=False)),
    (AgentParams, {"agent": "a1"}, AgentParams(agent="a1")),
    (AgentParams, {"agent": "a1", "extra": 3}, AgentParams(agent="a1")),
    (SubscribeParams, {"since": None}, SubscribeParams(since=None, interactive=True)),
    (
        SubscribeParams,
        {"since": 7, "interactive": False},
        SubscribeParams(since=7, interactive=False),
    ),
    (InteractiveParams, {"interactive": False}, InteractiveParams(interactive=False)),
    (InteractiveParams, {}, InteractiveParams(interactive=True)),
    (NoParameters, {}, NoParameters()),
    (NoParameters, {"whatever": [1]}, NoParameters()),
    (ConfirmParams, {"settings": {"a.b": True}}, ConfirmParams(settings={"a.b": True})),
    (ConfirmParams, {}, ConfirmParams(settings=None)),
    (PeerParams, {"pid": 12, "attempt": "x"}, PeerParams(pid=12, attempt="x")),
    (PeerParams, {"pid": 12, "attempt": ""}, PeerParams(pid=12, attempt=None)),
    (SessionParams, {"agent": "a1"}, SessionParams(agent="a1")),
    (SessionParams, {"agent": ""}, SessionParams(agent=None)),
    (SessionParams, {}, SessionParams(agent=None)),
    # volee spawn "fix the bug" (cli/agents.py cmd_spawn: every key, most of them null)
    (
        SpawnParams,
        {
            "harness": None,
            "prompt": "fix the bug",
            "argv": [],
            "name": None,
            "cwd": "/src/p",
            "worktree": False,
            "role": None,
            "mission": None,
            "model": None,
            "permission_mode": None,
            "env": {"PATH": "/bin"},
            "machine": None,
        },
        SpawnParams(prompt="fix the bug", cwd="/src/p", env={"PATH": "/bin"}),
    ),
    # volee spawn --harness generic --worktree --role coordinator -- sleep 5
    (
        SpawnParams,
        {"harness": "generic", "argv": ["sleep", "5"], "worktree": True, "role": "coordinator"},
        SpawnParams(
            harness=Harness.GENERIC, argv=("sleep", "5"), worktree=True, role=Role.COORDINATOR
        ),
    ),
    # The app's New agent dialog: empty fields for what was not chosen.
    (
        SpawnParams,
        {"harness": "pi", "prompt": "x", "model": "", "name": "", "branch": ""},
        SpawnParams(harness=Harness.PI, prompt="x"),
    ),
    (SendParams, {"agent": "a1", "text": "hi"}, SendParams(agent="a1", text="hi")),
    (SendParams, {"agent": "a1", "text": ""}, SendParams(agent="a1", text=None)),
    (ResumeParams, {"agent": "a1"}, ResumeParams(agent="a1", text=None)),
    (ResumeParams, {"agent": "a1", "text": "go"}, ResumeParams(agent="a1", text="go")),
    (ScreenParams, {"agent": "a1", "lines": 40}, ScreenParams(agent="a1", lines=40)),
    (ScreenParams, {"agent": "a1", "lines": None}, ScreenParams(agent="a1", lines=None)),
    (ContinueParams, {"all": True}, ContinueParams(all=True)),
    (ContinueParams, {"agent": "a1"}, ContinueParams(agent="a1", all=False)),
    (HarnessesParams, {}, HarnessesParams(harness=None)),
    (HarnessesParams, {"harness": "codex"}, HarnessesParams(harness="codex")),
    # volee mission create "goal" --repo . (cli/missions.py cmd_create)
    (
        CreateParams,
        {
            "goal": "ship it",
            "kind": None,
            "repositories": ["/src/p"],
            "workers": None,
            "harness": None,
            "name": None,
            "model": None,
            "permission_mode": None,
            "env": {},
        },
        CreateParams(goal="ship it", repositories=("/src/p",), env={}),
    ),
    (
        CreateParams,
        {"goal": "g", "kind": "analysis", "repositories": "/src/p", "workers": 2},
        CreateParams(goal="g", kind=MissionKind.ANALYSIS, repositories=("/src/p",), workers=2),
    ),
    (ListMissions, {"all": True}, ListMissions(all=True)),
    (MissionParams, {"mission": "m1"}, MissionParams(mission="m1")),
    (AgentOrMission, {"mission": "m1"}, AgentOrMission(mission="m1")),
    (AgentOrMission, {"agent": "", "mission": "m1"}, AgentOrMission(mission="m1")),
    # The MCP tools (mcp/tools.py): spawn_worker, invite_to_mission, join_mission.
    (
        SpawnWorkerParams,
        {"agent": "c", "prompt": "do x", "name": None, "repo": None, "harness": None},
        SpawnWorkerParams(agent="c", prompt="do x"),
    ),
    (InviteParams, {"mission": "m1", "agent": "a"}, InviteParams(agent="a", mission="m1")),
    (JoinParams, {"agent": "a", "mission": "m1"}, JoinParams(agent="a", mission="m1")),
    (
        JoinParams,
        {"agent": "a", "mission": "m1", "joined": False},
        JoinParams(agent="a", mission="m1", joined=False),
    ),
    (
        ReportParams,
        {"agent": "c", "body": "done", "options": ["ok", "no"], "approving": "ok"},
        ReportParams(agent="c", body="done", options=("ok", "no"), approving="ok"),
    ),
    (
        AnswerParams,
        {"mission": "m1", "option": "approve"},
        AnswerParams(mission="m1", option="approve"),
    ),
    (
        PostParams,
        {"sender": "a", "to": ["human"], "body": "hi", "kind": "report"},
        PostParams(sender="a", to=("human",), body="hi", kind=MessageKind.REPORT),
    ),
    (PostParams, {"to": "b", "body": "hi"}, PostParams(to=("b",), body="hi")),
    (
        ReadParams,
        {"agent": "a", "unread_only": False},
        ReadParams(agent="a", unread_only=False),
    ),
    (ReadParams, {}, ReadParams(agent=None, unread_only=True, limit=None, mark=True)),
    (LogParams, {"agent": "a", "tail": 3}, LogParams(agent="a", tail=3)),
    (LogParams, {"agent": "a", "start": 40}, LogParams(agent="a", start=40)),
    (ChangesParams, {"agent": "a", "diff": True}, ChangesParams(agent="a", diff=True)),
    (
        MergeParams,
        {"agent": "a", "squash": False},
        MergeParams(agent="a", squash=False, message=None),
    ),
    (DiscardParams, {"agent": "a", "dry_run": True}, DiscardParams(agent="a", dry_run=True)),
    (TidyParams, {"dry_run": False}, TidyParams(dry_run=False)),
    (ListMachines, {"retry": True}, ListMachines(retry=True)),
    (ReloadParams, {"wait": 5}, ReloadParams(wait=5.0)),
]


@pytest.mark.parametrize(("kind", "sent", "typed"), OLD_REQUESTS)
def test_an_old_style_request_decodes_to_the_same_typed_values(
    kind: type[Any], sent: dict[str, Any], typed: Any
) -> None:
    assert decode(kind, sent) == typed


# A wrong type: bad_request, the parameter named, and what it must be in words.
WRONG: list[tuple[type[Any], dict[str, Any], str, str]] = [
    (ListParams, {"all": "yes"}, "'all'", "must be true or false, not 'yes'"),
    (AgentParams, {"agent": 3}, "'agent'", "must be a string, not 3"),
    (AgentParams, {}, "'agent'", "is required"),
    (AgentParams, {"agent": ""}, "'agent'", "is required"),
    (SubscribeParams, {"since": True}, "'since'", "a whole number >= 0 or null"),
    (SubscribeParams, {"since": -1}, "'since'", "a whole number >= 0 or null"),
    (PeerParams, {"pid": 0}, "'pid'", "a whole number >= 1"),
    (ConfirmParams, {"settings": [1]}, "'settings'", "an object"),
    (ScreenParams, {"agent": "a", "lines": 0}, "'lines'", "a whole number >= 1 or null, not 0"),
    (SpawnParams, {"argv": "sleep 5"}, "'argv'", "a list of strings, not 'sleep 5'"),
    (SpawnParams, {"argv": ["sleep", 5]}, "'argv'", "a list of strings"),
    (SpawnParams, {"env": {"A": 1}}, "'env'", "an object mapping strings to strings"),
    (SpawnParams, {"worktree": "yes"}, "'worktree'", "true or false, not 'yes'"),
    (SpawnParams, {"harness": 3}, "'harness'", "one of claude, codex, pi, generic or null"),
    (ContinueParams, {"all": 1}, "'all'", "true or false, not 1"),
    (PostParams, {"to": [1], "body": "x"}, "'to'", "a list of strings"),
    (PostParams, {"to": ["b"]}, "'body'", "is required"),
    (ReadParams, {"limit": 0}, "'limit'", "a whole number >= 1 or null, not 0"),
    (LogParams, {"agent": "a", "tail": -1}, "'tail'", "a whole number >= 0 or null"),
    (EvidenceParams, {"agent": "a", "delivery": "lots"}, "'delivery'", "delivery evidence"),
    (ReloadParams, {"wait": "soon"}, "'wait'", "a number or null, not 'soon'"),
]


@pytest.mark.parametrize(
    ("sent", "words"),
    [
        ({"harness": "emacs"}, "unknown harness 'emacs'; use one of claude, codex, pi, generic"),
        ({"role": "boss"}, "unknown role 'boss'; use one of"),
    ],
)
def test_an_unknown_name_of_a_closed_set_is_refused_with_the_names(
    sent: dict[str, Any], words: str
) -> None:
    with pytest.raises(Refused, match=words):
        decode(SpawnParams, sent)


@pytest.mark.parametrize(("kind", "sent", "field", "words"), WRONG)
def test_a_wrong_type_is_a_bad_request_naming_the_parameter(
    kind: type[Any], sent: dict[str, Any], field: str, words: str
) -> None:
    with pytest.raises(IpcError) as caught:
        decode(kind, sent)
    assert caught.value.code == ErrorCode.BAD_REQUEST
    assert field in caught.value.message
    assert words in caught.value.message


async def test_a_wrong_type_over_the_table_reaches_no_handler(daemon: Daemon) -> None:
    with pytest.raises(IpcError) as caught:
        await daemon.api.methods(None, Method.AGENTS_GET, {"agent": ["a"]})  # type: ignore[arg-type]
    assert caught.value.code == ErrorCode.BAD_REQUEST
    assert "parameter 'agent' must be a string, not ['a']" in caught.value.message


@pytest.mark.parametrize(
    ("view", "entity", "added"),
    [
        (MissionFields, Mission, set()),
        (MessageView, Message, {"sender_name", "recipient_names"}),
    ],
)
def test_a_view_made_from_an_entity_names_each_of_its_fields(
    view: type[Any], entity: type[Any], added: set[str]
) -> None:
    # Those views are msgspec's builtins of the entity, cast: a field added to the entity
    # must be added to its view (and to docs/ipc.md) for mypy to see it.
    assert set(typing.get_type_hints(view)) == {f.name for f in fields(entity)} | added
