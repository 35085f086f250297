"""The dataclasses' methods compiled once and kept (``volee_desktop/dcache.py``, issue 27)."""

from __future__ import annotations

import dataclasses
import json
import os
import subprocess
import sys
from collections.abc import Iterator
from importlib.util import MAGIC_NUMBER
from pathlib import Path

import pytest

from volee_desktop import dcache


@pytest.fixture
def state(tmp_path: Path) -> Iterator[Path]:
    folder = tmp_path / "state"
    folder.mkdir(mode=0o700)
    yield folder
    dcache.uninstall()


def _point(tag: str) -> type:
    """A new dataclass with every generated method; ``tag`` makes its source its own."""
    return dataclasses.make_dataclass(
        f"Point{tag}",
        [("x", int), (f"y_{tag}", int, dataclasses.field(default=2))],
        frozen=True,
        order=True,
    )


def test_a_second_start_reuses_what_the_first_compiled(state: Path) -> None:
    dcache.install(str(state))
    first = _point("a")
    assert dcache.save() > 0
    cache = state / dcache.NAME
    assert cache.read_bytes()[: len(MAGIC_NUMBER)] == MAGIC_NUMBER
    assert cache.stat().st_mode & 0o777 == 0o600
    assert dcache.save() == 0  # nothing new: nothing written
    dcache.uninstall()

    dcache.install(str(state))
    compiled: list[object] = []
    real = compile

    def counting(*args: object, **kwargs: object) -> object:
        compiled.append(args[0])
        return real(*args, **kwargs)  # type: ignore[call-overload]

    dcache.__dict__["compile"] = counting  # the module's own name for it
    try:
        again = _point("a")
    finally:
        del dcache.__dict__["compile"]
    assert compiled == []  # every method came from the file
    assert dcache.save() == 0
    # The classes behave as compiled ones do.
    a, b = again(1), again(3, 4)
    assert (a.x, a.y_a, repr(a)) == (1, 2, "Pointa(x=1, y_a=2)")
    assert a < b
    assert a == again(1)
    assert hash(a) == hash(again(1))
    with pytest.raises(dataclasses.FrozenInstanceError):
        a.x = 5  # type: ignore[misc]
    assert repr(first(1)) == repr(a)


def test_the_kept_code_is_what_compile_makes(state: Path) -> None:
    dcache.install(str(state))
    _point("b")
    assert dcache._cache is not None
    new = dict(dcache._cache.new)
    assert new
    for source, code in new.items():
        assert code == compile(source, "<string>", "exec", dont_inherit=True)


@pytest.mark.parametrize(
    "spoil",
    ["not marshal", "another interpreter", "open to others", "folder open to others"],
)
def test_a_file_it_cannot_trust_or_read_is_not_used(state: Path, spoil: str) -> None:
    dcache.install(str(state))
    _point("c")
    dcache.save()
    dcache.uninstall()
    cache = state / dcache.NAME
    if spoil == "not marshal":
        cache.write_bytes(MAGIC_NUMBER + b"\xff\x00garbage")
    elif spoil == "another interpreter":
        cache.write_bytes(b"\x00\x00\r\n" + cache.read_bytes()[len(MAGIC_NUMBER) :])
    elif spoil == "open to others":
        cache.chmod(0o666)
    else:
        state.chmod(0o777)

    dcache.install(str(state))
    assert dcache._cache is not None
    assert dcache._cache.known == {}
    _point("c")  # compiled as usual
    assert dcache._cache.new
    if spoil == "folder open to others":
        assert dcache.save() == 0  # nor written there


def test_a_file_grown_past_the_most_starts_afresh(
    state: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Sources of older versions pile up: past ``MOST`` the file holds only the last run's."""
    dcache.install(str(state))
    _point("d")
    assert dcache.save() > 0
    dcache.uninstall()
    dcache.install(str(state))
    assert dcache._cache is not None
    older = set(dcache._cache.known)
    monkeypatch.setattr(dcache, "MOST", len(older) + 1)
    _point("e")
    newer = set(dcache._cache.new)
    assert dcache.save() == len(newer)
    dcache.uninstall()
    dcache.install(str(state))
    assert set(dcache._cache.known) == newer


def test_volee_keeps_it_in_its_state_folder(tmp_path: Path) -> None:
    """A run of the CLI keeps what it compiled in ``<state>/dataclasses.cache``; the next run
    compiles none of it again."""
    env = {**os.environ, "VOLEE_HOME": str(tmp_path)}
    (tmp_path / "state").mkdir(mode=0o700)
    code = (
        "import json, sys\n"
        "from volee_desktop.cli.entry import main\n"
        "try:\n"
        "    rc = main(['--version'])\n"
        "except SystemExit as exc:\n"
        "    rc = exc.code\n"
        "from volee_desktop import dcache\n"
        "print(json.dumps([rc, len(dcache._cache.known), len(dcache._cache.new)]))\n"
    )

    def run() -> list[int]:
        out = subprocess.run(
            [sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=60
        )
        assert out.returncode == 0, out.stderr
        result: list[int] = json.loads(out.stdout.splitlines()[-1])
        return result

    rc, known, new = run()
    assert (rc, known) == (0, 0)
    assert new > 0
    assert (tmp_path / "state" / dcache.NAME).exists()
    rc, known, new = run()
    assert rc == 0
    assert known > 0
    assert new == 0
