"""Plain text from a PTY's raw output: the last lines, with terminal escapes stripped.

Imported by the host only when a ``screen`` request arrives (``re`` is not free).  It is a
reasonable approximation, not a terminal emulator: cursor movements are dropped, a carriage
return starts the line over, a backspace removes a character.
"""

from __future__ import annotations

import re

# CSI (ESC [ ... final), OSC (ESC ] ... BEL or ST), DCS/PM/APC strings, charset picks,
# and any other two-byte escape.
_ESCAPES = re.compile(
    r"\x1b\[[0-?]*[ -/]*[@-~]"
    r"|\x1b\][^\x07\x1b]*(?:\x07|\x1b\\)?"
    r"|\x1b[PX^_][^\x1b]*(?:\x1b\\)?"
    r"|\x1b[()*+][0-9A-Za-z]"
    r"|\x1b[@-Z\\-_=>78]"
)
_CONTROLS = re.compile(r"[\x00-\x07\x0b\x0c\x0e-\x1f\x7f]")


def _line(raw: str) -> str:
    # A carriage return without a newline redraws the line: keep what was drawn last,
    # over what it did not cover.
    text = ""
    for part in raw.split("\r"):
        text = part + text[len(part) :]
    while "\b" in text:
        i = text.index("\b")
        text = text[: max(i - 1, 0)] + text[i + 1 :]
    return _CONTROLS.sub("", text).rstrip()


def render(raw: bytes, lines: int) -> str:
    """The last ``lines`` lines of ``raw`` terminal output as plain text."""
    text = _ESCAPES.sub("", raw.decode("utf-8", errors="replace"))
    out = [_line(part) for part in text.split("\n")]
    while out and not out[-1]:
        out.pop()
    return "\n".join(out[-lines:]) if lines > 0 else ""
