"""``agents.log``: an agent's conversation, read from its harness's own transcript.

The transcript of each of the agent's sessions is found by its session id (Claude Code's
``<config>/projects/*/<id>.jsonl``, codex's ``sessions/*/*/*/rollout-*-<id>.jsonl``, pi's
``sessions/*/*_<id>.jsonl``, under the agent's own HOME) and parsed by its harness's parser
(``harness/transcript.py``).  Reading is incremental and off the loop: each file is followed
from where the last read stopped, in a thread, in chunks, so a 10 MB transcript costs the
daemon's loop nothing and a second read only what was added.  A file that shrank or was
replaced is read again from its start.

Two kinds of reader are kept.  A row's summary (the plan, the last reply: read at each turn's
end for every agent, ``outcomes.py``) follows the file with a parser that keeps no entries,
one per agent, so the daemon does not grow with every turn of every conversation (the hour's
soak, issue 22: the five Claude Code agents' parsed conversations were the largest thing it
grew by).  The conversation itself (``agents.log``, the agent window's pages) keeps its
entries, for the ``KEPT`` agents most recently read.
"""

from __future__ import annotations

import asyncio
import glob
import json
import logging
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ...core.model import Agent, Harness
from ...harness.claude import config_dir
from ...harness.transcript import Entry, Parser, Plan, Splitter
from ...harness.transcripts import parser_for
from ...ipc.methods import Method
from ...ipc.protocol import MAX_MESSAGE
from ...ipc.server import Connection, MethodTable
from ..params import decoder
from ..service import Service
from ..views import resolve_agent
from .params import LogParams
from .results import Log

log = logging.getLogger(__name__)

CHUNK = 1 << 20  # bytes read at a time
#: A reply holds at most this much of entries (a message is at most 1 MiB).
LOG_BUDGET = MAX_MESSAGE - 128 * 1024
#: Characters of a tool's input or result sent per entry (the rest is said to be left out),
#: and of a message's text.
FIELD_LIMIT = 4000
TEXT_LIMIT = 64_000
DEFAULT_LIMIT = 1000


def _home(env: dict[str, str]) -> Path:
    home = env.get("HOME") or os.environ.get("HOME")
    return Path(home) if home else Path.home()


def transcript_path(agent: Agent, session: str) -> Path | None:
    """Where the agent's harness keeps ``session``'s transcript (None: not found; blocks)."""
    env = dict(agent.launch.env) if agent.launch is not None else dict(os.environ)
    name = glob.escape(session)
    if agent.harness is Harness.CLAUDE:
        pattern = str(config_dir(env) / "projects" / "*" / f"{name}.jsonl")
    elif agent.harness is Harness.CODEX:
        root = Path(env.get("CODEX_HOME") or _home(env) / ".codex") / "sessions"
        pattern = str(root / "*" / "*" / "*" / f"rollout-*-{name}.jsonl")
    elif agent.harness is Harness.PI:
        pattern = str(_home(env) / ".pi" / "agent" / "sessions" / "*" / f"*_{name}.jsonl")
    else:
        return None
    found = sorted(glob.glob(pattern), key=lambda p: (os.path.getmtime(p), p))
    return Path(found[-1]) if found else None


#: How many transcripts are followed at once for their conversation (each keeps its parsed
#: entries: ``agents.log``).
KEPT = 16
#: How many are followed for a row's summary (each keeps its plan and last reply, no entries).
SUMMARIES_KEPT = 512


@dataclass
class Followed:
    """One transcript file, read up to ``offset``."""

    path: Path
    parser: Parser
    splitter: Splitter = field(default_factory=Splitter)
    offset: int = 0
    inode: int | None = None
    warned: bool = False

    def catch_up(self) -> None:
        """Read what was added since the last time (blocks: run it in a thread)."""
        try:
            with self.path.open("rb") as f:
                st = os.fstat(f.fileno())
                if st.st_ino != self.inode or st.st_size < self.offset:
                    fresh = parser_for(self.parser.harness, keep=self.parser.keep)
                    assert fresh is not None
                    self.parser, self.splitter, self.offset = fresh, Splitter(), 0
                    self.inode = st.st_ino
                f.seek(self.offset)
                while chunk := f.read(CHUNK):
                    self.offset += len(chunk)
                    self.parser.feed(self.splitter.push(chunk))
        except OSError as exc:
            log.warning("cannot read the transcript %s: %s", self.path, exc)


@dataclass
class Reading:
    """An agent's conversation as read now: every session's entries, in order."""

    entries: list[Entry]
    paths: list[str]
    plan: Plan | None
    last_message: str | None
    unreadable: int
    partial: bool
    notice: str | None


