"""The codex profile: hooks as -c overrides (never the person's files), resume, real payloads."""

from __future__ import annotations

import itertools
import json
import tomllib

import pytest

from volee_desktop.core import events as ev
from volee_desktop.core.model import Harness, LaunchSettings, RequestKind
from volee_desktop.core.states import AgentState
from volee_desktop.harness.base import Error
from volee_desktop.harness.codex import (
    HOOK_EVENTS,
    VOLEE_MODES,
    CodexProfile,
    Modes,
    accepted_modes,
    hook_events,
    permission_args,
)

from .support import AT, SAMPLES, agent, context, sample

S = LaunchSettings(harness=Harness.CODEX, cwd="/p", prompt="fix it", model="o3")


def overrides(argv: tuple[str, ...]) -> dict[str, object]:
    """The ``-c key=value`` pairs of an argv, values parsed as TOML like codex does."""
    out: dict[str, object] = {}
    for flag, value in itertools.pairwise(argv):
        if flag == "-c":
            key, _, toml = value.partition("=")
            out[key] = tomllib.loads(f"v = {toml}")["v"]
    return out


def test_launch_passes_trusted_hooks_as_overrides() -> None:
    plan = CodexProfile().launch("ag_1", S, context("/opt/codex"))

    # Its own codex: no shared background server outliving the agent.
    assert plan.argv[:3] == ("/opt/codex", "--no-daemon", "--dangerously-bypass-hook-trust")
    assert plan.argv[-3:] == ("-m", "o3", "fix it")
    hooks = overrides(plan.argv)
    assert set(hooks) == {f"hooks.{name}" for name in HOOK_EVENTS}
    assert hooks["hooks.Stop"] == [
        {
            "matcher": "",
            "hooks": [
                {"type": "command", "command": "/usr/bin/python3 -m volee_desktop.cli hook Stop"}
            ],
        }
    ]
    # codex picks its session id itself; nothing is written outside volee's folders.
    assert (plan.session_id, plan.files) == (None, {})


def test_hook_command_quotes_odd_paths() -> None:
    ctx = context()
    odd = type(ctx)(
        volee=('/opt/my "vol"ee/python', "-m", "volee_desktop.cli"),
        files_dir=ctx.files_dir,
        session_id=ctx.session_id,
    )
    plan = CodexProfile().launch("ag_1", S, odd)

    command = overrides(plan.argv)["hooks.Stop"][0]["hooks"][0]["command"]  # type: ignore[index]
    assert command == "'/opt/my \"vol\"ee/python' -m volee_desktop.cli hook Stop"


def test_resume_is_codex_resume_with_the_same_settings() -> None:
    settings = LaunchSettings(
        harness=Harness.CODEX,
        cwd="/p",
        argv=("--search",),
        permission_mode="workspace-write",
        prompt="first",
    )
    plan = CodexProfile().resume("ag_1", settings, "01a2-thread", "next", context())

    assert plan.argv[:4] == ("codex", "resume", "--no-daemon", "--dangerously-bypass-hook-trust")
    assert plan.argv[-5:] == ("-s", "workspace-write", "--search", "01a2-thread", "next")
    assert "first" not in plan.argv
    assert plan.session_id == "01a2-thread"


@pytest.mark.parametrize(
    ("mode", "args"),
    [
        (None, []),
        ("read-only", ["-s", "read-only"]),
        ("on-request", ["-a", "on-request"]),
        ("bypassPermissions", ["--dangerously-bypass-approvals-and-sandbox"]),
    ],
)
def test_permission_modes(mode: str | None, args: list[str]) -> None:
    assert permission_args(mode) == args


def test_unknown_permission_mode_names_the_allowed_ones() -> None:
    with pytest.raises(Error, match=r"no permission mode 'ask'; use one of default, accept"):
        permission_args("ask")


#: What the pinned codex 0.171.0 prints for --help (captured from the real binary).
HELP_0171 = (SAMPLES / "codex-0.171.0-help.txt").read_text()
CODEX_0171 = Modes(
    sandbox=("read-only", "workspace-write", "danger-full-access"),
    approval=("on-request", "never"),
)


def test_the_modes_codex_0171_accepts_are_read_from_its_help() -> None:
    assert accepted_modes(HELP_0171) == CODEX_0171


def test_a_help_without_the_options_says_nothing() -> None:
    assert accepted_modes("Usage: codex [OPTIONS]\n  -h, --help\n") is None


@pytest.mark.parametrize(
    ("mode", "args"),
    [
        ("default", ["-s", "workspace-write", "-a", "on-request"]),
        ("acceptEdits", ["-s", "workspace-write", "-a", "on-request"]),
        ("manual", ["-s", "read-only", "-a", "on-request"]),
        ("plan", ["-s", "read-only", "-a", "never"]),
        ("never", ["-a", "never"]),
        ("danger-full-access", ["-s", "danger-full-access"]),
        ("bypassPermissions", ["--dangerously-bypass-approvals-and-sandbox"]),
    ],
)
def test_volee_modes_map_to_a_sandbox_and_an_approval_policy(mode: str, args: list[str]) -> None:
    assert permission_args(mode, CODEX_0171) == args


