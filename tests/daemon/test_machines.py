"""Other machines through a fake link: their agents listed, actions forwarded, reconnecting
without a gap, unreachable kept, other versions and duplicates refused
(daemon/machines/runner.py)."""

from __future__ import annotations

from collections.abc import AsyncIterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from tests.fakes.machines import HelloDialer, SocketDialer
from tests.polling import until
from volee_desktop import __version__
from volee_desktop.core import events as ev
from volee_desktop.core.states import AgentState
from volee_desktop.daemon.machines.runner import Machines
from volee_desktop.daemon.main import Daemon
from volee_desktop.ipc.aclient import AsyncClient
from volee_desktop.ipc.caller import Caller
from volee_desktop.ipc.protocol import ErrorCode, IpcError
from volee_desktop.paths import dirs

from .helpers import registered


@dataclass
class Pair:
    """This machine's daemon, linked to ``remote`` as machine ``devbox``."""

    local: Daemon
    remote: Daemon
    dialer: SocketDialer
    client: AsyncClient

    @property
    def machines(self) -> Machines:
        return self.local.machines


def write_machines(home: Path, *names: str) -> None:
    config = home / "config"
    config.mkdir(parents=True, exist_ok=True)
    text = "".join(f'[machines.{name}]\nssh = "{name}.example"\n' for name in names)
    (config / "config.toml").write_text(text)


@pytest.fixture
async def pair(volee_home: Path) -> AsyncIterator[Pair]:
    remote = await Daemon.start(dirs({"VOLEE_HOME": str(volee_home / "remote")}))
    write_machines(volee_home, "devbox")
    dialer = SocketDialer({"devbox": remote.dirs.socket})
    local = await Daemon.start(dirs(), dial=dialer)
    client = await AsyncClient.connect(local.dirs.socket)
    try:
        yield Pair(local, remote, dialer, client)
    finally:
        await client.close()
        await local.close()
        await remote.close()


async def synced(p: Pair) -> None:
    """Wait until this machine's copy of devbox is at devbox's last event."""
    link = p.machines.links["devbox"]
    await until(
        lambda: link.seq == p.remote.service.registry.seq,
        what="devbox's copy to catch up",
        timeout=10,
    )


async def test_the_agents_of_every_machine_are_listed_with_their_machine(pair: Pair) -> None:
    there = registered("builder")
    await pair.remote.service.commit([there])
    here = registered("writer")
    await pair.local.service.commit([here])

    async def views() -> list[dict[str, Any]]:
        result: list[dict[str, Any]] = await pair.client.call("agents.list")
        return result

    await synced(pair)
    items = {v["name"]: v for v in await views()}
    assert items["builder"]["machine"] == "devbox"
    assert items["builder"]["reachable"] is True
    assert items["builder"]["id"] == there.agent
    assert items["writer"]["machine"] is None
    assert items["writer"]["reachable"] is True


async def test_most_urgent_first_across_machines(pair: Pair) -> None:
    asking = registered("asking", at=5.0)
    await pair.remote.service.commit(
        [asking, ev.StateChanged(at=6.0, agent=asking.agent, state=AgentState.NEEDS_INPUT)]
    )
    await pair.local.service.commit([registered("calm", at=7.0)])
    await synced(pair)
    names = [v["name"] for v in await pair.client.call("agents.list")]
    assert names.index("asking") < names.index("calm")


async def test_an_action_on_a_remote_agent_is_done_on_its_machine(pair: Pair) -> None:
    there = registered("builder")
    await pair.remote.service.commit([there])
    await synced(pair)
    got = await pair.client.call("agents.get", {"agent": "devbox:builder"})
    assert (got["id"], got["machine"], got["reachable"]) == (there.agent, "devbox", True)
    # A plain name found on one machine only needs no prefix; forgetting it is done there.
    await pair.client.call("agents.forget", {"agent": "builder"})
    assert there.agent not in pair.remote.service.registry.agents
    await until(
        lambda: there.agent not in pair.machines.links["devbox"].registry.agents,
        what="the forget to come back through the feed",
        timeout=10,
    )


