"""Who is speaking on the person's desktop: a D-Bus peer's pid, identified like a socket peer.

The tray app acts on D-Bus messages: a notification's action (``ActionInvoked``, a reply),
and it sends requests to whoever owns ``org.freedesktop.Notifications``.  Any process of
the person's user can own that name or send those signals, agents included, so the app
asks the bus for the sender's pid (``GetConnectionUnixProcessID``) and this method
(``desktop.peer``, the person's alone: it has no rule in ``access.py``) for who that is,
through the same identification as the daemon's socket (``identity.Identifier``).  An
agent's process is refused by the app and recorded here in that agent's timeline, like a
refused request (docs/trust-model.md, "The desktop").
"""

from __future__ import annotations

import os
from collections.abc import Callable
from typing import Annotated

from msgspec import Meta

from ...core.registry import Registry
from ...ipc.caller import Identify
from ...ipc.server import Connection
from ...ipc.transport import PeerCredentials
from ..params import Parameters, bad
from .access import Audit
from .own import CallerView, caller_view

#: What the audit names a refused D-Bus peer's attempt by (the timeline's method).
METHOD = "desktop"


class PeerParams(Parameters, frozen=True, kw_only=True):
    """``desktop.peer``: the D-Bus peer's pid, and what it tried (for the audit)."""

    pid: Annotated[int, Meta(ge=1)] | None = None
    attempt: str | None = None


class DesktopPeers:
    """``desktop.peer``: whom a D-Bus peer's pid is, with the refusal of an agent recorded."""

    def __init__(self, identify: Identify, audit: Audit, registry: Callable[[], Registry]) -> None:
        self.identify = identify
        self.audit = audit
        self._registry = registry

    async def api_peer(self, _conn: Connection, params: PeerParams) -> CallerView:
        pid = params.pid
        if pid is None:
            raise bad("desktop.peer needs the peer's pid (a whole number from 1)")
        attempt = params.attempt or "act on the desktop"
        caller = self.identify(PeerCredentials(uid=os.getuid(), pid=pid, gid=None))
        registry = self._registry()
        name = registry.name_of(caller.agent) if caller.agent else None
        if not caller.is_person:
            await self.audit.record(
                caller, METHOD, f"tried to {attempt} (on the desktop's D-Bus, pid {pid})"
            )
        return caller_view(caller, name)


__all__ = ["DesktopPeers"]
