"""The environment an agent inherits: the caller's variables that the allow-list lets through.

``volee spawn`` and ``volee mission create`` send the filtered environment with the
request; the daemon filters again (and records it with the launch), so a variable
outside the list never reaches an agent whoever asks.  The person's desktop (their
display and session bus, ``DESKTOP_VARS``) is recorded but reaches an agent's program
only when ``agents.desktop`` names its harness (``without_desktop``, at every start):
an agent on the person's session bus can take the notification server's name and
answer volee's notifications, one on their display can type into their windows
(docs/trust-model.md, "The desktop").
"""

from __future__ import annotations

import re
from collections.abc import Collection, Mapping

ENV_ALLOW = re.compile(
    r"^(PATH|HOME|USER|LOGNAME|SHELL|LANG|LC_\w+|TERM|COLORTERM|TZ|TMPDIR|XDG_\w+|"
    r"ANTHROPIC_\w+|CLAUDE_\w+|CLAUDECODE|DISABLE_\w+|IS_SANDBOX|OPENAI_\w+|CODEX_\w+|PI_\w+|"
    r"FAKE_\w+|NODE_\w+|NPM_CONFIG_\w+|HTTPS?_PROXY|NO_PROXY|SSH_AUTH_SOCK|GIT_\w+|EDITOR|"
    r"VISUAL|DISPLAY|WAYLAND_DISPLAY|DBUS_SESSION_BUS_ADDRESS|XAUTHORITY)$"
)

#: The variables that lead a program to the person's desktop: the X or Wayland display and
#: the session bus (where the notification server and the tray's menu live).
DESKTOP_VARS = ("DISPLAY", "WAYLAND_DISPLAY", "DBUS_SESSION_BUS_ADDRESS", "XAUTHORITY")


def allowed_env(env: dict[str, str]) -> dict[str, str]:
    """The part of a caller's environment an agent may inherit (recorded with its launch)."""
    return {k: v for k, v in env.items() if ENV_ALLOW.match(k)}


def without_desktop(
    env: Mapping[str, str], harness: str, desktop: Collection[str]
) -> dict[str, str]:
    """``env`` for a program of ``harness``: the desktop's variables left out unless
    ``desktop`` (``agents.desktop`` of config.toml) names the harness."""
    if harness in desktop:
        return dict(env)
    return {k: v for k, v in env.items() if k not in DESKTOP_VARS}
