"""Which parser reads which harness's transcripts (``transcript.py`` is what they share; each
``transcript_<harness>.py`` one harness's format: this module is above them all)."""

from __future__ import annotations

from typing import Protocol

from ..core.model import Harness
from .transcript import Parser, Splitter
from .transcript_claude import ClaudeTranscript
from .transcript_codex import CodexTranscript
from .transcript_pi import PiTranscript


class ParserFactory(Protocol):
    """A parser class (what ``parser_for`` makes one of)."""

    def __call__(self, *, keep: bool = True) -> Parser: ...


def parser_for(harness: Harness, keep: bool = True) -> Parser | None:
    """A fresh parser for the harness's transcripts (None: no transcript volee can read);
    ``keep=False``: one that keeps no entries (``Parser``)."""
    kinds: dict[Harness, ParserFactory] = {
        Harness.CLAUDE: ClaudeTranscript,
        Harness.CODEX: CodexTranscript,
        Harness.PI: PiTranscript,
    }
    make = kinds.get(harness)
    return make(keep=keep) if make is not None else None


def parse(harness: Harness, text: str) -> Parser:
    """A whole transcript at once (tests, tools): its complete lines parsed."""
    parser = parser_for(harness)
    if parser is None:
        raise ValueError(f"volee reads no transcript of {harness}")
    splitter = Splitter()
    parser.feed(splitter.push(text.encode()))
    return parser


__all__ = ["ParserFactory", "parse", "parser_for"]
