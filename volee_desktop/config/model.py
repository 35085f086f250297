"""The settings as values: one frozen dataclass per section of ``config.toml``, with the
defaults the architecture page names, and the errors of saving one."""

from __future__ import annotations

from dataclasses import dataclass, field

from ..machines import Machine

# Claude Code's interactive default is "auto mode", which asks the vendor's
# server before risky commands (real-harnesses.md): volee always passes one of
# these explicitly so an agent never depends on that server.
PERMISSION_MODES = ("default", "acceptEdits", "bypassPermissions", "plan", "manual")
HARNESSES = ("claude", "codex", "pi", "generic")

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
    # The harnesses whose agents get the person's display and session bus (harness/env.py).
    desktop: tuple[str, ...] = ()
    # The harness `volee spawn` runs when given no --harness (one that takes a prompt).
    harness: str = "claude"


@dataclass(frozen=True)
class NotificationsConfig:
    """``[notifications]``: which changes pop up a desktop notification."""

    needs_input: bool = True
    failed: bool = True
    mission: bool = True
    lost: bool = True
    interrupted: bool = True
    done: bool = False  # an agent finished its turn (with its last message)
    #: How the tray icon is drawn: "auto" (symbolic when the platform names its colour
    #: scheme), "colour", "dark-panel" or "light-panel" (symbolic, docs/tray.md "Icons").
    tray_icon: str = "auto"


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
    model: str | None = None  # its --model when `volee spawn` is given none (None: its own)


@dataclass(frozen=True)
class CodexConfig:
    """``[codex]``: settings for the codex agents volee launches."""

    model: str | None = None


@dataclass(frozen=True)
class PiConfig:
    """``[pi]``: settings for the pi agents volee launches."""

    model: str | None = None


@dataclass(frozen=True)
class LimitsConfig:
    """``[limits]``: agents stopped by a plan's usage limit (docs/limits.md)."""

    resume: bool = True  # continue them after the reset (decision D-limits in docs/decisions.md)
    margin: float = 60.0  # after the reset, before the first is continued
    stagger: float = 5.0  # between two agents continued at the same reset
    unknown_wait: float = 900.0  # when the harness gave no reset time
    warn_at: float | None = None  # a share of the plan's use that warns in the tray (0.9)


@dataclass(frozen=True)
class Config:
    """All settings; every field has the default the architecture page names."""

    agents: AgentsConfig = field(default_factory=AgentsConfig)
    notifications: NotificationsConfig = field(default_factory=NotificationsConfig)
    discovery: DiscoveryConfig = field(default_factory=DiscoveryConfig)
    claude: ClaudeConfig = field(default_factory=ClaudeConfig)
    codex: CodexConfig = field(default_factory=CodexConfig)
    pi: PiConfig = field(default_factory=PiConfig)
    #: ``[machines.NAME]``: the other machines shown beside this one (machines.py).
    machines: dict[str, Machine] = field(default_factory=dict)
    limits: LimitsConfig = field(default_factory=LimitsConfig)


@dataclass(frozen=True)
class LoadResult:
    """The settings to use, and what was wrong with the file (empty when nothing was)."""

    config: Config
    problems: list[str] = field(default_factory=list)
