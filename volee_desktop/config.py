"""The person's settings (``config.toml``): read with tomllib, validated, written back with tomlkit.

Reading never fails: a missing file gives the defaults, a bad value is reported
as a problem (naming the key, the value and what is allowed) and that key keeps
its default, so the daemon always starts and says what it ignored.  Writing
(``save_setting``) changes one key in place, keeping the person's comments and
ordering, and refuses a bad value before anything touches the disk.

Exceptions::

    ConfigError            root: a setting could not be saved
    └── InvalidSetting     unknown key or a value that is not allowed
"""

from __future__ import annotations

import difflib
import math
import re
import tomllib
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, fields, replace
from pathlib import Path
from typing import Any

from .atomicfile import write_atomic

__all__ = [
    "PERMISSION_MODES",
    "AgentsConfig",
    "ClaudeConfig",
    "Config",
    "ConfigError",
    "DiscoveryConfig",
    "InvalidSetting",
    "LoadResult",
    "NotificationsConfig",
    "known_keys",
    "load_config",
    "parse_duration",
    "save_setting",
]

# Claude Code's interactive default is "auto mode", which asks the vendor's
# server before risky commands (real-harnesses.md): volee always passes one of
# these explicitly so an agent never depends on that server.
PERMISSION_MODES = ("default", "acceptEdits", "bypassPermissions", "plan", "manual")

# Discovery polls processes; below this it would spin a core for nothing.
MIN_DISCOVERY_INTERVAL = 0.1
# Bounds that keep timers and loops sane (a value beyond one is refused, saying so).
MAX_DISCOVERY_INTERVAL = 3600.0
MAX_RESTARTS = 20
MAX_RESTART_DELAY = 86400.0
MAX_RESUME_AGE = 30 * 86400.0
MAX_RESUME_CAP = 1000


class ConfigError(Exception):
    """A setting could not be saved (the root of this module's errors)."""


class InvalidSetting(ConfigError):
    """An unknown key, or a value that the key does not allow."""


@dataclass(frozen=True)
class AgentsConfig:
    """``[agents]``: what volee restarts and resumes by itself."""

    resume_after_reboot: bool = True
    restart_on_crash: bool = True
    restart_delays: tuple[float, ...] = (1.0, 5.0, 15.0)
    resume_max_age: float = 6 * 3600.0
    resume_cap_per_start: int = 10
    # From this share of its context window an agent is marked in the list (0.85: 85 %).
    context_limit: float = 0.85


@dataclass(frozen=True)
class NotificationsConfig:
    """``[notifications]``: which changes pop up a desktop notification."""

    needs_input: bool = True
    failed: bool = True
    mission: bool = True
    lost: bool = True
    interrupted: bool = True
    done: bool = False  # an agent finished its turn (with its last message)


@dataclass(frozen=True)
class DiscoveryConfig:
    """``[discovery]``: how often volee looks for agents it did not start (seconds)."""

    discovery_interval: float = 2.0
    max_discovery_interval: float = 10.0
    idle_discovery_interval: float = 30.0
    #: While the session folders are watched (docs/discovery.md), with no interactive
    #: client: a listing this often whatever the watch says.
    safety_discovery_interval: float = 300.0


@dataclass(frozen=True)
class ClaudeConfig:
    """``[claude]``: settings for the Claude Code agents volee launches."""

    permission_mode: str = "acceptEdits"


@dataclass(frozen=True)
class Config:
    """All settings; every field has the default the architecture page names."""

    agents: AgentsConfig = field(default_factory=AgentsConfig)
    notifications: NotificationsConfig = field(default_factory=NotificationsConfig)
    discovery: DiscoveryConfig = field(default_factory=DiscoveryConfig)
    claude: ClaudeConfig = field(default_factory=ClaudeConfig)


@dataclass(frozen=True)
class LoadResult:
    """The settings to use, and what was wrong with the file (empty when nothing was)."""

    config: Config
    problems: list[str] = field(default_factory=list)


# --- values -----------------------------------------------------------------

_DURATION = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*([smhd]?)\s*$")
_UNIT_SECONDS = {"": 1.0, "s": 1.0, "m": 60.0, "h": 3600.0, "d": 86400.0}
_DURATION_HELP = 'a number of seconds or a duration such as "90s", "15m", "6h" or "2d"'


def _is_number(value: object) -> bool:
    # TOML booleans are Python bools, which are ints: never read true as 1.
    return isinstance(value, int | float) and not isinstance(value, bool)


def parse_duration(value: object) -> float:
    """Seconds from ``90``, ``1.5``, ``"90s"``, ``"15m"``, ``"6h"``, ``"2d"``; else ValueError."""
    if _is_number(value):
        seconds = float(value)  # type: ignore[arg-type]
    elif isinstance(value, str) and (match := _DURATION.match(value)):
        seconds = float(match.group(1)) * _UNIT_SECONDS[match.group(2)]
    else:
        raise ValueError(f"must be {_DURATION_HELP}")
    if not math.isfinite(seconds) or seconds < 0:
        raise ValueError(f"must be {_DURATION_HELP}, >= 0")
    return seconds


def _bool(value: object) -> bool:
    if not isinstance(value, bool):
        raise ValueError("must be true or false")
    return value