@pytest.mark.parametrize("mode", ["untrusted", "on-failure"])
def test_policies_codex_0171_dropped_are_refused_listing_what_it_takes(mode: str) -> None:
    settings = LaunchSettings(harness=Harness.CODEX, cwd="/p", permission_mode=mode)
    with pytest.raises(Error) as caught:
        CodexProfile().check_modes(settings, HELP_0171, "0.171.0")
    text = str(caught.value)
    assert f"this codex has no permission mode {mode!r}" in text
    assert "on-request, never" in text
    assert "untrusted" not in text.split("use one of")[1]
    assert text.endswith("(codex 0.171.0)")


def test_every_volee_mode_is_taken_by_codex_0171() -> None:
    for mode in (*VOLEE_MODES, "bypassPermissions"):
        settings = LaunchSettings(harness=Harness.CODEX, cwd="/p", permission_mode=mode)
        CodexProfile().check_modes(settings, HELP_0171, "0.171.0")


def test_a_volee_mode_whose_mapping_this_codex_lacks_is_refused() -> None:
    older = Modes(sandbox=("read-only",), approval=("on-request",))
    with pytest.raises(Error, match="this codex has no permission mode 'plan'"):
        permission_args("plan", older)


def test_a_help_volee_cannot_read_lets_the_launch_tell() -> None:
    settings = LaunchSettings(harness=Harness.CODEX, cwd="/p", permission_mode="untrusted")
    CodexProfile().check_modes(settings, "garbled", "0.171.0")


def test_session_start_links_the_session_codex_reports() -> None:
    payload = sample("codex-hook-SessionStart-startup")
    events = hook_events(agent(Harness.CODEX, AgentState.LAUNCHING), "SessionStart", payload, AT)

    linked = [e for e in events if isinstance(e, ev.SessionLinked)]
    assert [(e.session, e.how) for e in linked] == [(payload["session_id"], "started")]
    assert [e.model for e in events if isinstance(e, ev.ModelChanged)] == ["fake-model"]
    assert [e.state for e in events if isinstance(e, ev.StateChanged)] == [AgentState.IDLE]


def test_resume_keeps_the_session() -> None:
    payload = sample("codex-hook-SessionStart-resume")
    a = agent(Harness.CODEX, AgentState.STOPPED, sessions=(payload["session_id"],))

    events = hook_events(a, "SessionStart", payload, AT)

    assert not any(isinstance(e, ev.SessionLinked) for e in events)
    assert [e.state for e in events if isinstance(e, ev.StateChanged)] == [AgentState.IDLE]


@pytest.mark.parametrize(
    ("hook", "state", "activity"),
    [
        ("UserPromptSubmit", AgentState.WORKING, None),
        ("PreToolUse", AgentState.WORKING, "Bash: echo s > s.txt"),
        ("PostToolUse", AgentState.WORKING, "Bash: echo s > s.txt"),
        ("Stop", AgentState.DONE, None),
    ],
)
def test_turn_hooks(hook: str, state: AgentState, activity: str | None) -> None:
    payload = sample(f"codex-hook-{hook}")
    a = agent(Harness.CODEX, AgentState.IDLE, sessions=(payload["session_id"],))

    events = hook_events(a, hook, payload, AT)

    assert [e.state for e in events if isinstance(e, ev.StateChanged)] == [state]
    got = [e.activity for e in events if isinstance(e, ev.ActivityRecorded)]
    assert got == ([activity] if activity else [])


def test_permission_request_and_own_exit() -> None:
    base = sample("codex-hook-PreToolUse")
    a = agent(Harness.CODEX, sessions=(base["session_id"],))
    asked = hook_events(
        a, "PermissionRequest", {**base, "hook_event_name": "PermissionRequest"}, AT
    )
    left = hook_events(a, "SessionEnd", {**base, "reason": "prompt_input_exit"}, AT)

    assert [(e.state, e.detail) for e in asked if isinstance(e, ev.StateChanged)] == [
        (AgentState.NEEDS_INPUT, "permission for Bash")
    ]
    assert [e.reason for e in left if isinstance(e, ev.StopRequested)] == ["you left codex"]


def test_every_sample_is_understood() -> None:
    for path in sorted(SAMPLES.glob("codex-hook-*.json")):
        payload = json.loads(path.read_text())
        hook_events(agent(Harness.CODEX), payload["hook_event_name"], payload, AT)


def test_a_permission_request_carries_codexs_stated_reason() -> None:
    payload = {
        **sample("codex-hook-PreToolUse"),
        "hook_event_name": "PermissionRequest",
        "tool_name": "Bash",
        "tool_input": {"command": "touch second.txt", "description": "I need to create it"},
    }
    a = agent(harness=Harness.CODEX, sessions=(payload["session_id"],))

    events = hook_events(a, "PermissionRequest", payload, AT)
    [changed] = [e for e in events if isinstance(e, ev.StateChanged) and e.request is not None]

    assert changed.request is not None
    assert changed.request.kind is RequestKind.PERMISSION
    assert changed.request.summary == "Bash: touch second.txt"
    assert changed.request.reason == "I need to create it"
