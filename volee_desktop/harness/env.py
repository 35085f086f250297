"""The environment an agent inherits: the caller's variables that the allow-list lets through.

``volee spawn`` and ``volee mission create`` send the filtered environment with the
request; the daemon filters again (and records it with the launch), so a variable
outside the list never reaches an agent whoever asks.
"""

from __future__ import annotations

import re

ENV_ALLOW = re.compile(
    r"^(PATH|HOME|USER|LOGNAME|SHELL|LANG|LC_\w+|TERM|COLORTERM|TZ|TMPDIR|XDG_\w+|"
    r"ANTHROPIC_\w+|CLAUDE_\w+|CLAUDECODE|DISABLE_\w+|IS_SANDBOX|OPENAI_\w+|CODEX_\w+|PI_\w+|"
    r"FAKE_\w+|NODE_\w+|NPM_CONFIG_\w+|HTTPS?_PROXY|NO_PROXY|SSH_AUTH_SOCK|GIT_\w+|EDITOR|"
    r"VISUAL|DISPLAY|WAYLAND_DISPLAY|DBUS_SESSION_BUS_ADDRESS)$"
)


def allowed_env(env: dict[str, str]) -> dict[str, str]:
    """The part of a caller's environment an agent may inherit (recorded with its launch)."""
    return {k: v for k, v in env.items() if ENV_ALLOW.match(k)}
