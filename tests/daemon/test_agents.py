"""Agents in hosts, in-process daemon + real hosts running the fake Claude Code.

The fake (tests/fakes/fake-claude) fires real-shaped hooks through the real ``volee hook``
shim, so each test goes: IPC call -> host -> fake harness -> hook shim -> daemon intake.
"""

from __future__ import annotations

import asyncio
import json
import os
import shutil
import subprocess
import tempfile
import time
from collections.abc import AsyncIterator, Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.leftovers import end_hosts
from tests.polling import until
from volee_desktop.core import events as ev
from volee_desktop.core.answer import Answer
from volee_desktop.core.model import Agent, Request
from volee_desktop.core.states import AgentState
from volee_desktop.daemon.agents import host_io
from volee_desktop.daemon.main import Daemon
from volee_desktop.harness.dialogs import Dialog, Keys
from volee_desktop.harness.env import allowed_env
from volee_desktop.hosts.launcher import HostClient
from volee_desktop.hosts.records import HostRecord, host_alive, program_alive, read_record
from volee_desktop.ipc.aclient import AsyncClient
from volee_desktop.ipc.protocol import IpcError
from volee_desktop.paths import dirs
from volee_desktop.store.codec import decode_event

FAKE_CLAUDE = Path(__file__).resolve().parents[1] / "fakes" / "fake-claude"