def _restart_delays(value: object) -> tuple[float, ...]:
    if not isinstance(value, list):
        raise ValueError("must be a list of delays in seconds, such as [1, 5, 15]")
    if not value:
        raise ValueError(
            "must hold at least one delay (to never restart, set agents.restart_on_crash = false)"
        )
    if len(value) > MAX_RESTARTS:
        raise ValueError(f"must hold at most {MAX_RESTARTS} delays (restarts in a row)")
    try:
        delays = tuple(parse_duration(item) for item in value)
    except ValueError:
        raise ValueError(
            'each delay must be a number of seconds >= 0 (or a duration such as "90s")'
        ) from None
    if max(delays) > MAX_RESTART_DELAY:
        raise ValueError(f"each delay must be at most {MAX_RESTART_DELAY:g} s (1 day)")
    return delays


def _max_age(value: object) -> float:
    seconds = parse_duration(value)
    if seconds > MAX_RESUME_AGE:
        raise ValueError(f"must be at most {MAX_RESUME_AGE:g} s (30 days)")
    return seconds


def _share(value: object) -> float:
    """A share of a context window: 0.85, 85 or "85%" (all 85 %)."""
    text = str(value).strip()
    percent = text.endswith("%")
    try:
        if isinstance(value, bool):
            raise ValueError
        number = float(text.rstrip("%").strip()) if isinstance(value, str) else float(value)  # type: ignore[arg-type]
    except (TypeError, ValueError):
        raise ValueError('must be a share such as 0.85, or a percentage such as "85%"') from None
    if percent or number > 1:
        number /= 100
    if not 0 < number <= 1:
        raise ValueError("must be above 0 and at most 100 %")
    return number


def _cap(value: object) -> int:
    if not isinstance(value, int) or isinstance(value, bool) or value < 0:
        raise ValueError("must be a whole number >= 0")
    if value > MAX_RESUME_CAP:
        raise ValueError(f"must be at most {MAX_RESUME_CAP}")
    return value


def _interval(value: object) -> float:
    try:
        seconds = parse_duration(value)
    except ValueError:
        seconds = -1.0
    if seconds < MIN_DISCOVERY_INTERVAL or seconds > MAX_DISCOVERY_INTERVAL:
        raise ValueError(
            f"must be {_DURATION_HELP}, at least {MIN_DISCOVERY_INTERVAL} "
            f"and at most {MAX_DISCOVERY_INTERVAL:g}"
        )
    return seconds


def _permission_mode(value: object) -> str:
    if value not in PERMISSION_MODES:
        allowed = ", ".join(f'"{mode}"' for mode in PERMISSION_MODES)
        raise ValueError(f"must be one of {allowed}")
    return str(value)


_Parser = Callable[[object], Any]

# section -> key -> parser.  The dataclasses hold the defaults; this table holds the rules.
_RULES: dict[str, dict[str, _Parser]] = {
    "agents": {
        "resume_after_reboot": _bool,
        "restart_on_crash": _bool,
        "restart_delays": _restart_delays,
        "resume_max_age": _max_age,
        "resume_cap_per_start": _cap,
        "context_limit": _share,
    },
    "notifications": {
        "needs_input": _bool,
        "failed": _bool,
        "mission": _bool,
        "lost": _bool,
        "interrupted": _bool,
        "done": _bool,
    },
    "discovery": {
        "discovery_interval": _interval,
        "max_discovery_interval": _interval,
        "idle_discovery_interval": _interval,
        "safety_discovery_interval": _interval,
    },
    "claude": {"permission_mode": _permission_mode},
}


def known_keys() -> list[str]:
    """Every setting as ``section.key``, in the order of the architecture page."""
    return [f"{section}.{key}" for section, keys in _RULES.items() for key in keys]


def _toml_repr(value: object) -> str:
    """The value as the person wrote it in TOML, for messages."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, str):
        escaped = value.replace("\\", "\\\\").replace('"', '\\"')
        return f'"{escaped}"'
    if isinstance(value, list | tuple):
        return "[" + ", ".join(_toml_repr(item) for item in value) + "]"
    if isinstance(value, Mapping):
        inner = ", ".join(f"{key} = {_toml_repr(item)}" for key, item in value.items())
        return "{" + inner + "}"
    return str(value)


def _suggestion(name: str) -> str:
    """`` (did you mean "agents.restart_delays"?)`` for a misspelt or misplaced key, or ''."""
    candidates = known_keys()
    leaf = name.rsplit(".", 1)[-1]
    moved = [key for key in candidates if key.rsplit(".", 1)[-1] == leaf]
    close = moved or difflib.get_close_matches(name, candidates, n=1, cutoff=0.6)
    if not close:
        leaves = {key.rsplit(".", 1)[-1]: key for key in candidates}
        close = [leaves[m] for m in difflib.get_close_matches(leaf, leaves, n=1, cutoff=0.6)]
    if not close and "." not in name:
        sections = difflib.get_close_matches(name, list(_RULES), n=1, cutoff=0.6)
        close = [f"[{sections[0]}]"] if sections else []
    return f' (did you mean "{close[0]}"?)' if close else ""


# --- reading ----------------------------------------------------------------


@dataclass(frozen=True)
class _Problem:
    key: str
    message: str


def _check(data: Mapping[str, Any]) -> tuple[Config, list[_Problem]]:
    """Settings from parsed TOML: each bad or unknown key is a problem; bad keys keep defaults."""
    problems: list[_Problem] = []
    sections: dict[str, Any] = {}
    for name, table in data.items():
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
    return Config(agents, notifications, discovery, claude), problems


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
    return {f.name for f in fields(config)} == set(_RULES)
