"""The app with no local daemon: it keeps the links to the other machines itself (D-nolocal).

Where no volee daemon can run (Windows: no PTYs, no hooks; the agents live in a WSL
distribution) or the person turned it off (``volee app --no-daemon``), the app reaches the
machines of ``[machines]`` itself: ``MachinesOnlyLink`` is a ``DaemonLink`` that runs the
daemon's own link code (``daemon/machines/``: one ``MachineLink`` per machine, its bridge a
child process, the handshake, ``subscribe since``, the backoff) in the app's loop, and
routes the app's calls as the daemon's router does (``MachineRouter.route``), with an empty
registry for "this machine".  The app's feed is an empty snapshot, then the same ``machines``
pushes the daemon's feed would send (``daemon/machines/feed.py``), so the list, the tray,
the notifications and the agent windows need nothing new.  A call that only a local daemon
can serve (spawning here, settings, ...) is refused saying so.

Its connection (the tray's tooltip, the About box) says in words what there is: no machine
configured, every machine unreachable (and why), or how many are reachable.  Docs:
docs/machines.md ("Windows, and the app without a local daemon").
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

from volee_desktop.core.registry import Registry
from volee_desktop.daemon.clock import LoopClock
from volee_desktop.daemon.errors import Error as DaemonError
from volee_desktop.daemon.errors import Refused
from volee_desktop.daemon.machines.link import Dialer, dial_process, new_machine_id
from volee_desktop.daemon.machines.runner import MachineRouter
from volee_desktop.ipc.methods import Method
from volee_desktop.ipc.protocol import IpcError
from volee_desktop.machines import Machine

from .errors import LinkError
from .link import LinkListener

log = logging.getLogger(__name__)

#: Why there is no local daemon, as the messages say it.
OFF = "no volee daemon on this machine (the app runs without one)"
NO_MACHINE = (
    f"{OFF} and no machine is configured: add one with "
    "`volee machine add wsl --via 'wsl.exe -d Ubuntu --'` (or `--ssh DEST`), "
    "then start the app again"
)


def _no_local(method: str) -> str:
    return f"{method} needs a volee daemon on this machine, and there is none here ({OFF})"


class MachinesOnlyLink:
    """A ``DaemonLink`` with no daemon behind it: the app's own links to ``machines``."""

    def __init__(
        self,
        machines: dict[str, Machine],
        dial: Dialer | None = None,
        problems: list[str] | None = None,
    ) -> None:
        self.machines = machines
        self.problems = problems or []
        self._tasks: set[asyncio.Task[Any]] = set()
        self.router = MachineRouter(
            LoopClock(), dial or dial_process, new_machine_id(), Registry, self._spawn
        )
        self.router.on_change = self._changed
        self._listener: LinkListener | None = None
        self._feed = self.router.feed()
        self._started = False
        self._pending = False
        self._said: tuple[bool, str] | None = None

    def _spawn(self, coro: Awaitable[Any], name: str) -> asyncio.Task[Any]:
        task: asyncio.Task[Any] = asyncio.ensure_future(coro)
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)
        return task

    # --- DaemonLink -------------------------------------------------------------------------

    async def call(self, method: str, params: dict[str, Any]) -> Any:
        if method == Method.SUBSCRIBE_INTERACTIVE:
            return {}
        if method == Method.MACHINES_LIST:
            return [self.router.view(link) for link in self.router.links.values()]
        try:
            return await self.router.route(None, method, params, self._local)
        except (IpcError, DaemonError) as exc:
            raise LinkError(f"{method}: {exc}") from exc

    async def subscribe(self, listener: LinkListener, since: int | None = None) -> None:
        self._listener = listener
        self._feed = self.router.feed()  # a new feed: every machine whole again
        self._said = None
        listener.on_snapshot(Registry(), 0)
        if not self._started:
            self._started = True
            self.router.start(self.machines)
        self._push()

    async def set_interactive(self, on: bool) -> None:
        return None  # nothing lists here: the other daemons' discovery is theirs

    async def close(self) -> None:
        self._listener = None
        await self.router.close()
        for task in list(self._tasks):
            task.cancel()
        await asyncio.gather(*self._tasks, return_exceptions=True)

    # --- what only a local daemon does ------------------------------------------------------

    async def _local(self, _conn: Any, method: str, params: dict[str, Any]) -> Any:
        if method in (Method.AGENTS_LIST, Method.MISSIONS_LIST):
            return []  # nothing of this machine's own
        ref = params.get("agent") or params.get("mission")
        if isinstance(ref, str) and ref:
            names = ", ".join(self.router.links) or "none"
            raise Refused(
                f"{ref!r} is on none of the machines shown ({names}); {_no_local(method)}"
            )
        raise Refused(_no_local(method))

    # --- the feed ---------------------------------------------------------------------------

    def _changed(self) -> None:
        # One push per turn of the loop, as the daemon's feed coalesces them.
        if self._pending or self._listener is None:
            return
        self._pending = True
        asyncio.get_event_loop().call_soon(self._push)

    def _push(self) -> None:
        self._pending = False
        listener = self._listener
        if listener is None:
            return
        push = self._feed()
        if push is not None:
            listener.on_machines(push)
        said = self.words()
        if said != self._said:
            self._said = said
            listener.on_connection(*said)

    def words(self) -> tuple[bool, str]:
        """Connected or not, and in words what there is (the tray's tooltip)."""
        links = list(self.router.links.values())
        if not links:
            problems = f" ({'; '.join(self.problems)})" if self.problems else ""
            return False, NO_MACHINE + problems
        up = [link.name for link in links if link.state.reachable]
        if up:
            return True, f"{OFF}; reachable: {', '.join(up)}"
        if all(link.state.since is None for link in links):  # none tried yet
            return False, f"{OFF}; connecting to {', '.join(link.name for link in links)}"
        why = "; ".join(link.unreachable_text() for link in links)
        return False, f"{OFF}, and no machine is reachable: {why}"


def connector(config_path: Path) -> Callable[[], Awaitable[MachinesOnlyLink]]:
    """``run_app``'s ``connect`` with no local daemon: the machines of ``config_path``."""

    async def connect() -> MachinesOnlyLink:
        from volee_desktop.config import load_config

        loaded = load_config(config_path)
        problems = [p for p in loaded.problems if "machines" in p]
        for problem in problems:
            log.warning("config.toml: %s", problem)
        return MachinesOnlyLink(loaded.config.machines, problems=problems)

    return connect
