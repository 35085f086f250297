"""Plain text from a PTY's raw output: the last lines, with terminal escapes stripped.

Imported by the host only when a ``screen`` request arrives.  A hand-written scanner, not
``re``: importing and compiling regular expressions would cost every host half a MiB.
It is a reasonable approximation, not a terminal emulator: cursor movements are dropped,
a carriage return starts the line over, a backspace removes a character.
"""

from __future__ import annotations

ESC = "\x1b"
# Control characters other than \b, \t, \n, \r go; \b and \r are handled per line.
_CONTROLS = {c: None for c in (*range(0x00, 0x08), 0x0B, 0x0C, *range(0x0E, 0x20), 0x7F)}


def strip_escapes(text: str) -> str:
    """``text`` without CSI, OSC, DCS/PM/APC, charset and other escape sequences."""
    out: list[str] = []
    i, n = 0, len(text)
    while i < n:
        j = text.find(ESC, i)
        if j < 0:
            out.append(text[i:])
            break
        out.append(text[i:j])
        i = j + 1
        if i >= n:
            break
        kind = text[i]
        if kind == "[":  # CSI: parameters and intermediates, then a final byte @..~
            i += 1
            while i < n and not "@" <= text[i] <= "~":
                i += 1
            i += 1
        elif kind in "]PX^_":  # a string, ended by BEL or ESC \
            i += 1
            while i < n and text[i] not in "\x07\x1b":
                i += 1
            if text.startswith("\x1b\\", i):
                i += 2
            elif i < n and text[i] == "\x07":
                i += 1
        elif kind in "()*+":  # charset designation: one more character
            i += 2
        else:
            i += 1
    return "".join(out)


def _line(raw: str) -> str:
    # A carriage return without a newline redraws the line: keep what was drawn last,
    # over what it did not cover.
    text = ""
    for part in raw.split("\r"):
        text = part + text[len(part) :]
    while "\b" in text:
        i = text.index("\b")
        text = text[: max(i - 1, 0)] + text[i + 1 :]
    return text.translate(_CONTROLS).rstrip()


def render(raw: bytes, lines: int, cut: bool = False) -> str:
    """The last ``lines`` lines of ``raw`` terminal output as plain text.

    ``cut`` says ``raw`` starts mid-stream: its first line may be partial and is dropped.
    Lines are taken from the end one at a time, so a request for 40 lines makes 40 small
    strings, not thousands (a burst of small objects costs the host a fresh arena).
    """
    out: list[str] = []
    end = len(raw)
    while end > 0 and len(out) < lines:
        # A UTF-8 character never holds a \n byte: splitting bytes is safe.
        start = raw.rfind(b"\n", 0, end) + 1
        if start == 0 and cut:
            break
        line = _line(strip_escapes(raw[start:end].decode("utf-8", errors="replace")))
        if line or out:  # blank lines at the very end do not count
            out.append(line)
        end = start - 1
    out.reverse()
    return "\n".join(out)
