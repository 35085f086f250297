"""Hook intake: a payload from ``volee hook`` (live or spooled) becomes events, or is kept.

Nothing is ever thrown away: a payload that cannot be read, or that belongs
to no agent, is written to ``spool/rejected/`` with the reason and logged.  A
hook must never slow or break the agent, so a rejection is not an error reply.
"""

from __future__ import annotations

import json
import logging
import os
import stat
import time
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from ..atomicfile import write_atomic
from ..core.events import StateChanged
from ..harness.base import PayloadError, Profile
from .clock import Clock
from .errors import Refused
from .params import hook_request
from .service import Service

log = logging.getLogger(__name__)


class Intake:
    """Turns hook payloads into committed events."""

    def __init__(
        self, service: Service, profiles: Mapping[str, Profile], spool: Path, clock: Clock
    ) -> None:
        self._service = service
        self._profiles = profiles
        self.spool = spool
        self.rejected = spool / "rejected"
        self._clock = clock
        self.accepted = 0
        self.rejected_count = 0

    async def hook(self, params: Mapping[str, Any]) -> dict[str, Any]:
        """Handle one hook request; always answers (accepted or kept with the reason)."""
        request = hook_request(params)
        when = request.received_at if request.received_at is not None else self._clock.now()
        if request.event is None:
            return self._reject(params, "no hook event name (run as `volee hook EVENT`)")
        if request.too_large:
            return self._reject(
                params,
                f"the hook payload is too large (over {request.too_large} bytes, the limit of "
                "`volee hook`); it was not read, so its events are lost",
            )
        raw = request.payload
        if raw is None:
            return self._reject(params, "no payload text")
        try:
            payload = json.loads(raw) if raw.strip() else None
        except json.JSONDecodeError as exc:
            return self._reject(params, f"payload is not JSON: {exc}")
        except RecursionError:
            return self._reject(params, "payload is nested too deeply to read (~1,000 levels)")
        if not isinstance(payload, dict):
            return self._reject(params, "payload is not a JSON object")
        registry = self._service.current()
        agent_id = request.agent
        if agent_id is not None:
            agent = registry.agents.get(agent_id)
            if agent is None:
                gone = registry.name_of(agent_id)
                reason = f"agent {gone} was forgotten" if gone else f"unknown agent {agent_id}"
                return self._reject(params, reason)
        else:
            harness = request.harness
            session = payload.get("session_id")
            owner = registry.owner_of(harness, session) if isinstance(session, str) else None
            if owner is None:
                return self._reject(params, f"no agent owns {harness} session {session!r}")
            agent = registry.agents[owner]
        profile = self._profiles.get(agent.harness)
        if profile is None:
            return self._reject(params, f"no hook support for harness {agent.harness}")
        try:
            events = profile.hook_events(agent, request.event, payload, when)
        except PayloadError as exc:
            return self._reject(params, str(exc))
        # A payload that arrives late (spooled, then ingested at the next start; or overtaken
        # by a later hook) must not take the agent back to an older state, e.g. done -> working.
        events = [
            e for e in events if not (isinstance(e, StateChanged) and e.at < agent.state_since)
        ]
        try:
            await self._service.commit(events, key=request.key)
        except Refused as exc:
            return self._reject(params, str(exc))
        self.accepted += 1
        return {"accepted": True, "events": len(events)}

    def _reject(self, params: Mapping[str, Any], reason: str) -> dict[str, Any]:
        self.rejected_count += 1
        self.rejected.mkdir(mode=0o700, parents=True, exist_ok=True)
        key = hook_request(params).key
        stem = key if key is not None and key.replace("-", "").isalnum() else None
        stem = stem or f"{time.time_ns()}-{os.getpid()}"
        record = {"reason": reason, "params": dict(params)}
        try:
            write_atomic(self.rejected / f"{stem}.json", json.dumps(record).encode())
        except OSError:
            log.exception("could not keep a rejected hook payload (%s)", reason)
        log.warning("hook %s kept in %s: %s", hook_request(params).event, self.rejected, reason)
        return {"accepted": False, "reason": reason}

    async def ingest_spool(self) -> int:
        """Ingest spooled payloads in order, exactly once (their keys are in the log).

        Only regular files are opened, and never in a way that blocks: a FIFO, a socket, a
        symlink or a folder named ``*.json`` is moved to ``rejected/`` unread.  A half-written
        ``.tmp`` left by a hook that was killed mid-write is moved there too once it is old.
        """
        if not self.spool.is_dir():
            return 0
        self._clean_stale_tmp()
        count = 0
        for path in sorted(self.spool.glob("*.json")):
            try:
                params = json.loads(_read_regular(path, MAX_SPOOL_FILE))
                if not isinstance(params, dict):
                    raise ValueError("not a JSON object")
            except FileNotFoundError:
                continue  # ingested meanwhile (or removed by hand)
            except RecursionError:
                self._keep_unreadable(path, "unreadable spool file: nested too deeply")
                continue
            except (OSError, ValueError) as exc:
                self._keep_unreadable(path, f"unreadable spool file: {exc}")
                continue
            params.setdefault("key", path.stem)
            await self.hook(params)
            path.unlink(missing_ok=True)
            count += 1
        return count

    def _clean_stale_tmp(self) -> None:
        now = self._clock.now()
        for path in self.spool.glob(".*.tmp"):
            try:
                st = path.lstat()
            except OSError:
                continue
            # A hook writes, fsyncs and renames within milliseconds: an old one was killed.
            if now - st.st_mtime < STALE_TMP:
                continue
            try:
                self._keep_unreadable(path, "half-written by a hook that was killed mid-write")
            except OSError as exc:
                log.warning("could not move the stale spool file %s: %s", path, exc)

    def _keep_unreadable(self, path: Path, reason: str) -> None:
        self.rejected.mkdir(mode=0o700, parents=True, exist_ok=True)
        target = self.rejected / path.name
        os.replace(path, target)
        write_atomic(target.with_name(target.name + ".reason.txt"), reason.encode())
        log.warning("spool file %s kept in %s: %s", path.name, self.rejected, reason)


#: A spool file larger than this is not read (the shim never writes one: its cap is 8 MiB).
MAX_SPOOL_FILE = 64 << 20
#: A ``.tmp`` in the spool older than this (seconds) was left by a hook killed mid-write.
STALE_TMP = 600.0


def _read_regular(path: Path, limit: int) -> bytes:
    """The bytes of ``path`` if it is a regular file of at most ``limit`` bytes; else OSError.

    Opened with O_NONBLOCK and O_NOFOLLOW, so a FIFO or a symlink never blocks nor leads
    elsewhere; the type is checked on the open file, not on the name (no race).
    """
    flags = os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_NOFOLLOW", 0)
    fd = os.open(path, flags)
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            raise OSError(f"{path.name} is not a regular file ({stat.filemode(st.st_mode)})")
        if st.st_size > limit:
            raise OSError(f"{path.name} is {st.st_size} bytes, more than {limit}")
        os.set_blocking(fd, True)
        chunks = []
        while chunk := os.read(fd, 1 << 20):
            chunks.append(chunk)
        return b"".join(chunks)
    finally:
        os.close(fd)
