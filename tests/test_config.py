"""Tests for config.toml: defaults, every key's validation, typo help, saving in place."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from volee_desktop import config as config_mod
from volee_desktop.config import (
    AgentsConfig,
    ClaudeConfig,
    Config,
    ConfigError,
    DiscoveryConfig,
    InvalidSetting,
    NotificationsConfig,
    known_keys,
    load_config,
    parse_duration,
    save_setting,
)
from volee_desktop.paths import dirs


@pytest.fixture
def cfg(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("VOLEE_HOME", str(tmp_path / "home"))
    return dirs().config_file


def write(path: Path, text: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")
    return path


ARCHITECTURE_EXAMPLE = """\
# volee settings
[agents]
resume_after_reboot = true     # ADR 0024
restart_on_crash = true        # M38 "crash"
restart_delays = [1, 5, 15]    # seconds; its length is the budget
resume_max_age = "6h"          # no automatic resume of work older than this
resume_cap_per_start = 10      # at most this many automatic resumes per daemon start
[notifications]
needs_input = true
failed = true
mission = true
lost = true
interrupted = true
[discovery]
discovery_interval = 2         # seconds
max_discovery_interval = 10
idle_discovery_interval = 30
[claude]
permission_mode = "acceptEdits"   # explicit --permission-mode for agents volee launches
"""


# --- reading ------------------------------------------------------------------


def test_missing_file_gives_defaults_and_no_problem(cfg: Path) -> None:
    result = load_config(cfg)
    assert result.config == Config()
    assert result.problems == []


def test_defaults_are_the_architecture_pages(cfg: Path) -> None:
    c = Config()
    assert c.agents == AgentsConfig(True, True, (1.0, 5.0, 15.0), 21600.0, 10, 0.85)
    assert c.notifications == NotificationsConfig(True, True, True, True, True)
    assert c.discovery == DiscoveryConfig(2.0, 10.0, 30.0)
    assert c.claude == ClaudeConfig("acceptEdits")
    # The documented example file reads back as exactly the defaults, with no problem.
    result = load_config(write(cfg, ARCHITECTURE_EXAMPLE))
    assert result.problems == []
    assert result.config == Config()


def test_every_rule_has_a_default_and_every_default_a_rule() -> None:
    assert config_mod._defaults_match_rules()
    assert len(known_keys()) == 28


@pytest.mark.parametrize(("text", "share"), [("0.9", 0.9), ("90", 0.9), ('"90%"', 0.9)])
def test_the_context_limit_is_a_share_or_a_percentage(cfg: Path, text: str, share: float) -> None:
    result = load_config(write(cfg, f"[agents]\ncontext_limit = {text}\n"))
    assert result.problems == []
    assert result.config.agents.context_limit == pytest.approx(share)


@pytest.mark.parametrize("text", ["0", "150", '"lots"', "true"])
def test_a_context_limit_out_of_bounds_keeps_the_default(cfg: Path, text: str) -> None:
    result = load_config(write(cfg, f"[agents]\ncontext_limit = {text}\n"))
    assert result.problems
    assert result.config.agents.context_limit == 0.85


def test_config_is_frozen() -> None:
    with pytest.raises(AttributeError):
        Config().agents.restart_on_crash = False  # type: ignore[misc]


def test_good_values_are_read(cfg: Path) -> None:
    write(
        cfg,
        """