async def test_the_remote_daemon_answers_for_its_agent(pair: Pair) -> None:
    await pair.remote.service.commit([registered("builder")])
    await synced(pair)
    # Nothing asks: the other machine's daemon refuses, and says it is that machine's answer.
    with pytest.raises(IpcError) as caught:
        await pair.client.call("agents.allow", {"agent": "devbox:builder"})
    assert caught.value.code == ErrorCode.REFUSED
    assert caught.value.message.startswith("devbox: ")


async def test_a_name_on_two_machines_must_say_which(pair: Pair) -> None:
    await pair.remote.service.commit([registered("twin")])
    await pair.local.service.commit([registered("twin")])
    await synced(pair)
    with pytest.raises(IpcError) as caught:
        await pair.client.call("agents.get", {"agent": "twin"})
    assert caught.value.code == ErrorCode.AMBIGUOUS
    assert "devbox:twin" in caught.value.message
    got = await pair.client.call("agents.get", {"agent": "devbox:twin"})
    assert got["machine"] == "devbox"


async def test_a_dropped_link_catches_up_with_no_gap_and_no_duplicate(pair: Pair) -> None:
    there = registered("builder")
    await pair.remote.service.commit([there])
    link = pair.machines.links["devbox"]
    await until(
        lambda: link.seq == pair.remote.service.registry.seq, what="the first sync", timeout=10
    )
    before = link.state.applied
    pair.dialer.down = "ssh: connect to host devbox port 22: Connection refused"
    pair.dialer.drop()
    await until(lambda: not link.state.reachable, what="the link to go down", timeout=10)
    # While it is down, things happen there.
    for n in range(5):
        await pair.remote.service.commit(
            [ev.ActivityRecorded(at=10.0 + n, agent=there.agent, activity=f"step {n}")]
        )
    pair.dialer.down = None
    link.wake()
    await until(
        lambda: link.seq == pair.remote.service.registry.seq, what="the catch-up", timeout=10
    )
    assert link.state.snapshots == 1  # a replay from its last seq, no new snapshot
    assert link.state.replays == 1
    assert link.registry is not None
    assert link.registry.agents[there.agent].activity == "step 4"
    # Each of the five events folded in exactly once: none missed, none twice.
    assert link.state.applied - before == 5


async def test_while_unreachable_its_agents_stay_and_answers_are_refused(pair: Pair) -> None:
    asking = registered("asking")
    await pair.remote.service.commit(
        [asking, ev.StateChanged(at=2.0, agent=asking.agent, state=AgentState.NEEDS_INPUT)]
    )
    link = pair.machines.links["devbox"]
    await until(lambda: link.seq == pair.remote.service.registry.seq, what="the sync", timeout=10)
    pair.dialer.down = "ssh: connect to host devbox port 22: No route to host"
    pair.dialer.drop()
    await until(lambda: not link.state.reachable, what="the link to go down", timeout=10)
    [view] = [v for v in await pair.client.call("agents.list") if v["name"] == "asking"]
    assert view["state"] == "needs-input"  # never lost, stopped or done
    assert view["reachable"] is False
    with pytest.raises(IpcError) as caught:
        await pair.client.call("agents.answer", {"agent": "devbox:asking", "option": 1})
    assert caught.value.code == ErrorCode.UNAVAILABLE
    assert "devbox is unreachable since" in caught.value.message
    assert "No route to host" in caught.value.message
    [machine] = await pair.client.call("machines.list")
    assert machine["reachable"] is False
    assert machine["agents"] == 1
    assert "No route to host" in machine["problem"]


async def test_an_agent_here_may_not_act_on_another_machine(pair: Pair) -> None:
    await pair.remote.service.commit([registered("builder")])
    await synced(pair)
    mine = registered("mine")
    await pair.local.service.commit([mine])

    class AsAgent:
        caller = Caller.of_agent(mine.agent, 1234, "descends from the program (pid 99)")

    with pytest.raises(IpcError) as caught:
        await pair.local.api(AsAgent(), "agents.send", {"agent": "devbox:builder", "text": "x"})  # type: ignore[arg-type]
    assert caught.value.code == ErrorCode.FORBIDDEN


async def test_another_version_is_refused_naming_both(volee_home: Path) -> None:
    write_machines(volee_home, "old")
    hello = {"version": "0.0.9", "protocol": 1, "machine_id": "mc_x", "host": "old"}
    local = await Daemon.start(dirs(), serve=False, dial=HelloDialer(hello))
    try:
        link = local.machines.links["old"]
        await until(link.tried.is_set, what="the first attempt", timeout=10)
        assert not link.state.reachable
        assert link.state.problem is not None
        assert "0.0.9" in link.state.problem
        assert __version__ in link.state.problem
        assert link.registry is None
    finally:
        await local.close()


