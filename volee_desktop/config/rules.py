"""What each setting allows: one parser per key (``_RULES``), and the words of a refusal."""

from __future__ import annotations

import difflib
import math
import re
from collections.abc import Callable, Mapping
from typing import Any

from .model import (
    HARNESSES,
    MAX_DISCOVERY_INTERVAL,
    MAX_RESTART_DELAY,
    MAX_RESTARTS,
    MAX_RESUME_AGE,
    MAX_RESUME_CAP,
    MIN_DISCOVERY_INTERVAL,
    PERMISSION_MODES,
    ClaudeConfig,
    CodexConfig,
    Config,
    PiConfig,
)

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


TRAY_ICONS = ("auto", "colour", "dark-panel", "light-panel")


def _tray_icon(value: object) -> str:
    if value not in TRAY_ICONS:
        allowed = ", ".join(f'"{look}"' for look in TRAY_ICONS)
        raise ValueError(f"must be one of {allowed}")
    return str(value)


def _permission_mode(value: object) -> str:
    if value not in PERMISSION_MODES:
        allowed = ", ".join(f'"{mode}"' for mode in PERMISSION_MODES)
        raise ValueError(f"must be one of {allowed}")
    return str(value)


#: A model's name as the harnesses spell theirs: opus, claude-sonnet-4-5, sonnet[1m], gpt-5,
#: anthropic/claude-sonnet-4, sonnet:high.  It is one word of the harness's command line
#: after its --model: never blank, never starting with "-" (it would read as an option).
_MODEL = re.compile(r"[A-Za-z0-9][A-Za-z0-9._:/@+\[\]-]*")
MAX_MODEL = 128
#: The harnesses that take a model (the generic one runs your command as given).
MODEL_HARNESSES = ("claude", "codex", "pi")


def model_problem(model: str, harness: str = "claude") -> str | None:
    """Why ``model`` is not a model ``harness`` can be started with, or None: the one rule of
    ``volee spawn --model`` and of ``[claude|codex|pi] model``."""
    if harness not in MODEL_HARNESSES:
        return f"the {harness} harness takes no model (it runs your command as given)"
    if len(model) > MAX_MODEL:
        return f"a model's name is at most {MAX_MODEL} characters"
    if not _MODEL.fullmatch(model):
        return (
            "a model's name is one word of letters, digits and . _ : / @ + - [ ] "
            "(such as opus, gpt-5 or anthropic/claude-sonnet-4), not starting with -"
        )
    return None


def _model_of(harness: str) -> Callable[[object], str | None]:
    def parse(value: object) -> str | None:
        if not isinstance(value, str):
            raise ValueError('must be a model\'s name in quotes, such as "opus" ("": its own)')
        if not value.strip():
            return None  # the harness's own default
        problem = model_problem(value, harness)
        if problem is not None:
            raise ValueError(problem)
        return value

    return parse


def harness_model(config: Config, harness: str) -> str | None:
    """The model ``[harness] model`` names (None: none set, or a harness without one)."""
    sections: dict[str, ClaudeConfig | CodexConfig | PiConfig] = {
        "claude": config.claude,
        "codex": config.codex,
        "pi": config.pi,
    }
    section = sections.get(harness)
    return section.model if section is not None else None


def _default_harness(value: object) -> str:
    if value not in MODEL_HARNESSES:
        allowed = ", ".join(f'"{name}"' for name in MODEL_HARNESSES)
        raise ValueError(f"must be one of {allowed} (the generic harness needs its command)")
    return str(value)


def _harnesses(value: object) -> tuple[str, ...]:
    if not isinstance(value, list) or any(item not in HARNESSES for item in value):
        allowed = ", ".join(f'"{name}"' for name in HARNESSES)
        raise ValueError(f'must be a list of harnesses, of {allowed} (such as ["claude"])')
    return tuple(str(item) for item in value)


def _wait(value: object) -> float:
    try:
        seconds = parse_duration(value)
    except ValueError:
        seconds = -1.0
    if seconds < 0 or seconds > MAX_RESTART_DELAY:
        raise ValueError(f"must be {_DURATION_HELP}, at most {MAX_RESTART_DELAY:g} s")
    return seconds


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
        "desktop": _harnesses,
        "harness": _default_harness,
    },
    "notifications": {
        "needs_input": _bool,
        "failed": _bool,
        "mission": _bool,
        "lost": _bool,
        "interrupted": _bool,
        "done": _bool,
        "tray_icon": _tray_icon,
    },
    "discovery": {
        "discovery_interval": _interval,
        "max_discovery_interval": _interval,
        "idle_discovery_interval": _interval,
        "safety_discovery_interval": _interval,
    },
    "claude": {"permission_mode": _permission_mode, "model": _model_of("claude")},
    "codex": {"model": _model_of("codex")},
    "pi": {"model": _model_of("pi")},
    "limits": {
        "resume": _bool,
        "margin": _wait,
        "stagger": _wait,
        "unknown_wait": _wait,
        "warn_at": _share,
    },
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
