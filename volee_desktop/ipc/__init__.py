"""The local API: versioned NDJSON over a Unix socket only its own user can reach.

Modules: ``protocol`` (wire format, error codes, exception tree), ``transport``
(the OS seam: Unix socket, peer credentials), ``server`` (``IpcServer``),
``client`` (blocking ``Client``), ``aclient`` (asyncio ``AsyncClient``).

``volee hook`` imports this package on every hook, so the asyncio-based parts
are loaded only when first used.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from volee_desktop.ipc.protocol import (
    MAX_MESSAGE,
    PROTOCOL_VERSION,
    CallTimeout,
    DaemonUnavailable,
    Error,
    ErrorCode,
    IpcError,
    ServerStartError,
)

if TYPE_CHECKING:
    from volee_desktop.ipc.aclient import AsyncClient, Subscription
    from volee_desktop.ipc.client import Client
    from volee_desktop.ipc.server import Connection, Handler, IpcServer, MethodTable, Reply

_LAZY = {
    "AsyncClient": "volee_desktop.ipc.aclient",
    "Subscription": "volee_desktop.ipc.aclient",
    "Client": "volee_desktop.ipc.client",
    "Connection": "volee_desktop.ipc.server",
    "Handler": "volee_desktop.ipc.server",
    "IpcServer": "volee_desktop.ipc.server",
    "MethodTable": "volee_desktop.ipc.server",
    "Reply": "volee_desktop.ipc.server",
}


def __getattr__(name: str) -> Any:
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    import importlib

    return getattr(importlib.import_module(module), name)


__all__ = [
    "MAX_MESSAGE",
    "PROTOCOL_VERSION",
    "AsyncClient",
    "CallTimeout",
    "Client",
    "Connection",
    "DaemonUnavailable",
    "Error",
    "ErrorCode",
    "Handler",
    "IpcError",
    "IpcServer",
    "MethodTable",
    "Reply",
    "ServerStartError",
    "Subscription",
]
