"""The daemon's IPC handler: its method table, with the daemon's errors mapped to stable codes.

The methods themselves are the runners' (docs/ipc.md): ``daemon/main.py`` builds each runner
with the one ``MethodTable``, and each adds its methods there.
"""

from __future__ import annotations

from typing import Any

from ..ipc.protocol import ErrorCode, IpcError
from ..ipc.server import Connection, MethodTable
from .errors import Ambiguous, Broken, NotFound, Refused


class Api:
    """Dispatches by method name; NotFound, Ambiguous, Refused and Broken become error codes."""

    def __init__(self, methods: MethodTable) -> None:
        self.methods = methods

    async def __call__(self, conn: Connection, method: str, params: dict[str, Any]) -> Any:
        try:
            return await self.methods(conn, method, params)
        except NotFound as exc:
            raise IpcError(ErrorCode.NOT_FOUND, str(exc)) from exc
        except Ambiguous as exc:
            raise IpcError(ErrorCode.AMBIGUOUS, str(exc)) from exc
        except Refused as exc:
            raise IpcError(ErrorCode.REFUSED, str(exc)) from exc
        except Broken as exc:
            raise IpcError(ErrorCode.UNAVAILABLE, str(exc)) from exc
