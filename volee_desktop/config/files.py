"""Reading ``config.toml`` (never failing: a bad key is a problem and keeps its default) and
writing one key back in place (``save_setting``), refusing a bad value first."""

from __future__ import annotations

import tomllib
from collections.abc import Mapping
from dataclasses import dataclass, fields, replace
from pathlib import Path
from typing import Any

from ..atomicfile import write_atomic
from ..machines import parse_machines
from .model import (
    Config,
    ConfigError,
    DiscoveryConfig,
    InvalidSetting,
    LoadResult,
)
from .rules import (
    _RULES,
    _suggestion,
    _toml_repr,
)


@dataclass(frozen=True)
class _Problem:
    key: str
    message: str


def _check(data: Mapping[str, Any]) -> tuple[Config, list[_Problem]]:
    """Settings from parsed TOML: each bad or unknown key is a problem; bad keys keep defaults."""
    problems: list[_Problem] = []
    sections: dict[str, Any] = {}
    machines, machine_problems = parse_machines(data.get("machines", {}))
    problems += [_Problem("machines", text) for text in machine_problems]
    for name, table in data.items():
        if name == "machines":
            continue
        if name not in _RULES:
            problems.append(
                _Problem(
                    name,
                    f"unknown setting {name!r}{_suggestion(name)}; "
                    f"known sections: {', '.join(f'[{s}]' for s in _RULES)}",
                )
            )
            continue
        if not isinstance(table, Mapping):
            problems.append(
                _Problem(name, f"{name} = {_toml_repr(table)}: must be a section ([{name}])")
            )
            continue
        parsed: dict[str, Any] = {}
        for key, value in table.items():
            dotted = f"{name}.{key}"
            rule = _RULES[name].get(key)
            if rule is None:
                problems.append(
                    _Problem(dotted, f"unknown setting {dotted!r}{_suggestion(dotted)}")
                )
                continue
            try:
                parsed[key] = rule(value)
            except ValueError as exc:
                problems.append(_Problem(dotted, f"{dotted} = {_toml_repr(value)}: {exc}"))
        sections[name] = parsed

    config = Config()
    agents = replace(config.agents, **sections.get("agents", {}))
    notifications = replace(config.notifications, **sections.get("notifications", {}))
    discovery = replace(config.discovery, **sections.get("discovery", {}))
    claude = replace(config.claude, **sections.get("claude", {}))
    limits = replace(config.limits, **sections.get("limits", {}))
    codex = replace(config.codex, **sections.get("codex", {}))
    pi = replace(config.pi, **sections.get("pi", {}))

    # Discovery backs off from discovery_interval up to max_discovery_interval:
    # a start above the ceiling makes no sense, so both keep their defaults.
    if discovery.discovery_interval > discovery.max_discovery_interval:
        problems.append(
            _Problem(
                "discovery.discovery_interval",
                f"discovery.discovery_interval = {discovery.discovery_interval:g} is above "
                f"discovery.max_discovery_interval = {discovery.max_discovery_interval:g}: "
                "the interval must not exceed its maximum (both keep their defaults)",
            )
        )
        discovery = replace(
            discovery,
            discovery_interval=DiscoveryConfig.discovery_interval,
            max_discovery_interval=DiscoveryConfig.max_discovery_interval,
        )
    config = Config(
        agents=agents,
        notifications=notifications,
        discovery=discovery,
        claude=claude,
        codex=codex,
        pi=pi,
        machines=machines,
        limits=limits,
    )
    return config, problems


_TOO_DEEP = "nested too deeply to read (arrays or tables within each other by the thousand)"


def load_config(path: Path) -> LoadResult:
    """The settings in ``path``; defaults for a missing file, each bad key, or a broken file."""
    try:
        with path.open("rb") as fh:
            data = tomllib.load(fh)
    except FileNotFoundError:
        return LoadResult(Config(), [])
    except tomllib.TOMLDecodeError as exc:
        # The message names the line and column ("Invalid value (at line 3, column 9)").
        return LoadResult(
            Config(),
            [f"{path}: not valid TOML: {exc}; every setting uses its default until this is fixed"],
        )
    except (OSError, UnicodeDecodeError) as exc:
        return LoadResult(
            Config(),
            [f"{path}: could not be read ({exc}); every setting uses its default"],
        )
    except RecursionError:
        return LoadResult(Config(), [f"{path}: {_TOO_DEEP}; every setting uses its default"])
    try:
        config, problems = _check(data)
    except RecursionError:
        return LoadResult(Config(), [f"{path}: {_TOO_DEEP}; every setting uses its default"])
    return LoadResult(config, [f"{path}: {problem.message}" for problem in problems])


# --- writing ----------------------------------------------------------------


def _validate_one(key: str, value: object) -> None:
    section, _, leaf = key.partition(".")
    rule = _RULES.get(section, {}).get(leaf)
    if rule is None:
        raise InvalidSetting(f"unknown setting {key!r}{_suggestion(key)}; nothing was saved")
    try:
        rule(value)
    except ValueError as exc:
        raise InvalidSetting(f"{key} = {_toml_repr(value)}: {exc}; nothing was saved") from None


def _atomic_write(path: Path, text: str) -> None:
    """Replace ``path`` with ``text`` so that a crash leaves the old file or the new, never half."""
    path.parent.mkdir(parents=True, exist_ok=True)
    try:
        mode = path.stat().st_mode & 0o777
    except FileNotFoundError:
        mode = 0o600
    write_atomic(path, text.encode("utf-8"), mode)


def save_setting(path: Path, key: str, value: object) -> None:
    """Set ``key`` ("section.key") to ``value`` in ``path``, keeping comments and order.

    Raises InvalidSetting for an unknown key or a bad value (the file is not
    touched) and ConfigError when the file cannot be parsed or written.
    """
    import tomlkit  # only the writers (CLI, tray settings) pay for it
    from tomlkit.exceptions import TOMLKitError

    _validate_one(key, value)
    section, _, leaf = key.partition(".")
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        text = ""
    except (OSError, UnicodeDecodeError) as exc:
        raise ConfigError(f"could not read {path} to change {key}: {exc}") from exc
    try:
        document = tomlkit.parse(text)
    except TOMLKitError as exc:
        raise ConfigError(
            f"{path} is not valid TOML ({exc}); fix or remove it, then change {key} again"
        ) from exc

    stored = list(value) if isinstance(value, tuple) else value
    table = document.get(section)
    if table is None:
        table = tomlkit.table()
        table[leaf] = stored
        document[section] = table
    elif isinstance(table, Mapping):
        table[leaf] = stored  # type: ignore[index]
    else:
        raise ConfigError(
            f"{path}: {section} is not a section ({section} = {_toml_repr(table)}); "
            f"replace it with [{section}], then change {key} again"
        )

    # A value can be fine alone and wrong next to another (discovery intervals).
    _, problems = _check(document.unwrap())
    for problem in problems:
        if problem.key == key or (
            key.startswith("discovery.") and problem.key == "discovery.discovery_interval"
        ):
            raise InvalidSetting(f"{problem.message}; nothing was saved")

    try:
        _atomic_write(path, tomlkit.dumps(document))
    except OSError as exc:
        raise ConfigError(f"could not write {path} to change {key}: {exc}") from exc


def _defaults_match_rules() -> bool:
    """Every rule has a dataclass field and vice versa (checked by the tests)."""
    config = Config()
    for section, rules in _RULES.items():
        names = {f.name for f in fields(getattr(config, section))}
        if names != set(rules):
            return False
    return {f.name for f in fields(config)} - {"machines"} == set(_RULES)