class Rig:
    """A daemon, a client of it, a project folder and the fake harness's home."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self.project = root / "p"
        self.project.mkdir()
        self.harness_home = root / "fh"
        self.daemon: Daemon | None = None
        self.client: AsyncClient | None = None

    @property
    def d(self) -> Daemon:
        assert self.daemon is not None
        return self.daemon

    async def start(self) -> None:
        self.daemon = await Daemon.start(dirs())
        self.client = await AsyncClient.connect(self.d.dirs.socket)

    async def restart(self) -> None:
        await self.close()
        await self.start()

    async def close(self) -> None:
        if self.client is not None:
            await self.client.close()
            self.client = None
        if self.daemon is not None:
            await self.daemon.close()
            self.daemon = None

    def env(self, **extra: str) -> dict[str, str]:
        env = allowed_env(dict(os.environ))
        env["FAKE_HARNESS_HOME"] = str(self.harness_home)
        env.update(extra)
        return env

    async def call(self, method: str, **params: Any) -> Any:
        assert self.client is not None
        return await self.client.call(method, params, timeout=30)

    async def spawn(self, prompt: str | None = "hello", **params: Any) -> dict[str, Any]:
        params.setdefault("cwd", str(self.project))
        params.setdefault("env", self.env())
        result: dict[str, Any] = await self.call("agents.spawn", prompt=prompt, **params)
        return result

    def agent(self, agent_id: str) -> Agent:
        return self.d.service.registry.agents[agent_id]

    async def wait(
        self, agent_id: str, check: Callable[[Agent], bool], what: str, timeout: float = 15
    ) -> Agent:

        def checked() -> Agent | None:
            agent = self.d.service.registry.agents.get(agent_id)
            return agent if agent is not None and check(agent) else None

        try:
            return await until(checked, what=what, timeout=timeout)
        except pytest.fail.Exception as failed:
            try:
                screen = (await self.call("agents.screen", agent=agent_id))["text"]
            except IpcError as exc:
                screen = f"(no screen: {exc})"
            agent = self.d.service.registry.agents.get(agent_id)
            pytest.fail(f"{failed.msg}; agent: {agent}\n{screen}")

    async def wait_state(
        self, agent_id: str, state: AgentState, detail: str | None = None
    ) -> Agent:
        return await self.wait(
            agent_id,
            lambda a: a.state is state and (detail is None or a.detail == detail),
            f"{state} {detail or ''}",
        )

    def record(self, agent_id: str) -> HostRecord:
        record = read_record(self.d.agents.record_of(agent_id))
        assert record is not None
        return record

    def events(self, agent_id: str) -> list[ev.Event]:
        decoded = (decode_event(r.type, r.version, r.payload) for r in self.d.log.read(0))
        return [e for e in decoded if getattr(e, "agent", None) == agent_id]

    def rejected(self) -> list[dict[str, Any]]:
        folder = self.d.dirs.spool / "rejected"
        if not folder.is_dir():
            return []
        return [json.loads(p.read_text()) for p in sorted(folder.glob("*.json"))]


@pytest.fixture
def root() -> Iterator[Path]:
    path = Path(tempfile.mkdtemp(prefix="vt", dir="/tmp"))
    yield path
    shutil.rmtree(path, ignore_errors=True)


@pytest.fixture
async def rig(root: Path, monkeypatch: pytest.MonkeyPatch) -> AsyncIterator[Rig]:
    monkeypatch.setenv("VOLEE_CLAUDE_BIN", str(FAKE_CLAUDE))
    the_rig = Rig(root)
    await the_rig.start()
    try:
        yield the_rig
    finally:
        await the_rig.close()
        end_hosts(dirs().state.parent)


# --- the life of an agent -------------------------------------------------------------------


async def test_spawn_works_then_is_done(rig: Rig) -> None:
    view = await rig.spawn("RUN: echo hi > out.txt", name="runner")

    agent = await rig.wait_state(view["id"], AgentState.DONE)

    assert (rig.project / "out.txt").read_text() == "hi\n"
    assert agent.name == "runner"
    assert agent.activity == "Bash: echo hi > out.txt"
    record = rig.record(agent.id)
    # The session volee chose upfront is the one the hooks reported.
    assert list(record.argv[1:3]) == ["--session-id", agent.session]
    assert agent.pid == record.program_pid
    states = [e.state for e in rig.events(agent.id) if isinstance(e, ev.StateChanged)]
    assert states == [AgentState.IDLE, AgentState.WORKING, AgentState.DONE]


async def asking(rig: Rig, command: str = "echo yes > asked.txt") -> dict[str, Any]:
    """An agent whose permission dialog for ``command`` is open and drawn."""
    view = await rig.spawn(f"ASK: {command}")
    await rig.wait_state(view["id"], AgentState.NEEDS_INPUT, "permission for Bash")
    await rig.wait(
        view["id"],
        lambda a: a.request is not None and a.request.summary == f"Bash: {command}",
        "the request in words",
    )
    await rig.wait(
        view["id"],
        lambda _a: "Do you want to proceed?" in rig.d.agents.screens.last_text(view["id"]),
        "the dialog drawn",
    )
    return view


@pytest.fixture
def typed(monkeypatch: pytest.MonkeyPatch) -> list[bytes]:
    """Every key volee types into an agent (answers and messages), in order."""
    from volee_desktop.daemon.agents import answers, screen_keys

    keys: list[bytes] = []
    real_keys, real_send = answers.type_keys, HostClient.send_text

    def type_keys(client: HostClient, data: bytes) -> None:
        keys.append(data)
        real_keys(client, data)

    def send_text(self: HostClient, text: str, enter: bool = True) -> None:
        keys.append(text.encode())
        real_send(self, text, enter)

    monkeypatch.setattr(answers, "type_keys", type_keys)
    monkeypatch.setattr(screen_keys, "type_keys", type_keys)  # agents.keys
    monkeypatch.setattr(HostClient, "send_text", send_text)
    return keys


async def test_allow_runs_the_command_of_the_request(rig: Rig) -> None:
    view = await asking(rig)
    assert not (rig.project / "asked.txt").exists()
    request = rig.agent(view["id"]).request
    assert request is not None

    result = await rig.call("agents.allow", agent=view["name"], request=request.id)

    assert result["answer"] == "allow"
    assert result["summary"] == "Bash: echo yes > asked.txt"
    agent = await rig.wait_state(view["id"], AgentState.DONE)
    assert (rig.project / "asked.txt").read_text() == "yes\n"
    assert agent.request is None
    states = [e.state for e in rig.events(view["id"]) if isinstance(e, ev.StateChanged)]
    assert states[-3:] == [AgentState.NEEDS_INPUT, AgentState.WORKING, AgentState.DONE]
    answered = [e for e in rig.events(view["id"]) if isinstance(e, ev.RequestAnswered)]
    assert [(e.request, e.answer, e.by) for e in answered] == [(request.id, "allow", "human")]


async def test_an_answer_the_dialog_did_not_take_is_typed_again(
    rig: Rig, typed: list[bytes], monkeypatch: pytest.MonkeyPatch
) -> None:
    from volee_desktop.daemon.agents import answers

    monkeypatch.setattr(answers, "TAKEN_WAIT", 0.5)
    view = await rig.spawn("ASK: echo yes > asked.txt", env=rig.env(FAKE_HARNESS_DEAF="1.0"))
    await rig.wait_state(view["id"], AgentState.NEEDS_INPUT, "permission for Bash")

    await rig.call("agents.allow", agent=view["id"])

    await rig.wait_state(view["id"], AgentState.DONE)
    assert (rig.project / "asked.txt").read_text() == "yes\n"
    # The first one came before the dialog listened (at most KEY_TRIES in all).
    assert typed[:2] == [b"1", b"1"]
    assert len(typed) <= 3


async def test_the_keys_of_an_answer_are_asked_for_once_even_when_typed_again(
    rig: Rig, typed: list[bytes], monkeypatch: pytest.MonkeyPatch
) -> None:
    from volee_desktop.daemon.agents import answers

    asked: list[Answer] = []
    real = answers.answer_keys

    def answer_keys(dialog: Dialog, request: Request, answer: Answer) -> Keys | str:
        asked.append(answer)
        return real(dialog, request, answer)

    monkeypatch.setattr(answers, "answer_keys", answer_keys)
    monkeypatch.setattr(answers, "TAKEN_WAIT", 0.5)
    view = await rig.spawn("ASK: echo yes > asked.txt", env=rig.env(FAKE_HARNESS_DEAF="1.0"))
    await rig.wait_state(view["id"], AgentState.NEEDS_INPUT, "permission for Bash")

    await rig.call("agents.allow", agent=view["id"], always=True)

    await rig.wait_state(view["id"], AgentState.DONE)
    assert typed[:2] == [b"2", b"2"]  # typed twice (the first came too soon) ...
    assert asked == [Answer.allow(always=True)]  # ... from the one answer's keys, asked once


async def test_an_answer_never_taken_is_refused_and_the_request_opens_again(
    rig: Rig, typed: list[bytes], monkeypatch: pytest.MonkeyPatch
) -> None:
    from volee_desktop.daemon.agents import answers

    monkeypatch.setattr(answers, "TAKEN_WAIT", 0.2)
    monkeypatch.setattr(answers, "KEY_TRIES", 2)
    view = await rig.spawn("ASK: echo yes > asked.txt", env=rig.env(FAKE_HARNESS_DEAF="3"))
    await rig.wait_state(view["id"], AgentState.NEEDS_INPUT, "permission for Bash")
    first = rig.agent(view["id"]).request
    assert first is not None

    with pytest.raises(IpcError, match=r"did not take the answer \(2 tries"):
        await rig.call("agents.allow", agent=view["id"])

    again = rig.agent(view["id"]).request
    assert again is not None
    assert again.id != first.id
    assert (again.summary, again.answered) == (first.summary, None)
    assert typed == [b"1", b"1"]
    # Once the dialog listens (3 s after it was drawn), the new request is answered as usual.
    monkeypatch.setattr(answers, "TAKEN_WAIT", 1.5)
    monkeypatch.setattr(answers, "KEY_TRIES", 4)
    await rig.call("agents.allow", agent=view["id"], request=again.id)
    await rig.wait_state(view["id"], AgentState.DONE)
    assert (rig.project / "asked.txt").read_text() == "yes\n"


async def test_a_request_names_its_project_folder_and_branch(rig: Rig) -> None:
    git = ["git", "-C", str(rig.project)]
    subprocess.run([*git, "init", "-q", "-b", "feature/login"], check=True)

    view = await asking(rig)
    await rig.wait(view["id"], lambda a: a.branch == "feature/login", "the branch")

    shown = await rig.call("agents.get", agent=view["id"])
    assert shown["project"] == {
        "folder": str(rig.project),
        "name": "p",
        "repo": str(rig.project.resolve()),
        "branch": "feature/login",
    }
    assert shown["request"]["summary"] == "Bash: echo yes > asked.txt"
    assert shown["waiting_since"] == shown["request"]["since"]


async def test_an_answer_never_goes_in_twice(rig: Rig) -> None:
    view = await asking(rig, "SLEEP: 1")
    request = rig.agent(view["id"]).request
    assert request is not None

    first, second = await asyncio.gather(
        rig.call("agents.allow", agent=view["id"]),
        rig.call("agents.allow", agent=view["id"]),
        return_exceptions=True,
    )

    outcomes = sorted([first, second], key=lambda r: isinstance(r, BaseException))
    assert outcomes[0]["answer"] == "allow"  # type: ignore[index]
    assert isinstance(outcomes[1], IpcError)
    assert "already answered" in str(outcomes[1]) or "asks nothing now" in str(outcomes[1])
    answered = [e for e in rig.events(view["id"]) if isinstance(e, ev.RequestAnswered)]
    assert len(answered) == 1
    # Later, once the agent moved on: refused too, saying what it is doing.
    await rig.wait_state(view["id"], AgentState.DONE)
    with pytest.raises(IpcError, match="asks nothing now"):
        await rig.call("agents.allow", agent=view["id"], request=request.id)


async def test_deny_does_not_run_it_and_the_agent_carries_on(rig: Rig) -> None:
    view = await asking(rig)

    result = await rig.call("agents.deny", agent=view["id"], reason="RUN: echo next > next.txt")

    assert result["answer"] == "deny"
    # The reason is the next message: the agent carries on with it.
    await rig.wait(
        view["id"],
        lambda a: a.state is AgentState.DONE and a.activity == "Bash: echo next > next.txt",
        "the agent to carry on with the reason",
    )
    assert not (rig.project / "asked.txt").exists()
    assert (rig.project / "next.txt").read_text() == "next\n"
    details = [e.detail for e in rig.events(view["id"]) if isinstance(e, ev.StateChanged)]
    assert "you denied Bash: echo yes > asked.txt" in details
    # The turn the reason started ended on the denial, not a plain done (issue 26).
    assert rig.agent(view["id"]).outcome == "denied"


async def test_deny_without_a_reason_tells_the_agent_to_carry_on(rig: Rig) -> None:
    view = await asking(rig)

    await rig.call("agents.deny", agent=view["id"])

    agent = await rig.wait_state(view["id"], AgentState.DONE)
    assert not (rig.project / "asked.txt").exists()
    assert agent.request is None
    screen = (await rig.call("agents.output", agent=view["id"], lines=80))["text"]
    assert "[volee] The person denied this: Bash: echo yes > asked.txt" in screen


async def test_send_into_an_open_approval_dialog_is_refused_and_types_nothing(
    rig: Rig, typed: list[bytes]
) -> None:
    view = await asking(rig)

    with pytest.raises(IpcError, match=r"waits for an approval .*use `volee allow"):
        await rig.call("agents.send", agent=view["id"], text="y")

    assert typed == []
    assert rig.agent(view["id"]).state is AgentState.NEEDS_INPUT
    assert not (rig.project / "asked.txt").exists()
    assert not [e for e in rig.events(view["id"]) if isinstance(e, ev.MessagePosted)]


async def test_an_answer_to_another_request_is_refused_and_types_nothing(
    rig: Rig, typed: list[bytes]
) -> None:
    view = await asking(rig)

    with pytest.raises(IpcError, match="no longer asks that; it now asks: Bash: echo yes"):
        await rig.call("agents.allow", agent=view["id"], request="rq_0123456789abcdef")
    done = await rig.spawn("hello")
    await rig.wait_state(done["id"], AgentState.DONE)
    with pytest.raises(IpcError, match=r"asks nothing now \(it is done"):
        await rig.call("agents.allow", agent=done["id"])

    assert typed == []
    assert rig.agent(view["id"]).state is AgentState.NEEDS_INPUT
    assert not (rig.project / "asked.txt").exists()
    # A gone agent: refused too.
    await rig.call("agents.forget", agent=view["id"])
    with pytest.raises(IpcError, match="forgotten"):
        await rig.call("agents.allow", agent=view["id"])
    assert typed == []


async def test_a_dialog_not_on_screen_is_refused_and_nothing_is_typed(
    rig: Rig, typed: list[bytes]
) -> None:
    # The registry says a permission for another command is open (a stale or wrong
    # request): the screen shows another dialog, so nothing is typed.
    view = await asking(rig)
    from volee_desktop.core.requests import permission_request

    other = permission_request(view["id"], time.time(), "Bash", {"command": "rm -rf /"})
    await rig.d.service.commit(
        [
            ev.StateChanged(
                at=time.time(),
                agent=view["id"],
                state=AgentState.NEEDS_INPUT,
                detail="permission for Bash",
                request=other,
            )
        ]
    )

    with pytest.raises(IpcError, match="nothing typed: the dialog on screen asks"):
        await rig.call("agents.allow", agent=view["id"])

    assert typed == []
    assert not (rig.project / "asked.txt").exists()
    assert rig.agent(view["id"]).request == other


async def test_refused_in_its_own_terminal_ends_the_request_and_a_later_allow_is_refused(
    rig: Rig, typed: list[bytes]
) -> None:
    view = await asking(rig)
    request = rig.agent(view["id"]).request
    assert request is not None

    # The person presses Esc where the agent runs: Claude Code fires no hook for that.
    with HostClient(rig.d.agents.socket_of(view["id"])).open_stream() as stream:
        stream.write(b"\x1b")
        agent = await rig.wait_state(view["id"], AgentState.IDLE, "answered in its terminal")

    assert agent.request is None
    with pytest.raises(IpcError, match="asks nothing now"):
        await rig.call("agents.allow", agent=view["id"], request=request.id)
    assert typed == []
    assert not (rig.project / "asked.txt").exists()


async def dialog_seen(rig: Rig) -> tuple[str, str, int]:
    """An asking agent whose dialog a look has seen: (agent id, request id, the dialog's top
    row), no look running, and a read due at once were one asked for."""
    view = await asking(rig)
    agent_id, look = view["id"], rig.d.answers
    await until(lambda: agent_id in look._dialog_top, what="a look that saw the dialog")
    await until(lambda: agent_id not in look._looking, what="no look running")
    look._looked_at.pop(agent_id, None)
    request_id, top = look._dialog_top[agent_id]
    return agent_id, request_id, top


def counted_reads(rig: Rig, monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The agents whose screen is read from now on (``Screens.snapshot``), in order."""
    screens = rig.d.agents.screens
    read = screens.snapshot
    reads: list[str] = []

    async def counted(agent_id: str) -> Any:
        reads.append(agent_id)
        return await read(agent_id)

    monkeypatch.setattr(screens, "snapshot", counted)
    return reads