class Transcripts:
    """Follows the agents' transcripts; serves ``agents.log``."""

    def __init__(self, service: Service, methods: MethodTable) -> None:
        self.service = service
        #: The transcripts followed, least recently read first: at most ``KEPT`` (a parser
        #: holds its entries; sixty agents' whole conversations are not kept for the daemon's
        #: life). One read again after it was let go is parsed again from its start.
        self._files: dict[str, Followed] = {}
        #: The same for the rows' summaries: parsers that keep no entries.
        self._summaries: dict[str, Followed] = {}
        self._locks: dict[str, asyncio.Lock] = {}
        methods.add(Method.AGENTS_LOG, self.api_log, decoder(LogParams))

    async def read(self, agent: Agent) -> Reading:
        """The agent's conversation now (reads only what was added since the last read)."""
        lock = self._locks.setdefault(agent.id, asyncio.Lock())
        async with lock:
            return await asyncio.to_thread(self._read, agent, True)

    async def summary(self, agent: Agent) -> Reading:
        """The agent's plan and last reply now, with no entries (``Reading.entries`` is empty;
        reads only what was added since the last summary)."""
        lock = self._locks.setdefault(agent.id, asyncio.Lock())
        async with lock:
            return await asyncio.to_thread(self._read, agent, False)

    @property
    def followed(self) -> int:
        """How many transcript files are followed now for their conversation (at most
        ``KEPT``)."""
        return len(self._files)

    @property
    def summarised(self) -> int:
        """How many transcript files are followed now for a row's summary."""
        return len(self._summaries)

    def forget(self, agent_id: str) -> None:
        """Drop what is kept of a forgotten agent's transcripts."""
        self._locks.pop(agent_id, None)
        for files in (self._files, self._summaries):
            for key in [k for k in files if k.startswith(f"{agent_id}:")]:
                del files[key]

    def _read(self, agent: Agent, keep: bool) -> Reading:
        entries: list[Entry] = []
        paths: list[str] = []
        plan: Plan | None = None
        last: str | None = None
        unreadable = 0
        partial = False
        missing: list[str] = []
        if parser_for(agent.harness) is None:
            said = f"volee reads no transcript of {agent.harness} agents; `volee output` shows "
            said += "its screen"
            return Reading([], [], None, None, 0, False, said)
        files = self._files if keep else self._summaries
        sessions = [s for s in agent.sessions if not s.startswith("pid-")]
        for session in sessions:
            key = f"{agent.id}:{session}"
            followed = files.get(key)
            if followed is None:
                path = transcript_path(agent, session)
                parser = parser_for(agent.harness, keep=keep)
                if path is None or parser is None:
                    missing.append(session)
                    continue
                followed = files[key] = Followed(path, parser)
            else:
                files[key] = files.pop(key)  # the most recently read, last
            followed.catch_up()
            p = followed.parser
            entries.extend(p.entries)
            paths.append(str(followed.path))
            plan = p.plan or plan
            last = p.last_message or last
            bad = p.unreadable + p.unknown
            unreadable += bad
            partial = followed.splitter.partial
            if bad and not followed.warned:
                followed.warned = True
                log.warning(
                    "%d lines of %s could not be read (a newer format of %s?); the rest is shown",
                    bad,
                    followed.path,
                    agent.harness,
                )
        notice: str | None = None
        if not sessions:
            notice = f"{agent.name} has no session yet: nothing to read"
        elif missing and not paths:
            notice = f"no transcript found for session {', '.join(missing)} of {agent.name}"
        elif unreadable:
            notice = (
                f"{unreadable} lines of the transcript could not be read (a format newer than "
                "volee knows?): what could be read is shown"
            )
        while len(files) > (KEPT if keep else SUMMARIES_KEPT):
            del files[next(iter(files))]
        return Reading(entries, paths, plan, last, unreadable, partial, notice)

    async def api_log(self, _conn: Connection, params: LogParams) -> Log:
        agent = resolve_agent(self.service.current(), params.agent)
        reading = await self.read(agent)
        total = len(reading.entries)
        tail = params.tail
        start = params.start
        if start is None:
            start = max(0, total - tail) if tail is not None else 0
        elif start > total:
            start = 0  # the transcript was replaced or cut: from its start again
        limit = params.limit or DEFAULT_LIMIT
        end = min(total, start + limit)
        if tail is not None:
            end = total
        items, stop = _fit([e.to_json() for e in reading.entries[start:end]])
        return {
            "agent": agent.id,
            "name": agent.name,
            "harness": str(agent.harness),
            "paths": reading.paths,
            "total": total,
            "start": start,
            "next": start + stop if start + stop < end else None,
            "entries": items,
            "plan": reading.plan.to_json() if reading.plan else None,
            "unreadable": reading.unreadable,
            "partial": reading.partial,
            "notice": reading.notice,
        }


def _short(value: Any, limit: int = FIELD_LIMIT) -> Any:
    """A tool's input or result, cut to ``limit`` characters (saying so)."""
    text = value if isinstance(value, str) else None
    if text is None and value is not None and not isinstance(value, (int, float, bool)):
        dumped = json.dumps(value, ensure_ascii=False)
        if len(dumped) <= limit:
            return value
        text = dumped
    if text is None or len(text) <= limit:
        return value
    return text[:limit] + f"… ({len(text) - limit} more characters)"


def _fit(items: list[dict[str, Any]]) -> tuple[list[dict[str, Any]], int]:
    """As many items as one reply holds, from the first; and how many that is."""
    out: list[dict[str, Any]] = []
    used = 0
    for item in items:
        for key in ("input", "result"):
            if key in item:
                item[key] = _short(item[key])
        item["text"] = _short(item["text"], TEXT_LIMIT)
        size = len(json.dumps(item, ensure_ascii=False).encode()) + 1
        if out and used + size > LOG_BUDGET:
            break
        used += size
        out.append(item)
    return out, len(out)