async def test_a_daemon_without_the_handshake_is_refused_with_its_version(
    volee_home: Path,
) -> None:
    write_machines(volee_home, "old")
    local = await Daemon.start(dirs(), serve=False, dial=HelloDialer(None))
    try:
        link = local.machines.links["old"]
        await until(link.tried.is_set, what="the first attempt", timeout=10)
        assert link.state.problem is not None
        assert "volee on old is 0.0.5" in link.state.problem
        assert __version__ in link.state.problem
    finally:
        await local.close()


async def test_the_same_machine_under_two_names_is_linked_once(volee_home: Path) -> None:
    remote = await Daemon.start(dirs({"VOLEE_HOME": str(volee_home / "remote")}))
    write_machines(volee_home, "devbox", "devbox2")
    dialer = SocketDialer({"devbox": remote.dirs.socket, "devbox2": remote.dirs.socket})
    local = await Daemon.start(dirs(), serve=False, dial=dialer)
    try:
        links = local.machines.links
        await until(
            lambda: all(link.tried.is_set() for link in links.values()),
            what="both tried",
            timeout=10,
        )
        await until(
            lambda: sum(link.state.reachable for link in links.values()) == 1,
            what="one up",
            timeout=10,
        )
        [down] = [link for link in links.values() if not link.state.reachable]
        assert down.state.problem is not None
        assert "is the same machine as" in down.state.problem
        assert remote.machines.id in down.state.problem
    finally:
        await local.close()
        await remote.close()


async def test_each_daemon_keeps_one_machine_id(volee_home: Path) -> None:
    first = await Daemon.start(dirs(), serve=False)
    kept = first.machines.id
    await first.close()
    again = await Daemon.start(dirs(), serve=False)
    try:
        assert again.machines.id == kept
        assert kept.startswith("mc_")
    finally:
        await again.close()


async def test_a_remote_agents_timeline_is_read_there(pair: Pair) -> None:
    there = registered("builder")
    await pair.remote.service.commit(
        [there, ev.ActivityRecorded(at=3.0, agent=there.agent, activity="Bash: make")]
    )
    await synced(pair)
    items = await pair.client.call("agents.timeline", {"agent": "devbox:builder"})
    assert [item["type"] for item in items][:1] == ["agent-registered"]
    assert all(item["agent"] == there.agent for item in items if "agent" in item)
    # Unknown there: that machine's daemon says so, and it is named.
    with pytest.raises(IpcError) as caught:
        await pair.client.call("agents.timeline", {"agent": "devbox:nobody"})
    assert caught.value.code == ErrorCode.NOT_FOUND
    assert caught.value.message.startswith("devbox: no agent 'nobody'")


async def test_spawn_on_an_unknown_machine_says_which_exist(pair: Pair) -> None:
    with pytest.raises(IpcError) as caught:
        await pair.client.call(
            "agents.spawn", {"harness": "generic", "argv": ["true"], "machine": "nope"}
        )
    assert caught.value.code == ErrorCode.NOT_FOUND
    assert "no machine 'nope'" in caught.value.message


async def test_spawn_on_a_machine_never_starts_it_here(volee_home: Path) -> None:
    local = await Daemon.start(dirs())
    client = await AsyncClient.connect(local.dirs.socket)
    try:
        with pytest.raises(IpcError) as caught:
            await client.call(
                "agents.spawn", {"harness": "generic", "argv": ["true"], "machine": "devbox"}
            )
        assert caught.value.code == ErrorCode.NOT_FOUND
        assert "no machine 'devbox' (known: none yet" in caught.value.message
        assert local.service.registry.agents == {}
    finally:
        await client.close()
        await local.close()


