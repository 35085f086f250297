"""Whether this process was started by a login item (a service manager) or by a person.

A daemon started at login that finds volee already running steps aside quietly (exit 0),
so the service manager does not restart it in a loop (ADR 0024).
"""

from __future__ import annotations

import os

#: Set to 1 by whoever starts volee at login, so the daemon knows a person did not.
LOGIN_ITEM_ENV = "VOLEE_LOGIN_ITEM"


def login_item_start(environ: dict[str, str] | None = None) -> bool:
    """Whether this process was started by a service manager (the login item) rather than a person.

    systemd sets ``INVOCATION_ID`` for every unit it runs; launchd sets
    ``XPC_SERVICE_NAME`` to the job's label; ``VOLEE_LOGIN_ITEM=1`` says so explicitly.
    """
    env = os.environ if environ is None else environ
    return (
        env.get(LOGIN_ITEM_ENV) == "1"
        or bool(env.get("INVOCATION_ID"))
        or env.get("XPC_SERVICE_NAME", "").startswith("com.volee.")
    )


def already_running_message(exc: Exception) -> str:
    """What a login-item start says when it steps aside for the volee that already runs."""
    return f"volee: {exc}; started at login, this one steps aside (exit 0)"
