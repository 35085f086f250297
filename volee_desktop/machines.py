"""The other machines volee shows (``[machines.NAME]`` in ``config.toml``): what each is and how
its bridge is started.

A machine is a command that reaches ``volee bridge`` on the other side: ``ssh -T DEST`` (the
person's own ssh config, keys and agent; BatchMode, so nothing ever prompts), or any command
given with ``--via`` (``wsl.exe -d Ubuntu --``, ``docker exec -i CONTAINER``).  Nothing here is
a secret.  Read by ``config.load_config`` (a bad entry is a problem naming it, the others are
kept) and written by ``volee machine add|rm`` (tomlkit, keeping the person's comments).
Docs: docs/machines.md.
"""

from __future__ import annotations

import re
import shlex
import sys
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

__all__ = [
    "SSH_OPTIONS",
    "Machine",
    "MachineError",
    "authorized_keys_line",
    "check_name",
    "parse_machines",
    "remove_machine",
    "save_machine",
]

#: So that nothing prompts behind the tray or hangs for ever: no password or host-key
#: question (BatchMode), a bounded connect, and a dead peer noticed within 45 s.
SSH_OPTIONS: tuple[str, ...] = (
    "-T",
    "-o",
    "BatchMode=yes",
    "-o",
    "ConnectTimeout=10",
    "-o",
    "ServerAliveInterval=15",
    "-o",
    "ServerAliveCountMax=3",
)

_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,62}$")
_KEYS = ("ssh", "via", "volee")


class MachineError(ValueError):
    """A machine that cannot be kept: a bad name or value (the message says what to do)."""


def check_name(name: str) -> str:
    """``name`` when it can name a machine (it is the prefix of ``NAME:AGENT``), else
    MachineError."""
    if not _NAME.match(name):
        raise MachineError(
            f"{name!r} cannot name a machine: use letters, digits, '.', '-' or '_' "
            "(no ':' or spaces, at most 63 characters), e.g. devbox"
        )
    return name


@dataclass(frozen=True)
class Machine:
    """One ``[machines.NAME]`` entry: reached over ``ssh`` or ``via`` a command."""

    name: str
    ssh: str | None = None
    via: str | None = None
    volee: str = "volee"

    def bridge_argv(self) -> list[str]:
        """The command that starts the bridge: ``<ssh -T DEST | CMD …> <volee> bridge``.

        Over ssh the remote command is a line for the remote shell (ssh joins its words), so
        ``volee`` is given as the person wrote it (``~/.local/bin/volee`` expands there);
        ``via`` is split here like a shell would and run directly.
        """
        if self.ssh is not None:
            return ["ssh", *SSH_OPTIONS, self.ssh, "--", self.volee, "bridge"]
        assert self.via is not None
        return [*split_command(self.via), self.volee, "bridge"]

    @property
    def where(self) -> str:
        """How it is reached, in words: ``ssh devbox`` or ``via 'wsl.exe -d Ubuntu --'``."""
        if self.ssh is not None:
            return f"ssh {self.ssh}"
        return f"via {self.via!r}"

    def table(self) -> dict[str, str]:
        """Its keys as stored in ``config.toml`` (the default ``volee`` left out)."""
        data = {"ssh": self.ssh, "via": self.via}
        kept = {k: v for k, v in data.items() if v is not None}
        if self.volee != "volee":
            kept["volee"] = self.volee
        return kept


def split_command(text: str, *, windows: bool = sys.platform == "win32") -> list[str]:
    """A ``via`` command's words, split as a shell would: quotes group words; on Windows a
    backslash is a path's, not an escape (``C:\\Windows\\System32\\wsl.exe -d Ubuntu --``)."""
    lexer = shlex.shlex(text, posix=True)
    lexer.whitespace_split = True
    lexer.commenters = ""
    if windows:
        lexer.escape = ""
    return list(lexer)


def _text(name: str, key: str, value: object) -> str:
    if not isinstance(value, str) or not value.strip():
        raise MachineError(f"machines.{name}.{key} = {value!r}: must be a non-empty string")
    return value.strip()


