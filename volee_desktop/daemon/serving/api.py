"""The daemon's IPC handler: its method table, with the daemon's errors mapped to stable codes.

The methods themselves are the runners' (docs/ipc.md): ``daemon/main.py`` builds each runner
with the one ``MethodTable``, and each adds its methods there.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any

from ...ipc.caller import caller_of
from ...ipc.methods import Method
from ...ipc.protocol import ErrorCode, IpcError
from ...ipc.server import Connection, MethodTable
from ..errors import Ambiguous, Broken, Forbidden, NotFound, Refused
from ..service import Service
from .access import Audit, authorize

#: Serves a request here (the method table) or elsewhere: ``(conn, method, params, local)``.
Router = Callable[
    [Connection, str, dict[str, Any], Callable[[Connection, str, dict[str, Any]], Awaitable[Any]]],
    Awaitable[Any],
]


class Api:
    """Dispatches by method name; NotFound, Ambiguous, Refused and Broken become error codes.

    A request of an agent (``ipc.caller``) first passes the rules of ``access.py``: what only
    the person may do is ``forbidden``, and every refusal of an agent is audited.
    """

    def __init__(
        self, methods: MethodTable, service: Service, audit: Audit, router: Router | None = None
    ) -> None:
        self.methods = methods
        self.service = service
        self.audit = audit
        # The other machines' agents (daemon/machines/runner.py): what names one goes there.
        self.router = router

    async def __call__(self, conn: Connection, method: str, params: dict[str, Any]) -> Any:
        caller = caller_of(conn)
        if caller.claim is not None:
            await self.audit.claimed(caller, method)  # never believed; kept in its timeline
        try:
            if not caller.is_person:
                params = authorize(method, caller, params, self.service.current())
            if self.router is not None:
                return await self.router(conn, method, params, self.methods)
            return await self.methods(conn, method, params)
        except Forbidden as exc:
            await self.audit.refused(caller, method, exc)
            if method == Method.HOOK:
                # Never an error to a hook: the shim would spool it, to be taken at next start.
                return {"accepted": False, "reason": str(exc)}
            raise IpcError(ErrorCode.FORBIDDEN, str(exc)) from exc
        except NotFound as exc:
            raise IpcError(ErrorCode.NOT_FOUND, str(exc)) from exc
        except Ambiguous as exc:
            raise IpcError(ErrorCode.AMBIGUOUS, str(exc)) from exc
        except Refused as exc:
            if not caller.is_person:
                await self.audit.record(caller, method, f"{method}: {exc}")
            raise IpcError(ErrorCode.REFUSED, str(exc)) from exc
        except Broken as exc:
            raise IpcError(ErrorCode.UNAVAILABLE, str(exc)) from exc