async def test_a_far_side_that_hangs_is_given_up_on_saying_so(
    volee_home: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from volee_desktop.daemon.machines import link as machinelink

    monkeypatch.setattr(machinelink, "HELLO_TIMEOUT", 0.2)
    write_machines(volee_home, "stuck")
    dialer = HelloDialer(None)
    dialer.silent = True
    local = await Daemon.start(dirs(), serve=False, dial=dialer)
    try:
        link = local.machines.links["stuck"]
        await until(link.tried.is_set, what="the first attempt", timeout=10)
        assert link.state.problem == (
            "stuck did not answer within 0.2 s (ssh, or the command that reaches it, hangs)"
        )
    finally:
        await local.close()


async def test_another_daemon_at_the_same_name_is_taken_afresh(
    pair: Pair, volee_home: Path
) -> None:
    old = registered("old-one")
    await pair.remote.service.commit([old])
    await synced(pair)
    link = pair.machines.links["devbox"]
    # devbox was set up again from scratch: a new volee home, a new machine id, a new log.
    other = await Daemon.start(dirs({"VOLEE_HOME": str(volee_home / "again")}))
    try:
        new = registered("new-one")
        await other.service.commit([new, registered("new-two")])
        pair.dialer.sockets["devbox"] = other.dirs.socket
        pair.dialer.drop()
        await until(
            lambda: link.state.machine_id == other.machines.id, what="the new machine", timeout=10
        )
        await until(lambda: link.seq == other.service.registry.seq, what="its snapshot", timeout=10)
        assert link.registry is not None
        assert set(link.registry.agents) == set(other.service.registry.agents)
        assert old.agent not in link.registry.agents
        assert link.state.snapshots == 2
    finally:
        await other.close()


async def test_the_apps_feed_carries_the_other_machines_as_they_change(pair: Pair) -> None:
    """The ``machines`` push (what the app's list, tray and notifications show of devbox):
    at the start of a feed, after a change there, and while devbox is unreachable."""
    from volee_desktop.app.link import IpcDaemonLink
    from volee_desktop.app.live import LiveRegistry

    there = registered("builder")
    await pair.remote.service.commit([there])
    await synced(pair)
    live = LiveRegistry()
    app = await IpcDaemonLink.connect(pair.local.dirs.socket)
    try:
        await app.subscribe(live, None)
        await until(
            lambda: live.machine(there.agent) is not None, what="devbox in the feed", timeout=10
        )
        assert live.registry.agents[there.agent].name == "builder"
        assert live.machine_label(there.agent) == "devbox"
        # A change there is pushed here (no polling: nothing is asked for it).
        await pair.remote.service.commit(
            [ev.StateChanged(at=3.0, agent=there.agent, state=AgentState.NEEDS_INPUT)]
        )
        await until(
            lambda: live.registry.agents[there.agent].state is AgentState.NEEDS_INPUT,
            what="the change there, pushed here",
            timeout=10,
        )
        pair.dialer.down = "ssh: connect to host devbox port 22: Connection refused"
        pair.dialer.drop()
        await until(
            lambda: live.machine_label(there.agent).startswith("devbox unreachable since"),
            what="devbox unreachable, pushed here",
            timeout=10,
        )
        assert live.registry.agents[there.agent].state is AgentState.NEEDS_INPUT  # kept
        pair.dialer.down = None
        pair.machines.links["devbox"].wake()
        await until(
            lambda: live.machine_label(there.agent) == "devbox", what="devbox back", timeout=10
        )
    finally:
        await app.close()


async def test_what_the_apps_agent_window_and_rows_ask_is_asked_there(pair: Pair) -> None:
    there = registered("builder")
    await pair.remote.service.commit([there])
    await synced(pair)
    outcome = await pair.client.call("agents.outcome", {"agent": there.agent})
    assert outcome["machine"] == "devbox"
    log = await pair.client.call("agents.log", {"agent": there.agent})
    assert (log["machine"], log["name"]) == ("devbox", "builder")
    # Keys for its screen reach its daemon, which says why not (it has no host there).
    with pytest.raises(IpcError) as caught:
        await pair.client.call("agents.keys", {"agent": there.agent, "data": "y"})
    assert caught.value.message.startswith("devbox: ")


async def test_the_harnesses_of_a_machine_are_asked_there(pair: Pair) -> None:
    """What the New agent dialog offers for a machine is what is installed there."""
    await synced(pair)
    there = await pair.client.call("agents.harnesses", {"machine": "devbox"})
    assert there["machine"] == "devbox"
    assert {h["harness"] for h in there["harnesses"]} >= {"claude", "generic"}
    here = await pair.client.call("agents.harnesses", {})
    assert "machine" not in here
