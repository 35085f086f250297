"""The person's settings (``config.toml``): read with tomllib, validated, written back with tomlkit.

Reading never fails: a missing file gives the defaults, a bad value is reported
as a problem (naming the key, the value and what is allowed) and that key keeps
its default, so the daemon always starts and says what it ignored.  Writing
(``save_setting``) changes one key in place, keeping the person's comments and
ordering, and refuses a bad value before anything touches the disk.  A value that lowers
safety (``SAFETY_LOWERING``) is in force only once the person confirmed it (``in_force``).

Exceptions::

    ConfigError            root: a setting could not be saved
    └── InvalidSetting     unknown key or a value that is not allowed

The package's modules: ``model`` (the sections as frozen dataclasses, the errors),
``rules`` (what each key allows), ``files`` (reading and writing ``config.toml``) and
``safety`` (the values that wait for the person's confirmation).  Import from here.
"""

from __future__ import annotations

from .files import (
    _defaults_match_rules as _defaults_match_rules,  # the tests check it
)
from .files import (
    load_config,
    save_setting,
)
from .model import (
    HARNESSES,
    PERMISSION_MODES,
    AgentsConfig,
    ClaudeConfig,
    CodexConfig,
    Config,
    ConfigError,
    DiscoveryConfig,
    InvalidSetting,
    LimitsConfig,
    LoadResult,
    NotificationsConfig,
    PiConfig,
)
from .rules import (
    MODEL_HARNESSES,
    harness_model,
    known_keys,
    model_problem,
    parse_duration,
)
from .safety import (
    SAFETY_LOWERING,
    Lowering,
    Unconfirmed,
    in_force,
    lowering_values,
    still_confirmed,
    with_lowering_from,
)

__all__ = [
    "HARNESSES",
    "MODEL_HARNESSES",
    "PERMISSION_MODES",
    "SAFETY_LOWERING",
    "AgentsConfig",
    "ClaudeConfig",
    "CodexConfig",
    "Config",
    "ConfigError",
    "DiscoveryConfig",
    "InvalidSetting",
    "LimitsConfig",
    "LoadResult",
    "Lowering",
    "NotificationsConfig",
    "PiConfig",
    "Unconfirmed",
    "harness_model",
    "in_force",
    "known_keys",
    "load_config",
    "lowering_values",
    "model_problem",
    "parse_duration",
    "save_setting",
    "still_confirmed",
    "with_lowering_from",
]