def machine_of(name: str, table: Mapping[str, Any]) -> Machine:
    """The machine of one ``[machines.NAME]`` table (MachineError naming what is wrong)."""
    check_name(name)
    unknown = [k for k in table if k not in _KEYS]
    if unknown:
        raise MachineError(
            f"machines.{name}: unknown key {unknown[0]!r} (known: {', '.join(_KEYS)})"
        )
    ssh = _text(name, "ssh", table["ssh"]) if "ssh" in table else None
    via = _text(name, "via", table["via"]) if "via" in table else None
    if (ssh is None) == (via is None):
        raise MachineError(
            f'machines.{name}: give exactly one of ssh = "user@host" or via = "CMD …"'
        )
    if ssh is not None and ssh.startswith("-"):
        raise MachineError(f"machines.{name}.ssh = {ssh!r}: a destination, not an ssh option")
    if via is not None:
        try:
            if not split_command(via):
                raise ValueError("empty")
        except ValueError as exc:
            raise MachineError(f"machines.{name}.via = {via!r}: not a command ({exc})") from None
    volee = _text(name, "volee", table["volee"]) if "volee" in table else "volee"
    return Machine(name, ssh, via, volee)


def parse_machines(data: object) -> tuple[dict[str, Machine], list[str]]:
    """The ``[machines]`` table: the machines, and a problem for each entry left out."""
    if not isinstance(data, Mapping):
        return {}, ['machines must be a section of tables ([machines.devbox] ssh = "devbox")']
    machines: dict[str, Machine] = {}
    problems: list[str] = []
    for name, table in data.items():
        if not isinstance(table, Mapping):
            problems.append(f"machines.{name} must be a table ([machines.{name}])")
            continue
        try:
            machines[name] = machine_of(name, table)
        except MachineError as exc:
            problems.append(f"{exc}; that machine is left out")
    return machines, problems


def _document(path: Path) -> Any:
    import tomlkit
    from tomlkit.exceptions import TOMLKitError

    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        text = ""
    except (OSError, UnicodeDecodeError) as exc:
        raise MachineError(f"could not read {path}: {exc}") from exc
    try:
        return tomlkit.parse(text)
    except TOMLKitError as exc:
        raise MachineError(f"{path} is not valid TOML ({exc}); fix it, then try again") from exc


def _write(path: Path, document: Any) -> None:
    import tomlkit

    from .atomicfile import write_atomic

    path.parent.mkdir(parents=True, exist_ok=True)
    try:
        mode = path.stat().st_mode & 0o777
    except FileNotFoundError:
        mode = 0o600
    write_atomic(path, tomlkit.dumps(document).encode("utf-8"), mode)


def save_machine(path: Path, machine: Machine, *, replace: bool = False) -> None:
    """Add ``[machines.NAME]`` to ``path`` (MachineError if the name is taken, unless
    ``replace``); the rest of the file is kept as it was."""
    import tomlkit

    machine_of(machine.name, machine.table())  # the same rules as reading
    document = _document(path)
    section = document.get("machines")
    if section is None:
        section = tomlkit.table(is_super_table=True)
        document["machines"] = section
    elif not isinstance(section, Mapping):
        raise MachineError(f"{path}: machines is not a section; make it [machines.NAME] tables")
    if machine.name in section and not replace:
        raise MachineError(
            f"a machine named {machine.name!r} is already kept in {path}; "
            f"`volee machine rm {machine.name}` first, or pick another name"
        )
    table = tomlkit.table()
    for key, value in machine.table().items():
        table[key] = value
    section[machine.name] = table
    _write(path, document)


def remove_machine(path: Path, name: str) -> Machine:
    """Remove ``[machines.NAME]`` from ``path``; the machine removed (MachineError if none)."""
    document = _document(path)
    section = document.get("machines")
    if not isinstance(section, Mapping) or name not in section:
        raise MachineError(f"no machine named {name!r}; `volee machine ls` lists them")
    table = section[name]
    try:
        machine = machine_of(name, table if isinstance(table, Mapping) else {})
    except MachineError:
        machine = Machine(name, via="?")
    del section[name]  # type: ignore[attr-defined]
    if not section:
        del document["machines"]
    _write(path, document)
    return machine


def authorized_keys_line(volee: str, public_key: str = "ssh-ed25519 AAAA… volee-bridge") -> str:
    """The recommended ``authorized_keys`` line on the other machine: a key that can only run
    the bridge (docs/trust-model.md, "Across machines")."""
    return f'command="{volee} bridge",restrict {public_key}'
