"""A small daemon for the tray's tests, served over the real IPC server and socket
(``python tests/fakes/fake_daemon.py`` serves one in a process of its own).

It keeps a ``Registry`` and an event log, answers ``subscribe`` (snapshot or
replay ``since``), the ``agents.*`` and ``missions.answer`` calls the app makes
(recording them), and ``test.push`` / ``test.machines`` / ``test.calls`` / ``test.drop`` so that a
test in another process can drive it.  ``serve(stop)`` has the shape of the
app's ``start_daemon`` seam, so the app can embed it like the real daemon.
"""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

from volee_desktop.core import events as ev
from volee_desktop.core.registry import Registry
from volee_desktop.ipc.protocol import ErrorCode, IpcError
from volee_desktop.ipc.server import Connection, IpcServer, MethodTable
from volee_desktop.paths import ensure_private_dir
from volee_desktop.store.codec import encode_registry, event_from_dict, event_to_dict, to_builtins


class FakeDaemon:
    """An in-memory daemon speaking the real protocol."""

    def __init__(
        self,
        socket: Path,
        registry: Registry | None = None,
        snapshot_part: int = 256 * 1024,
        inline_snapshot: bool = False,
    ) -> None:
        self.socket = socket
        self.snapshot_part = snapshot_part
        self.inline_snapshot = inline_snapshot
        self.registry = registry or Registry()
        self.log: list[tuple[int, ev.Event]] = []
        self.calls: list[tuple[str, dict[str, Any]]] = []
        self.subscribers: set[Connection] = set()
        self.server: IpcServer | None = None
        self.ready = asyncio.Event()
        table = MethodTable()
        table.add("subscribe", self._subscribe)
        table.add("test.push", self._push)
        table.add("test.machines", self._machines)
        table.add("test.calls", self._calls)
        table.add("test.drop", self._drop)
        table.add("test.screen", self._set_screen)
        table.add("test.agent_pids", self._agent_pids)
        table.add("desktop.peer", self._peer)
        self.agent_pids: dict[int, str] = {}  # pids the test says are an agent's (desktop.peer)
        self.screens: dict[str, dict[str, Any]] = {}
        for method in (
            "agents.stop",
            "agents.resume",
            "agents.forget",
            "agents.seen",
            "agents.send",
            "agents.screen",
            "agents.output",
            "agents.timeline",
            "agents.allow",
            "agents.deny",
            "agents.answer",
            "agents.changes",
            "missions.answer",
        ):
            table.add(method, self._recorded(method))
        self.table = table

    async def serve(self, stop: asyncio.Event) -> None:
        """Serve until ``stop`` is set (the app's ``start_daemon`` seam)."""
        await self.start()
        try:
            await stop.wait()
        finally:
            await self.close()

    async def start(self) -> None:
        ensure_private_dir(self.socket.parent)
        self.server = await IpcServer.start(self.socket, self.table)
        self.ready.set()

    async def close(self) -> None:
        if self.server is not None:
            await self.server.close()
            self.server = None

    async def push(self, *events: ev.Event) -> None:
        for event in events:
            problem = self.registry.validate(event)
            if problem is not None:
                raise IpcError(ErrorCode.REFUSED, f"refused {event.TYPE}: {problem}")
            self.registry.apply(event)
            self.registry.seq += 1
            self.log.append((self.registry.seq, event))
            payload = {"seq": self.registry.seq, "event": event_to_dict(event)}
            for conn in list(self.subscribers):
                if not await conn.push("event", payload):
                    self.subscribers.discard(conn)

    async def _subscribe(self, conn: Connection, params: dict[str, Any]) -> Any:
        """Like the real daemon: the snapshot follows the reply as ``snapshot`` pushes."""
        since = params.get("since")
        self.subscribers.add(conn)
        if since is None:
            if self.inline_snapshot:  # docs/ipc.md's form
                return {"seq": self.registry.seq, "registry": to_builtins(self.registry)}
            text = encode_registry(self.registry).decode()
            size = self.snapshot_part
            parts = [text[i : i + size] for i in range(0, len(text), size)]
            for index, part in enumerate(parts):  # held by the server until the reply is out
                await conn.push("snapshot", {"part": index, "data": part})
            return {"seq": self.registry.seq, "snapshot_parts": len(parts)}
        for seq, event in self.log:
            if seq > since:
                await conn.push("event", {"seq": seq, "event": event_to_dict(event)})
        return {"seq": since, "replay": True}

    async def _push(self, conn: Connection, params: dict[str, Any]) -> Any:
        await self.push(*(event_from_dict(e) for e in params["events"]))
        return {"seq": self.registry.seq}

    async def _machines(self, conn: Connection, params: dict[str, Any]) -> Any:
        """Deliver ``params`` as a ``machines`` push (``app_link.machine_entry`` builds its
        entries): other machines' agents, as the real daemon's machines feed sends them."""
        for sub in list(self.subscribers):
            if not await sub.push("machines", params):
                self.subscribers.discard(sub)
        return {}

    async def _calls(self, conn: Connection, params: dict[str, Any]) -> Any:
        return [{"method": m, "params": p} for m, p in self.calls]

    async def _set_screen(self, conn: Connection, params: dict[str, Any]) -> Any:
        """What ``agents.output`` shows for an agent: ``{agent, lines, live?}``."""
        agent = str(params["agent"])
        old = self.screens.get(agent, {}).get("version", 0)
        self.screens[agent] = {
            "lines": list(params["lines"]),
            "live": bool(params.get("live", True)),
            "version": int(old) + 1,
        }
        return {}

    async def _drop(self, conn: Connection, params: dict[str, Any]) -> Any:
        """Drop every subscriber's connection (after this reply): tests reconnection."""
        victims = [c for c in self.subscribers if c is not conn]
        self.subscribers.clear()

        def drop() -> None:
            for c in victims:
                c.close()

        conn.after_reply(drop)
        return {"dropped": len(victims)}

    async def _agent_pids(self, conn: Connection, params: dict[str, Any]) -> Any:
        self.agent_pids = {int(pid): str(agent) for pid, agent in params["pids"].items()}
        return {}

    async def _peer(self, conn: Connection, params: dict[str, Any]) -> Any:
        """Like the daemon's: the person, unless the test marked the pid as an agent's."""
        self.calls.append(("desktop.peer", dict(params)))
        agent = self.agent_pids.get(int(params["pid"]))
        kind = "person" if agent is None else "agent"
        return {"kind": kind, "agent": agent, "name": agent, "pid": params["pid"], "how": "test"}

    def _recorded(self, method: str) -> Any:
        async def handle(conn: Connection, params: dict[str, Any]) -> Any:
            self.calls.append((method, dict(params)))
            if method == "agents.screen":
                return {"text": f"recent output of {params.get('agent')}"}
            if method == "agents.output":
                screen = self.screens.get(str(params.get("agent")))
                if screen is None:
                    lines = [f"recent output of {params.get('agent')}"]
                    return {"lines": lines, "text": lines[0], "version": 1, "live": True}
                return {**screen, "text": "\n".join(screen["lines"])}
            if method == "agents.send":
                return {"delivered": True, "resumed": False}
            if method == "agents.changes":
                from tests.fakes.app_link import demo_changes

                return demo_changes(str(params.get("agent")), bool(params.get("diff")))
            if method == "agents.timeline":
                from volee_desktop.daemon.agents.timeline import timeline

                return timeline(self.log, str(params.get("agent")))
            return {}

        return handle


def main() -> None:
    """Serve at this user's socket until SIGTERM/SIGINT (a daemon in another process)."""
    import signal

    from volee_desktop.paths import dirs

    async def run() -> None:
        stop = asyncio.Event()
        loop = asyncio.get_running_loop()
        for sig in (signal.SIGTERM, signal.SIGINT):
            loop.add_signal_handler(sig, stop.set)
        daemon = FakeDaemon(dirs().socket)
        await daemon.start()
        print(f"fake daemon serving on {daemon.socket}", flush=True)
        await stop.wait()
        await daemon.close()

    asyncio.run(run())


if __name__ == "__main__":
    import sys

    sys.path.insert(0, str(Path(__file__).resolve().parents[2]))  # for tests.fakes
    main()
