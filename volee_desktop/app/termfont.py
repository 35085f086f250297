"""The agent window's font: a fixed-width face, then fallbacks for the glyphs harnesses draw.

Claude Code draws ``⏵⏵`` (its mode line), ``⎿`` (a tool's result), ``✻`` and ``⏺`` (its
spinner and messages), box lines and checkmarks; DejaVu Sans Mono, the usual fixed font
on Linux, has none of ``⏵ ⎿ ⏺``, which Qt then draws as empty boxes.  The chain is the
system's fixed font, then for each glyph it lacks the first family ``fc-list`` names that
has it (Symbola from ``fonts-symbola`` on Debian; ``scripts/dev`` installs it).  Without
``fc-list`` (macOS, Windows) the system's own fallback applies.
"""

from __future__ import annotations

import functools
import logging
import shutil
import subprocess
from collections.abc import Callable, Iterable

from PySide6.QtGui import QFont, QFontDatabase, QFontInfo, QRawFont

log = logging.getLogger(__name__)

#: Glyphs the harnesses draw in their terminal UI (Claude Code's dialog and mode line first).
GLYPHS = "⏵⎿✻⏺❯✶✢✳✽●◯☐☒✔✘·─│╭╮╰╯↑↓←→⚠"
FC_TIMEOUT = 5.0


def parse_fc_list(text: str) -> list[str]:
    """The families of ``fc-list … family``'s output, each once, in its order (a line may
    name a family in several languages: "DejaVu Sans,DejaVu Sans Condensed")."""
    out: list[str] = []
    for line in text.splitlines():
        family = line.split(",")[0].strip()
        if family and family not in out:
            out.append(family)
    return out


def fc_families(glyph: str) -> list[str]:
    """The installed families that have ``glyph`` (monospaced ones first), per fc-list."""
    fc = shutil.which("fc-list")
    if fc is None:
        return []
    found: list[str] = []
    for pattern in (f":charset={ord(glyph):x}:spacing=mono", f":charset={ord(glyph):x}"):
        try:
            done = subprocess.run(
                [fc, pattern, "family"],
                capture_output=True,
                text=True,
                timeout=FC_TIMEOUT,
                check=False,
            )
        except (OSError, subprocess.SubprocessError) as exc:
            log.warning("fc-list could not say which fonts have %r: %s", glyph, exc)
            return found
        found += [f for f in parse_fc_list(done.stdout) if f not in found]
    return found


def has_glyph(family: str, glyph: str) -> bool:
    """Whether ``family`` itself draws ``glyph``: the one font Qt picks for it (a QRawFont),
    not Qt's fallbacks (``QFontMetrics.inFontUcs4`` says yes for any family, even one that
    does not exist, whenever some installed font has the glyph)."""
    raw = QRawFont.fromFont(QFont(family))
    return raw.isValid() and raw.supportsCharacter(ord(glyph))


def fallback_chain(
    primary: str,
    glyphs: Iterable[str] = GLYPHS,
    has: Callable[[str, str], bool] = has_glyph,
    lookup: Callable[[str], list[str]] = fc_families,
) -> list[str]:
    """``primary``, then for each glyph none of the chain has, the first family that has it."""
    chain = [primary]
    for glyph in glyphs:
        if any(has(family, glyph) for family in chain):
            continue
        extra = next((f for f in lookup(glyph) if f not in chain and has(f, glyph)), None)
        if extra is None:
            log.info("no installed font draws %r (U+%04X)", glyph, ord(glyph))
            continue
        chain.append(extra)
    return chain


@functools.cache
def _chain(primary: str) -> tuple[str, ...]:
    return tuple(fallback_chain(primary))


def terminal_font() -> QFont:
    """The fixed-width font of an agent's screen, with the fallbacks its glyphs need."""
    font = QFontDatabase.systemFont(QFontDatabase.SystemFont.FixedFont)
    # The family fontconfig resolves it to ("monospace" is an alias Qt would skip in a list
    # of families, drawing the whole screen in the first fallback: Symbola, proportional).
    primary = QFontInfo(font).family()
    font.setFamilies(list(_chain(primary)))
    font.setFixedPitch(True)
    return font


def missing(families: Iterable[str], glyphs: Iterable[str] = GLYPHS) -> str:
    """The glyphs none of ``families`` draws."""
    chain = list(families)
    return "".join(g for g in glyphs if not any(has_glyph(f, g) for f in chain))