[agents]
resume_after_reboot = false
restart_on_crash = false
restart_delays = [0, 2.5, "1m"]
resume_max_age = "2d"
resume_cap_per_start = 0
[notifications]
needs_input = false
failed = false
mission = false
lost = false
interrupted = false
[discovery]
discovery_interval = 0.5
max_discovery_interval = "1m"
idle_discovery_interval = 45
[claude]
permission_mode = "manual"
""",
    )
    result = load_config(cfg)
    assert result.problems == []
    c = result.config
    assert c.agents == AgentsConfig(False, False, (0.0, 2.5, 60.0), 172800.0, 0)
    assert c.notifications == NotificationsConfig(False, False, False, False, False)
    assert c.discovery == DiscoveryConfig(0.5, 60.0, 45.0)
    assert c.claude.permission_mode == "manual"


def test_empty_restart_delays_are_refused_pointing_at_restart_on_crash(cfg: Path) -> None:
    # One way to say "never restart": restart_on_crash = false (docs/faults.md).
    result = load_config(write(cfg, "[agents]\nrestart_delays = []\n"))
    assert len(result.problems) == 1
    assert "restart_on_crash = false" in result.problems[0]
    assert result.config.agents.restart_delays == AgentsConfig().restart_delays


@pytest.mark.parametrize(
    ("text", "seconds"),
    [(90, 90.0), (1.5, 1.5), ("90s", 90.0), ("15m", 900.0), ("6h", 21600.0), ("2d", 172800.0),
     ("0", 0.0), (" 3 ", 3.0), ("1.5h", 5400.0)],
)  # fmt: skip
def test_parse_duration(text: object, seconds: float) -> None:
    assert parse_duration(text) == seconds


@pytest.mark.parametrize("bad", ["6 hours", "h", "-5s", -1, True, "", "1w", [1], float("inf")])
def test_parse_duration_refuses(bad: object) -> None:
    with pytest.raises(ValueError, match="duration"):
        parse_duration(bad)


# Each key, a bad value, and the words the message must carry about what is allowed.
BAD_VALUES = [
    ("agents", "resume_after_reboot", "1", "1", "true or false"),
    ("agents", "resume_after_reboot", '"yes"', '"yes"', "true or false"),
    ("agents", "restart_on_crash", "0", "0", "true or false"),
    ("agents", "restart_delays", "[1, -5]", "[1, -5]", "each delay must be a number of seconds >= 0"),  # noqa: E501
    ("agents", "restart_delays", '["soon"]', '["soon"]', "each delay must be a number of seconds"),
    ("agents", "restart_delays", "5", "5", "must be a list"),
    ("agents", "resume_max_age", '"6 hours"', '"6 hours"', '"15m", "6h"'),
    ("agents", "resume_max_age", "-1", "-1", ">= 0"),
    ("agents", "resume_cap_per_start", "-1", "-1", "whole number >= 0"),
    ("agents", "resume_cap_per_start", "2.5", "2.5", "whole number >= 0"),
    ("agents", "resume_cap_per_start", "true", "true", "whole number >= 0"),
    ("notifications", "needs_input", '"no"', '"no"', "true or false"),
    ("notifications", "failed", "1", "1", "true or false"),
    ("notifications", "mission", "[]", "[]", "true or false"),
    ("notifications", "lost", '"false"', '"false"', "true or false"),
    ("notifications", "interrupted", "0", "0", "true or false"),
    ("notifications", "tray_icon", '"dark"', '"dark"', '"dark-panel", "light-panel"'),
    ("discovery", "discovery_interval", "0", "0", "at least 0.1"),
    ("discovery", "max_discovery_interval", '"fast"', '"fast"', "at least 0.1"),
    ("discovery", "idle_discovery_interval", "-30", "-30", "at least 0.1"),
    ("claude", "permission_mode", '"auto"', '"auto"', '"acceptEdits", "bypassPermissions"'),
    ("claude", "permission_mode", '"AcceptEdits"', '"AcceptEdits"', '"manual"'),
]  # fmt: skip


@pytest.mark.parametrize(("section", "key", "toml", "shown", "allowed"), BAD_VALUES)
def test_a_bad_value_is_a_problem_and_that_key_keeps_its_default(
    cfg: Path, section: str, key: str, toml: str, shown: str, allowed: str
) -> None:
    # A good neighbour in the same section must survive the bad key.
    neighbour = {
        "agents": ("resume_cap_per_start", "3", 3)
        if key != "resume_cap_per_start"
        else ("restart_on_crash", "false", False),
        "notifications": ("failed", "false", False)
        if key != "failed"
        else ("mission", "false", False),
        "discovery": ("idle_discovery_interval", "99", 99.0)
        if key != "idle_discovery_interval"
        else ("max_discovery_interval", "20", 20.0),
        "claude": None,
    }[section]
    text = f"[{section}]\n{key} = {toml}\n"
    if neighbour:
        text += f"{neighbour[0]} = {neighbour[1]}\n"
    result = load_config(write(cfg, text))

    assert len(result.problems) == 1, result.problems
    problem = result.problems[0]
    assert f"{section}.{key} = {shown}: " in problem
    assert allowed in problem
    assert str(cfg) in problem
    got = getattr(result.config, section)
    assert getattr(got, key) == getattr(getattr(Config(), section), key)
    if neighbour:
        assert getattr(got, neighbour[0]) == neighbour[2]


def test_the_briefs_example_message(cfg: Path) -> None:
    result = load_config(write(cfg, "[agents]\nrestart_delays = [1, -5]\n"))
    assert result.problems == [
        f"{cfg}: agents.restart_delays = [1, -5]: each delay must be a number of seconds >= 0"
        ' (or a duration such as "90s")'
    ]


def test_discovery_interval_above_its_maximum_is_a_problem(cfg: Path) -> None:
    result = load_config(
        write(cfg, "[discovery]\ndiscovery_interval = 20\nmax_discovery_interval = 5\n")
    )
    assert len(result.problems) == 1
    assert "discovery.discovery_interval = 20 is above" in result.problems[0]
    assert result.config.discovery == DiscoveryConfig()


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("[agents]\nrestart_delay = [1]\n", "unknown setting 'agents.restart_delay' (did you mean \"agents.restart_delays\"?)"),  # noqa: E501
        ("[agents]\nneeds_input = false\n", "(did you mean \"notifications.needs_input\"?)"),
        ("resume_after_reboot = false\n", "(did you mean \"agents.resume_after_reboot\"?)"),
        ("[agent]\nrestart_on_crash = true\n", "unknown setting 'agent' (did you mean \"[agents]\"?)"),  # noqa: E501
        ("[claude]\npermision_mode = \"plan\"\n", "(did you mean \"claude.permission_mode\"?)"),
        ("[claude]\nmodle = \"opus\"\n", "(did you mean \"claude.model\"?)"),
        ("[codex]\neffort = \"high\"\n", "unknown setting 'codex.effort'"),
    ],
)  # fmt: skip
def test_unknown_keys_are_problems_with_typo_help(cfg: Path, text: str, expected: str) -> None:
    result = load_config(write(cfg, text))
    assert len(result.problems) == 1, result.problems
    assert expected in result.problems[0]
    assert result.config == Config()


def test_unknown_key_without_a_close_match_suggests_nothing(cfg: Path) -> None:
    result = load_config(write(cfg, "[claude]\nzzzzqqq = 1\n"))
    assert "did you mean" not in result.problems[0]


def test_a_section_that_is_not_a_table(cfg: Path) -> None:
    result = load_config(write(cfg, 'agents = "on"\n'))
    assert result.problems == [f'{cfg}: agents = "on": must be a section ([agents])']
    assert result.config == Config()


def test_a_syntax_error_names_the_line_and_gives_all_defaults(cfg: Path) -> None:
    write(cfg, "[agents]\nresume_after_reboot = false\nrestart_on_crash = \n")
    result = load_config(cfg)
    assert result.config == Config()  # even the good key above the error
    assert len(result.problems) == 1
    assert "not valid TOML" in result.problems[0]
    assert "line 3" in result.problems[0]
    assert "default" in result.problems[0]


def test_an_unreadable_file_gives_defaults(cfg: Path) -> None:
    cfg.mkdir(parents=True)  # a folder where the file should be
    result = load_config(cfg)
    assert result.config == Config()
    assert "could not be read" in result.problems[0]


def test_bytes_that_are_not_utf8_give_defaults(cfg: Path) -> None:
    cfg.parent.mkdir(parents=True)
    cfg.write_bytes(b"[agents]\nrestart_on_crash = \xff\n")
    result = load_config(cfg)
    assert result.config == Config()
    assert len(result.problems) == 1


# --- writing ------------------------------------------------------------------


def test_save_keeps_comments_order_and_other_keys(cfg: Path) -> None:
    write(cfg, ARCHITECTURE_EXAMPLE)
    save_setting(cfg, "agents.resume_after_reboot", False)
    text = cfg.read_text(encoding="utf-8")
    assert text == ARCHITECTURE_EXAMPLE.replace(
        "resume_after_reboot = true     # ADR 0024", "resume_after_reboot = false     # ADR 0024"
    )
    assert load_config(cfg).config.agents.resume_after_reboot is False


def test_save_each_kind_of_value_and_read_it_back(cfg: Path) -> None:
    write(cfg, "# mine\n[agents]\nrestart_on_crash = true  # keep\n")
    save_setting(cfg, "agents.restart_delays", [2, 4])
    save_setting(cfg, "agents.resume_max_age", "90m")
    save_setting(cfg, "agents.resume_cap_per_start", 3)
    save_setting(cfg, "notifications.lost", False)
    save_setting(cfg, "discovery.idle_discovery_interval", 60)
    save_setting(cfg, "claude.permission_mode", "plan")
    text = cfg.read_text(encoding="utf-8")
    assert text.startswith("# mine\n[agents]\nrestart_on_crash = true  # keep\n")
    result = load_config(cfg)
    assert result.problems == []
    c = result.config
    assert c.agents.restart_delays == (2.0, 4.0)
    assert c.agents.resume_max_age == 5400.0
    assert c.agents.resume_cap_per_start == 3
    assert c.notifications.lost is False
    assert c.discovery.idle_discovery_interval == 60.0
    assert c.claude.permission_mode == "plan"


def test_save_into_a_missing_file_creates_it(cfg: Path) -> None:
    save_setting(cfg, "notifications.mission", False)
    assert load_config(cfg).config.notifications.mission is False
    assert cfg.read_text(encoding="utf-8").strip() == "[notifications]\nmission = false"


@pytest.mark.parametrize(
    ("key", "value", "message"),
    [
        ("agents.restart_delays", [1, -5], "agents.restart_delays = [1, -5]: each delay"),
        ("agents.resume_after_reboot", "no", 'agents.resume_after_reboot = "no": must be true'),
        ("claude.permission_mode", "auto", 'claude.permission_mode = "auto": must be one of'),
        ("agents.restart_delay", [1], 'did you mean "agents.restart_delays"'),
        ("nonsense", 1, "unknown setting 'nonsense'"),
        ("discovery.max_discovery_interval", 1, "discovery.discovery_interval = 2 is above"),
    ],
)
def test_save_refuses_a_bad_value_and_leaves_the_file_alone(
    cfg: Path, key: str, value: object, message: str
) -> None:
    write(cfg, ARCHITECTURE_EXAMPLE)
    before = cfg.stat()
    with pytest.raises(InvalidSetting, match="nothing was saved") as info:
        save_setting(cfg, key, value)
    assert message in str(info.value)
    assert cfg.read_text(encoding="utf-8") == ARCHITECTURE_EXAMPLE
    assert cfg.stat().st_mtime_ns == before.st_mtime_ns
    assert os.listdir(cfg.parent) == ["config.toml"]


def test_save_refuses_to_rewrite_a_broken_file(cfg: Path) -> None:
    write(cfg, "[agents\n")
    with pytest.raises(ConfigError, match="not valid TOML"):
        save_setting(cfg, "agents.restart_on_crash", False)
    assert cfg.read_text(encoding="utf-8") == "[agents\n"


def test_save_refuses_a_section_that_is_not_a_table(cfg: Path) -> None:
    write(cfg, 'claude = "x"\n')
    with pytest.raises(ConfigError, match="is not a section"):
        save_setting(cfg, "claude.permission_mode", "plan")


def test_save_is_atomic_tmp_fsync_rename(cfg: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    write(cfg, ARCHITECTURE_EXAMPLE)
    os.chmod(cfg, 0o640)
    calls: list[str] = []
    real_fsync, real_replace = os.fsync, os.replace

    def fsync(fd: int) -> None:
        calls.append("fsync")
        real_fsync(fd)

    def replace(src: str | os.PathLike[str], dst: str | os.PathLike[str]) -> None:
        calls.append("replace")
        # The old file is whole until the rename: a crash here loses nothing.
        assert Path(dst).read_text(encoding="utf-8") == ARCHITECTURE_EXAMPLE
        assert "mission = false" in Path(src).read_text(encoding="utf-8")
        assert Path(src).parent == Path(dst).parent
        real_replace(src, dst)

    monkeypatch.setattr(os, "fsync", fsync)
    monkeypatch.setattr(os, "replace", replace)
    save_setting(cfg, "notifications.mission", False)
    assert calls == ["fsync", "replace", "fsync"]  # file, rename, folder
    assert cfg.stat().st_mode & 0o777 == 0o640  # the person's permissions stay


def test_a_failed_write_leaves_the_old_file_and_no_temp(
    cfg: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    write(cfg, ARCHITECTURE_EXAMPLE)

    def replace(src: object, dst: object) -> None:
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(os, "replace", replace)
    with pytest.raises(ConfigError, match="No space left on device"):
        save_setting(cfg, "notifications.mission", False)
    assert cfg.read_text(encoding="utf-8") == ARCHITECTURE_EXAMPLE
    assert os.listdir(cfg.parent) == ["config.toml"]


# --- settings that lower safety (issue 22, finding 5) ------------------------------------


def test_every_setting_that_lowers_safety_is_a_known_key_and_its_default_does_not() -> None:
    keys = [rule.key for rule in config_mod.SAFETY_LOWERING]
    assert set(keys) <= set(known_keys())
    assert len(keys) == len(set(keys))
    assert config_mod.lowering_values(Config()) == {}


def test_a_value_that_lowers_safety_is_held_at_its_default_until_confirmed(cfg: Path) -> None:
    cfg.parent.mkdir(parents=True, exist_ok=True)
    cfg.write_text('[claude]\npermission_mode = "bypassPermissions"\n[notifications]\n'
                   "needs_input = false\nfailed = false\n")  # fmt: skip
    asked = load_config(cfg).config
    config, held = config_mod.in_force(asked, {})
    assert config.claude.permission_mode == "acceptEdits"
    assert config.notifications.needs_input is True
    assert config.notifications.failed is False  # not a safety setting: as written
    assert [h.key for h in held] == ["claude.permission_mode", "notifications.needs_input"]
    assert held[0].message == (
        'config.toml asks for claude.permission_mode = "bypassPermissions": not in force until '
        "you confirm: `volee config confirm` (Claude Code agents would run every tool without "
        'asking; claude.permission_mode = "acceptEdits" meanwhile)'
    )
    confirmed = config_mod.lowering_values(asked)
    assert confirmed == {
        "claude.permission_mode": '"bypassPermissions"',
        "notifications.needs_input": "false",
    }
    config, held = config_mod.in_force(asked, confirmed)
    assert (config, held) == (asked, [])
    # A confirmation of one value is not one of another.
    assert config_mod.in_force(asked, {"notifications.needs_input": "false"})[1][0].key == (
        "claude.permission_mode"
    )


def test_a_confirmation_lapses_once_the_file_asks_for_something_else() -> None:
    confirmed = {"claude.permission_mode": '"bypassPermissions"'}
    safer = Config(claude=ClaudeConfig(permission_mode="plan"))
    assert config_mod.still_confirmed(safer, confirmed) == {}
    lowered = Config(claude=ClaudeConfig(permission_mode="bypassPermissions"))
    assert config_mod.still_confirmed(lowered, confirmed) == confirmed


def test_giving_agents_the_desktop_is_held_until_confirmed(cfg: Path) -> None:
    # `[agents] desktop` hands agents the person's display and session bus (issue 22, 2).
    cfg.parent.mkdir(parents=True, exist_ok=True)
    cfg.write_text('[agents]\ndesktop = ["claude"]\n')
    asked = load_config(cfg).config
    config, held = config_mod.in_force(asked, {})
    assert config.agents.desktop == ()
    assert [h.key for h in held] == ["agents.desktop"]
    assert held[0].value == '["claude"]'
    config, held = config_mod.in_force(asked, config_mod.lowering_values(asked))
    assert (config.agents.desktop, held) == (("claude",), [])


def test_the_limits_settings_read_durations_and_a_share(cfg: Path) -> None:
    text = (
        '[limits]\nresume = false\nmargin = "2m"\nstagger = 3\n'
        'unknown_wait = "1h"\nwarn_at = "90%"\n'
    )
    result = load_config(write(cfg, text))
    assert result.problems == []
    limits = result.config.limits
    assert (limits.resume, limits.margin, limits.stagger) == (False, 120.0, 3.0)
    assert (limits.unknown_wait, limits.warn_at) == (3600.0, 0.9)
    assert Config().limits.resume is True
    assert Config().limits.warn_at is None


def test_a_bad_limits_value_names_the_key_and_keeps_the_default(cfg: Path) -> None:
    result = load_config(write(cfg, '[limits]\nmargin = "soon"\n'))
    assert len(result.problems) == 1
    assert "limits.margin" in result.problems[0]
    assert result.config.limits.margin == 60.0


# --- the default model per harness ------------------------------------------------------


def test_each_harness_names_its_default_model_and_a_blank_one_is_its_own(cfg: Path) -> None:
    text = '[claude]\nmodel = "opus"\n[codex]\nmodel = "gpt-5"\n[pi]\nmodel = ""\n'
    config = load_config(write(cfg, text)).config
    assert [config_mod.harness_model(config, h) for h in ("claude", "codex", "pi")] == [
        "opus",
        "gpt-5",
        None,
    ]
    assert config_mod.harness_model(config, "generic") is None
    assert config_mod.harness_model(Config(), "claude") is None


@pytest.mark.parametrize(
    ("value", "message"),
    [
        ('"--dangerously-skip-permissions"', "not starting with -"),
        ('"opus 4"', "one word"),
        ("4", "must be a model's name in quotes"),
        (f'"{"x" * 129}"', "at most 128 characters"),
    ],
)
def test_a_bad_model_is_a_problem_naming_the_key_and_the_default_stands(
    cfg: Path, value: str, message: str
) -> None:
    result = load_config(write(cfg, f"[codex]\nmodel = {value}\n"))
    assert result.config.codex.model is None
    assert len(result.problems) == 1
    assert "codex.model = " in result.problems[0]
    assert message in result.problems[0]


def test_saving_a_model_is_validated_as_spawn_validates_it(cfg: Path) -> None:
    with pytest.raises(InvalidSetting, match=r"pi\.model = .* not starting with -"):
        save_setting(cfg, "pi.model", "-x")
    assert not cfg.exists()
    save_setting(cfg, "pi.model", "anthropic/claude-sonnet-4")
    save_setting(cfg, "claude.model", "sonnet[1m]")
    config = load_config(cfg).config
    assert (config.pi.model, config.claude.model) == ("anthropic/claude-sonnet-4", "sonnet[1m]")
    assert config_mod.model_problem("opus", "generic") is not None


def test_the_default_harness_is_one_that_takes_a_prompt(cfg: Path) -> None:
    assert Config().agents.harness == "claude"
    assert load_config(write(cfg, '[agents]\nharness = "codex"\n')).config.agents.harness == "codex"
    result = load_config(write(cfg, '[agents]\nharness = "generic"\n'))
    assert result.config.agents.harness == "claude"
    assert "the generic harness needs its command" in result.problems[0]
    with pytest.raises(InvalidSetting, match=r"agents\.harness = \"gemini\""):
        save_setting(cfg, "agents.harness", "gemini")
