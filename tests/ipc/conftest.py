"""Fixtures for the ipc tests: a short socket folder and a handler with test methods."""

from __future__ import annotations

import shutil
import tempfile
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.fakes.ipc_methods import Raw, TestMethods
from volee_desktop.ipc.server import IpcServer


@pytest.fixture(autouse=True)
def volee_home(monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    home = Path(tempfile.mkdtemp(prefix="v", dir="/tmp"))
    monkeypatch.setenv("VOLEE_HOME", str(home))
    yield home
    shutil.rmtree(home, ignore_errors=True)


@pytest.fixture
def sock_path(volee_home: Path) -> Path:
    # A folder the server has to create, under a short base (sun_path is ~104 bytes).
    return volee_home / "run" / "s.sock"


@pytest.fixture
def methods() -> TestMethods:
    return TestMethods()


@pytest.fixture
async def server(sock_path: Path, methods: TestMethods) -> AsyncIterator[IpcServer]:
    srv = await IpcServer.start(sock_path, methods)
    try:
        yield srv
    finally:
        methods.release.set()
        await srv.close()


@pytest.fixture
async def raw_factory(sock_path: Path) -> AsyncIterator[Any]:
    opened: list[Raw] = []

    async def make() -> Raw:
        raw = await Raw.open(sock_path)
        opened.append(raw)
        return raw

    yield make
    for raw in opened:
        await raw.close()
