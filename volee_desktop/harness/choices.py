"""What a new agent may be started with, per harness: the permission modes the binary at hand
accepts (the same checks ``volee spawn`` makes before a launch), for the New agent dialog.

Pure: the codex ``--help`` text comes in, the modes go out.
"""

from __future__ import annotations

from ..config import PERMISSION_MODES
from .base import Error
from .codex import APPROVAL_POLICIES, SANDBOX_MODES, VOLEE_MODES, accepted_modes, permission_args

#: Why a harness takes no permission mode (the words ``volee spawn`` refuses one with).
NO_MODES = {
    "pi": "pi has no permission modes",
    "generic": "a generic command has no permission modes",
}


def permission_modes(harness: str, help_text: str = "") -> tuple[str, ...]:
    """The modes ``harness`` accepts: Claude Code's (as config.toml validates them), or what
    the codex binary whose ``--help`` is ``help_text`` takes (``permission_args``, as a launch
    checks it); none for pi and a generic command."""
    if harness == "claude":
        return PERMISSION_MODES
    if harness != "codex":
        return ()
    accepted = accepted_modes(help_text)
    out: list[str] = []
    for mode in dict.fromkeys(
        (*VOLEE_MODES, "bypassPermissions", *SANDBOX_MODES, *APPROVAL_POLICIES)
    ):
        try:
            permission_args(mode, accepted)
        except Error:
            continue
        out.append(mode)
    return tuple(out)