async def test_redraws_above_an_asking_agents_dialog_read_nothing_in_it_once_per_look_every(
    rig: Rig, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Claude Code blinks its tool line's bullet twice a second while it asks: each blink read
    # the whole screen again (1.4 ms), 0.27 % of a core per asking agent (issue 27). A redraw
    # of rows above the dialog (fed at once, on the loop) reads nothing; one in the dialog's
    # rows reads the screen, at most once per LOOK_EVERY.
    from volee_desktop.daemon.agents import answers

    agent_id, _request_id, top = await dialog_seen(rig)
    screens, look = rig.d.agents.screens, rig.d.answers
    lines = screens.last_text(agent_id).split("\n")
    assert top > 0
    assert "Do you want to proceed?" in "\n".join(lines[top:])
    reads = counted_reads(rig, monkeypatch)
    for i in range(10):  # the bullet of the row above the dialog, blinking
        screens.output(agent_id, f"\x1b[{top};1H{'●' if i % 2 == 0 else ' '}".encode())
        await asyncio.sleep(0.02)
    assert reads == []
    assert screens.last_text(agent_id).split("\n")[top - 1].startswith(" ")  # fed: drawn
    # The dialog's own first row drawn again (the same text): read at once, then no more
    # than once per LOOK_EVERY.
    again = f"\x1b[{top + 1};1H{lines[top][:1] or ' '}".encode()
    screens.output(agent_id, again)
    await until(lambda: reads == [agent_id], what="the read of a redraw in the dialog")
    await until(lambda: agent_id not in look._looking, what="the look's end")
    monkeypatch.setattr(answers, "LOOK_EVERY", 60.0)  # the test span: no read is due
    for _ in range(10):
        screens.output(agent_id, again)
        await asyncio.sleep(0.05)
    assert reads == [agent_id]  # one look waits for its time; the redraws join it
    assert rig.agent(agent_id).state is AgentState.NEEDS_INPUT


async def test_a_redraw_above_the_dialog_is_read_when_not_fed_at_once_or_kept_for_another_request(
    rig: Rig, monkeypatch: pytest.MonkeyPatch
) -> None:
    from volee_desktop.daemon.agents import answers

    agent_id, request_id, top = await dialog_seen(rig)
    screens, look = rig.d.agents.screens, rig.d.answers
    reads = counted_reads(rig, monkeypatch)

    async def blink(data: bytes) -> None:
        await until(lambda: agent_id not in look._looking, what="no look running")
        look._looked_at.pop(agent_id, None)
        reads.clear()
        screens.output(agent_id, data)
        await until(lambda: reads == [agent_id], what="a read of the screen")

    # More than FEED_NOW bytes queued: not fed on the loop, so read as before.
    await blink(f"\x1b[{top};1H ".encode() * (answers.FEED_NOW // 6 + 1))
    # The row kept is another request's (a dialog that came after): read.
    look._dialog_top[agent_id] = ("rq_another", top)
    await blink(f"\x1b[{top};1H ".encode())
    assert look._dialog_top[agent_id] == (request_id, top)  # the read kept this one's


async def test_refused_in_its_own_terminal_while_volee_was_slow_to_read_the_screen(
    rig: Rig, typed: list[bytes], monkeypatch: pytest.MonkeyPatch
) -> None:
    # Under load (ci-9, and 8 of 120 runs beside stress-ng) volee's look at the screen waited
    # for a worker thread while the dialog was drawn and refused: by the time it read the
    # screen, the dialog had come and gone, so it never saw it and took its going for
    # nothing. The dialog is looked for as the output is fed, not only when volee reads.
    screens = rig.d.agents.screens
    read = screens.snapshot
    go = asyncio.Event()

    async def slow(agent_id: str) -> Any:
        await go.wait()  # a worker thread free only after the person answered
        return await read(agent_id)

    monkeypatch.setattr(screens, "snapshot", slow)
    view = await asking(rig)
    with HostClient(rig.d.agents.socket_of(view["id"])).open_stream() as stream:
        stream.write(b"\x1b")
        await rig.wait(
            view["id"],
            lambda _a: "Interrupted" in screens.last_text(view["id"]),
            "the refusal on screen",
        )
        go.set()
        agent = await rig.wait_state(view["id"], AgentState.IDLE, "answered in its terminal")

    assert agent.request is None
    assert typed == []
    assert not (rig.project / "asked.txt").exists()


async def test_refused_in_its_own_terminal_when_its_request_was_told_after_the_dialog_drawn(
    rig: Rig, typed: list[bytes], monkeypatch: pytest.MonkeyPatch
) -> None:
    # Under load (ci-3) the request reached the daemon after its dialog was drawn (a hook
    # late or spooled; the notification's vaguer request was there first): no output came
    # after it, so volee never saw that request's dialog on screen and took the dialog's
    # going for nothing. A request told late is looked for on screen at once.
    from volee_desktop.daemon.params import hook_request

    held: list[Any] = []
    hook = rig.d.intake.hook

    async def late(params: Any, **kw: Any) -> Any:
        if hook_request(params).event in ("PermissionRequest", "Notification"):
            held.append(params)  # answered, not committed yet
            return {"accepted": True, "events": 0}
        return await hook(params, **kw)

    monkeypatch.setattr(rig.d.intake, "hook", late)
    view = await rig.spawn("ASK: echo yes > asked.txt")
    await rig.wait(
        view["id"],
        lambda _a: "Do you want to proceed?" in rig.d.agents.screens.last_text(view["id"]),
        "the dialog drawn",
    )
    assert rig.agent(view["id"]).request is None
    assert len(held) == 2
    for params in held:  # the request and the notification, told late, in their order
        assert (await hook(params))["accepted"]
    request = rig.agent(view["id"]).request
    assert request is not None
    assert request.summary == "Bash: echo yes > asked.txt"

    with HostClient(rig.d.agents.socket_of(view["id"])).open_stream() as stream:
        stream.write(b"\x1b")
        agent = await rig.wait_state(view["id"], AgentState.IDLE, "answered in its terminal")

    assert agent.request is None
    assert agent.detail == "answered in its terminal"
    assert typed == []
    assert not (rig.project / "asked.txt").exists()


async def test_a_program_that_fails_at_once_leaves_what_it_printed(rig: Rig) -> None:
    view = await rig.spawn(
        None,
        harness="generic",
        argv=["/bin/sh", "-c", "echo 'Not logged in · Please run /login'; exit 1"],
        name="no-login",
    )
    await rig.wait(
        view["id"],
        lambda _a: view["id"] in rig.d.agents.screens.last,
        "its last screen kept when it ended",
    )
    await rig.call("agents.stop", agent=view["id"])  # no automatic restart of it

    shown = await rig.call("agents.output", agent=view["id"])

    assert shown["live"] is False
    assert shown["lines"] == ["Not logged in · Please run /login"]


async def spawn_with_a_held_line(
    rig: Rig, monkeypatch: pytest.MonkeyPatch, name: str, before: str = ""
) -> dict[str, Any]:
    """A generic agent (its shell running ``before`` first) that printed "first", then
    "second" 0.2 s later, which its host holds: WATCH_EVERY_MS is 10 s, longer than a test."""
    monkeypatch.setattr(host_io, "WATCH_EVERY_MS", 10_000)
    marker = rig.project / f"{name}.done"
    script = f"{before}echo first; sleep 0.2; echo second; touch {marker}; sleep 60"
    view = await rig.spawn(None, harness="generic", argv=["/bin/sh", "-c", script], name=name)
    await until(marker.exists, what="the second line printed")
    await asyncio.sleep(0.3)  # the host has read it, and holds it
    return view


async def test_a_read_for_a_person_has_the_output_its_host_holds_back(
    rig: Rig, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The host holds the output it sends the daemon back a moment (host_io.WATCH_EVERY_MS):
    ``agents.output`` has it sent first, and shows it."""
    view = await spawn_with_a_held_line(rig, monkeypatch, "held")

    assert "second" not in rig.d.agents.screens.last_text(view["id"])  # a read of its own
    shown = await rig.call("agents.output", agent=view["id"])

    assert "second" in shown["text"]
    assert "first" in shown["text"]


async def test_output_is_the_rendered_screen_and_the_last_one_is_kept(rig: Rig) -> None:
    view = await rig.spawn("RUN: echo printed-before-the-end")
    await rig.wait_state(view["id"], AgentState.DONE)
    live = await rig.call("agents.output", agent=view["id"], lines=10)
    assert live["live"] is True
    assert "printed-before-the-end" in live["text"]
    assert (live["rows"], live["cols"]) == (40, 120)

    await rig.call("agents.send", agent=view["id"], text="CRASH")
    await rig.wait_state(view["id"], AgentState.FAILED)
    await rig.call("agents.stop", agent=view["id"])

    # The program is gone: its last screen stays, also after a daemon restart.
    await rig.restart()
    kept = await rig.call("agents.output", agent=view["id"], lines=10)
    assert kept["live"] is False
    assert "printed-before-the-end" in kept["text"]
    assert kept["lines"][-1].strip() != ""


async def test_send_types_the_text_as_one_paste_then_enter(rig: Rig) -> None:
    view = await rig.spawn(None)
    await rig.wait_state(view["id"], AgentState.IDLE)

    await rig.call("agents.send", agent=view["id"], text="line one\nline two")

    await rig.wait_state(view["id"], AgentState.DONE)
    screen = (await rig.call("agents.screen", agent=view["id"]))["text"]
    assert 'PROMPT 1 paste=1: "line one\\nline two"' in screen


async def test_looking_clears_done_and_a_new_task_clears_it_too(rig: Rig) -> None:
    view = await rig.spawn("first")
    await rig.wait_state(view["id"], AgentState.DONE)

    seen = await rig.call("agents.seen", agent=view["id"])
    assert seen["state"] == "idle"

    await rig.call("agents.send", agent=view["id"], text="second")
    await rig.wait_state(view["id"], AgentState.DONE)
    await rig.call("agents.attach_info", agent=view["id"])
    assert rig.agent(view["id"]).state is AgentState.IDLE


async def test_stop_holds_and_a_message_resumes_the_same_session(rig: Rig) -> None:
    # (The fake takes no --model: the model's pass-through is in tests/harness.)
    view = await rig.spawn("first", permission_mode="manual")
    agent = await rig.wait_state(view["id"], AgentState.DONE)
    session = agent.session
    first = rig.record(agent.id)

    stopped = await rig.call("agents.stop", agent=view["id"])

    assert (stopped["state"], stopped["held"]) == ("stopped", "stopped by you")
    assert rig.record(agent.id).exit is not None
    assert not program_alive(first)

    result = await rig.call("agents.send", agent=view["id"], text="again")

    assert result["resumed"] is True
    agent = await rig.wait(
        view["id"],
        lambda a: a.state is AgentState.DONE and a.held is None,
        "done after the resume, hold lifted",
    )
    again = rig.record(agent.id)
    assert again.host_pid != first.host_pid
    # Same session, same launch settings as recorded at spawn.
    assert list(again.argv[1:3]) == ["--resume", session]
    assert again.argv[-1] == "again"
    assert "--permission-mode" in again.argv
    assert again.argv[again.argv.index("--permission-mode") + 1] == "manual"
    assert agent.session == session
    assert agent.sessions == (session,)


async def test_launch_settings_are_recorded_at_registration(rig: Rig) -> None:
    env = rig.env(FAKE_MARK="42", SECRET_TOKEN="no")
    view = await rig.spawn("RUN: echo $FAKE_MARK > mark.txt", permission_mode="manual", env=env)
    await rig.wait_state(view["id"], AgentState.DONE)

    registered = next(e for e in rig.events(view["id"]) if isinstance(e, ev.AgentRegistered))

    launch = registered.launch
    assert launch is not None
    assert (launch.harness, launch.cwd, launch.permission_mode, launch.prompt) == (
        "claude",
        str(rig.project),
        "manual",
        "RUN: echo $FAKE_MARK > mark.txt",
    )
    assert launch.env["FAKE_MARK"] == "42"
    assert "SECRET_TOKEN" not in launch.env  # only the allow-list is recorded and passed
    assert (rig.project / "mark.txt").read_text() == "42\n"


async def test_own_exit_is_stopped_and_held(rig: Rig) -> None:
    view = await rig.spawn("/exit")

    agent = await rig.wait_state(view["id"], AgentState.STOPPED)

    assert agent.held == "you left Claude Code"
    assert agent.detail == "you left Claude Code"


async def test_forget_ends_the_host_and_later_hooks_are_kept_aside(rig: Rig) -> None:
    view = await rig.spawn("first")
    agent = await rig.wait_state(view["id"], AgentState.DONE)
    record = rig.record(agent.id)

    forgotten = await rig.call("agents.forget", agent=view["name"])

    assert forgotten == {"forgotten": agent.id, "name": agent.name}
    assert agent.id not in rig.d.service.registry.agents
    assert not program_alive(record)
    assert not rig.d.agents.record_of(agent.id).exists()
    reply = await rig.d.intake.hook(
        {"event": "Stop", "payload": json.dumps({"session_id": agent.session}), "agent": agent.id}
    )
    assert reply == {"accepted": False, "reason": f"agent {agent.name} was forgotten"}
    with pytest.raises(IpcError, match="was forgotten"):
        await rig.call("agents.send", agent=agent.id, text="hello?")


# --- the daemon restarts; hosts live on -----------------------------------------------------


async def test_restart_adopts_the_live_host_and_never_starts_a_second(rig: Rig) -> None:
    view = await rig.spawn("first")
    await rig.wait_state(view["id"], AgentState.DONE)
    before = rig.record(view["id"])

    await rig.restart()

    after = rig.record(view["id"])
    assert (after.host_pid, after.program_pid) == (before.host_pid, before.program_pid)
    assert host_alive(after)
    assert any(isinstance(e, ev.HostAdopted) for e in rig.events(view["id"]))
    assert view["id"] in rig.d.agents.watchers
    agent = rig.agent(view["id"])
    plan = rig.d.agents.profiles["claude"].launch(
        agent.id,
        agent.launch,
        rig.d.agents.context(agent.id, "claude"),  # type: ignore[arg-type]
    )
    with pytest.raises(Exception, match=f"already runs in host {before.host_pid}"):
        await rig.d.agents.start_host(agent, plan, how=ev.StartKind.LAUNCH, automatic=False)
    with pytest.raises(IpcError, match="is running"):
        await rig.call("agents.resume", agent=agent.id)
    assert rig.record(view["id"]).host_pid == before.host_pid

    # The adopted agent still works: a message goes into the same program.
    await rig.call("agents.send", agent=agent.id, text="RUN: echo again > again.txt")
    await rig.wait(
        agent.id, lambda a: a.activity == "Bash: echo again > again.txt", "the adopted agent"
    )
    assert rig.record(view["id"]).program_pid == before.program_pid
    # Stopping it after the restart ends it (the adopted watcher sees the exit).
    await rig.call("agents.stop", agent=agent.id)
    assert rig.record(agent.id).exit is not None


async def test_a_host_that_ended_while_the_daemon_was_down_is_seen_at_start(rig: Rig) -> None:
    view = await rig.spawn("first")
    await rig.wait_state(view["id"], AgentState.DONE)
    record = rig.record(view["id"])
    await rig.close()

    HostClient(record.socket or "").stop(5.0)
    # The hooks of the ending program found no daemon: they were spooled.
    await rig.start()

    await rig.wait(
        view["id"],
        lambda a: a.state is AgentState.STOPPED and a.pid is None,
        "stopped, and the program known to be gone",
    )
    assert any(isinstance(e, ev.ProgramExited) for e in rig.events(view["id"]))


# --- worktrees ------------------------------------------------------------------------------


async def test_worktree_spawn_runs_in_a_new_branch(rig: Rig) -> None:
    repo = rig.project
    for cmd in (
        ["git", "init", "-q", "-b", "main"],
        [
            "git",
            "-c",
            "user.email=t@t",
            "-c",
            "user.name=t",
            "commit",
            "-q",
            "--allow-empty",
            "-m",
            "i",
        ],
    ):
        subprocess.run(cmd, cwd=repo, check=True)

    view = await rig.spawn("RUN: echo wt > wt.txt", name="wt1", worktree=True)

    agent = await rig.wait_state(view["id"], AgentState.DONE)
    tree = repo / ".claude" / "worktrees" / "wt1"
    assert (agent.worktree, agent.branch, agent.repo, agent.cwd) == (
        str(tree),
        "volee/wt1",
        str(repo),
        str(tree),
    )
    assert (tree / "wt.txt").read_text() == "wt\n"
    assert not (repo / "wt.txt").exists()
    branch = subprocess.run(
        ["git", "branch", "--show-current"], cwd=tree, capture_output=True, text=True, check=True
    )
    assert branch.stdout.strip() == "volee/wt1"

    with pytest.raises(IpcError, match="already named 'wt1'"):
        await rig.spawn("again", name="wt1", worktree=True)


async def test_worktree_outside_a_repository_is_refused(rig: Rig) -> None:
    with pytest.raises(IpcError, match="--worktree needs a git repository"):
        await rig.spawn("x", worktree=True)


# --- bad input ------------------------------------------------------------------------------


async def test_a_missing_cwd_is_refused(rig: Rig) -> None:
    with pytest.raises(IpcError, match=r"directory /nonexistent/x does not exist; create it"):
        await rig.spawn("x", cwd="/nonexistent/x")
    assert rig.d.service.registry.agents == {}


async def test_a_missing_binary_is_refused_saying_what_to_do_and_keeps_no_agent(
    rig: Rig, monkeypatch: pytest.MonkeyPatch
) -> None:
    rig.d.agents.binaries["claude"] = str(rig.root / "no-claude")

    with pytest.raises(
        IpcError, match="no-claude does not exist or cannot run; install claude"
    ) as e:
        await rig.spawn("x", name="nobin")
    assert "VOLEE_CLAUDE_BIN" in str(e.value)
    assert "no agent was kept" in str(e.value)
    # No failed agent left to notify about what the person just read in their terminal.
    assert rig.d.service.registry.agents == {}
    decoded = [decode_event(r.type, r.version, r.payload) for r in rig.d.log.read(0)]
    assert not [e for e in decoded if isinstance(e, ev.StateChanged)]
    assert [type(e) for e in decoded if isinstance(e, ev.AgentEvent)] == [
        ev.AgentRegistered,
        ev.AgentForgotten,
    ]
    # The name is free for the next try, once claude is installed.
    rig.d.agents.binaries["claude"] = str(FAKE_CLAUDE)
    agent = await rig.spawn("x", name="nobin")
    assert agent["name"] == "nobin"


async def test_a_generic_command_that_does_not_exist_keeps_no_agent(rig: Rig) -> None:
    with pytest.raises(IpcError, match="could not start"):
        await rig.call(
            "agents.spawn",
            harness="generic",
            argv=["/nonexistent/prog"],
            name="ghost",
            cwd=str(rig.project),
        )
    assert rig.d.service.registry.agents == {}


async def test_a_too_old_binary_names_the_versions(rig: Rig) -> None:
    old = rig.root / "claude-old"
    old.write_text('#!/bin/sh\nif [ "$1" = --version ]; then echo "1.0.99 (Claude Code)"; fi\n')
    old.chmod(0o755)
    rig.d.agents.binaries["claude"] = str(old)

    with pytest.raises(IpcError, match=r"is version 1\.0\.99; volee needs 2\.1\.0 or newer"):
        await rig.spawn("x")


async def test_unknown_harness_is_refused(rig: Rig) -> None:
    with pytest.raises(IpcError, match="unknown harness 'gemini'"):
        await rig.spawn("x", harness="gemini")


@pytest.mark.parametrize(
    ("params", "reason"),
    [
        ({"event": "Stop", "payload": "{not json"}, "payload is not JSON"),
        ({"event": "Stop", "payload": "[1]"}, "payload is not a JSON object"),
        ({"event": "", "payload": "{}"}, "no hook event name"),
        (
            {"event": "Stop", "payload": json.dumps({"session_id": "nobody"})},
            "no agent owns claude session 'nobody'",
        ),
        (
            {"event": "Stop", "payload": "{}", "agent": "ag_01NOSUCHAGENT0000000000000"},
            "unknown agent ag_01NOSUCHAGENT0000000000000",
        ),
    ],
)
async def test_bad_hook_payloads_are_kept_with_the_reason(
    rig: Rig, params: dict[str, Any], reason: str
) -> None:
    reply = await rig.call("hook", key="k-1", **params)

    assert reply["accepted"] is False
    assert reason in reply["reason"]
    kept = rig.rejected()
    assert [k["reason"] for k in kept] == [reply["reason"]]
    assert kept[0]["params"]["payload"] == params["payload"]


async def test_a_payload_missing_fields_for_a_live_agent_is_kept(rig: Rig) -> None:
    view = await rig.spawn(None)
    await rig.wait_state(view["id"], AgentState.IDLE)

    reply = await rig.call(
        "hook", event="PreToolUse", payload=json.dumps({"tool_name": "Bash"}), agent=view["id"]
    )

    assert reply == {
        "accepted": False,
        "reason": "hook payload has no 'session_id' string (got None)",
    }
    assert rig.rejected()[0]["params"]["agent"] == view["id"]
    # The daemon goes on: the agent still answers.
    await rig.call("agents.send", agent=view["id"], text="RUN: true")
    await rig.wait_state(view["id"], AgentState.DONE)


# --- the default model per harness (config.toml's [claude] model…) --------------------------


async def test_spawn_without_model_uses_the_harness_model_from_config(rig: Rig) -> None:
    dirs().config_file.parent.mkdir(parents=True, exist_ok=True)
    dirs().config_file.write_text('[claude]\nmodel = "opus"\n[codex]\nmodel = "gpt-5"\n')
    await rig.restart()
    view = await rig.spawn("hello", name="defaulted")
    await rig.wait_state(view["id"], AgentState.DONE)
    record = rig.record(view["id"])
    assert record.argv[record.argv.index("--model") + 1] == "opus"
    given = await rig.spawn("hello", name="chosen", model="sonnet")  # --model wins
    await rig.wait_state(given["id"], AgentState.DONE)
    chosen = rig.record(given["id"]).argv
    assert chosen[chosen.index("--model") + 1] == "sonnet"
    for agent_id, model in ((view["id"], "opus"), (given["id"], "sonnet")):
        registered = next(e for e in rig.events(agent_id) if isinstance(e, ev.AgentRegistered))
        assert registered.launch is not None
        assert registered.launch.model == model


async def test_a_model_that_would_read_as_an_option_is_refused_and_nothing_starts(
    rig: Rig,
) -> None:
    before = set(rig.d.service.registry.agents)
    with pytest.raises(IpcError, match="--model '--dangerously-skip-permissions'"):
        await rig.spawn("hello", model="--dangerously-skip-permissions")
    with pytest.raises(IpcError, match="takes no model"):
        await rig.spawn(None, harness="generic", argv=["true"], model="opus")
    assert set(rig.d.service.registry.agents) == before


async def test_spawn_without_harness_runs_the_default_harness_from_config(
    rig: Rig, monkeypatch: pytest.MonkeyPatch
) -> None:
    # No codex here: the refusal that names its program says codex was the one chosen.
    monkeypatch.setenv("VOLEE_CODEX_BIN", str(rig.root / "no-such-codex"))
    dirs().config_file.parent.mkdir(parents=True, exist_ok=True)
    dirs().config_file.write_text('[agents]\nharness = "codex"\n')
    await rig.restart()
    params: dict[str, Any] = {"cwd": str(rig.project), "env": rig.env(), "prompt": "hello"}
    with pytest.raises(IpcError, match="codex executable"):
        await rig.call("agents.spawn", **params)
    explicit = await rig.spawn("hello", harness="claude")  # a named harness wins
    assert explicit["harness"] == "claude"


async def test_a_failure_while_an_output_is_fed_at_once_is_logged_and_the_screen_read(
    rig: Rig, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    agent_id, _request_id, top = await dialog_seen(rig)
    screens, look = rig.d.agents.screens, rig.d.answers

    def broken(_agent_id: str, _limit: int) -> set[int] | None:
        raise RuntimeError("a row watcher failed")

    monkeypatch.setattr(screens, "feed_now", broken)
    screens.output(agent_id, f"\x1b[{top};1H ".encode())  # the relay goes on: no raise here
    await until(lambda: agent_id in look._looking or look._looked_at.get(agent_id), what="a read")
    assert "feeding" in caplog.text
    assert rig.agent(agent_id).state is AgentState.NEEDS_INPUT
