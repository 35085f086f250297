"""A fast fake "claude" for host and daemon tests: a prompt in a PTY, real-shaped hooks.

Run: ``python fake_harness.py [--session-id ID | --resume ID] [--settings FILE]
[--permission-mode M] [--no-hooks] [PROMPT]``.

It enables bracketed paste like Claude Code, prints a ``❯`` prompt and reads keys from
its terminal (no echo, no line editing by the tty: it does its own).  A bracketed paste
is one message even with newlines in it; Enter (``\\r``) submits.  Each submitted prompt
is shown as ``PROMPT n paste=P: <text>`` (P = number of pastes in it, text JSON-quoted).

Hooks come from ``--settings`` (Claude's ``{"hooks": {"Event": [{"matcher": "...",
"hooks": [{"type": "command", "command": "..."}]}]}}``) and get a JSON payload on stdin
with ``session_id, transcript_path, cwd, hook_event_name, permission_mode`` plus the
event's fields, like Claude Code 2.x.  Behaviour by prompt:

- ``RUN: cmd``   PreToolUse(Bash) -> runs cmd -> PostToolUse (or PostToolUseFailure) -> Stop
- ``ASK: cmd``   PermissionRequest + Notification(permission_prompt), then a dialog drawn
                 like Claude Code's; waits for ``y``/``yes``
                 (runs as RUN) or anything else (denied, Stop).  In bypassPermissions it
                 runs at once.  Like Claude Code 2.1's dialog, the key ``1``/``2`` runs it at
                 once and ``3`` or Esc refuses with no hook at all (no Stop).  With
                 ``FAKE_HARNESS_DEAF=S`` it drops the keys typed within S seconds of the dialog.
- ``SLEEP: n``   works n seconds, then Stop
- ``SIZE``       prints ``SIZE rows=R cols=C``
- ``CRASH``      exits with code 3 (no SessionEnd);  ``KILLME`` SIGKILLs itself
- ``UNSAVED…``   UserPromptSubmit, then waits for ever having saved nothing: Claude Code
                 killed before its queue wrote the prompt leaves no conversation to resume
- ``/exit``      SessionEnd(reason prompt_input_exit), exit 0
- other text     replies ``ok: <text>`` -> Stop

With ``FAKE_HARNESS_LIMIT=FILE``, while FILE exists every prompt meets the plan's 5-hour limit
as Claude Code 2.1.332 does against a 429 with the unified headers (tests/harness/samples/
limits): it draws "✻ 5-hour limit reached · retrying in 1s (<FILE's text: the reset's clock
time>) · attempt 1/2" and then, after ``FAKE_HARNESS_LIMIT_RETRY`` seconds (1.5),
``StopFailure`` (``error: rate_limit``) instead of a reply.  With ``FAKE_HARNESS_PLAN`` it runs
the status line of its ``--settings`` with the plan's use first (``report_plan``).

SIGTERM/SIGHUP: SessionEnd(reason other), then it dies of that signal.  SIGWINCH prints
``WINCH rows=R cols=C``.  The transcript is ``$FAKE_HARNESS_HOME/<session>.jsonl``
(user/assistant lines), also appended, like Claude Code, to
``$HOME/.claude/projects/<cwd with non-alphanumerics as '-'>/<session>.jsonl``;
``--resume`` of an unknown id prints "No conversation found" and exits 1,
``--session-id`` of a known one exits 1 ("already in use").
"""

from __future__ import annotations

import json
import os
import re
import signal
import sys
import time

PASTE_START = b"\x1b[200~"
PASTE_END = b"\x1b[201~"
TOOL_EVENTS = {"PreToolUse", "PostToolUse", "PostToolUseFailure", "PermissionRequest"}


def _new_id() -> str:
    h = os.urandom(16).hex()
    return f"{h[:8]}-{h[8:12]}-4{h[13:16]}-a{h[17:20]}-{h[20:]}"


def _out(text: str) -> None:
    # The tty's output processing turns \n into \r\n.
    data = text.encode()
    while data:
        try:
            data = data[os.write(1, data) :]
        except InterruptedError:
            continue


class _Refused(Exception):
    """The person refused the permission dialog with Esc (or "No")."""


class Fake:
    """The fake harness's state: session, hooks, transcript."""

    def __init__(self, args: list[str]) -> None:
        self.session_id: str | None = None
        self.resume: str | None = None
        self.settings: str | None = None
        self.permission_mode = "default"
        self.no_hooks = False
        self.mcp_config: str | None = None
        self.prompt: str | None = None
        self._parse(args)
        self.cwd = os.getcwd()
        home = os.environ.get("FAKE_HARNESS_HOME") or os.path.join(self.cwd, ".fake-harness")
        os.makedirs(home, exist_ok=True)
        self.home = home
        self.hooks: dict[str, list[dict[str, object]]] = {}
        self.status_line = ""
        if self.settings and not self.no_hooks:
            with open(self.settings, encoding="utf-8") as f:
                document = json.load(f)
            self.hooks = document.get("hooks", {})
            line = document.get("statusLine")
            self.status_line = str(line.get("command", "")) if isinstance(line, dict) else ""
        self.prompt_id = ""
        self.last_uuid: str | None = None
        self.count = 0
        self.ending = False
        self.unread = b""  # keys read ahead by the permission dialog, for the next line

    def _parse(self, args: list[str]) -> None:
        it = iter(args)
        for arg in it:
            if arg == "--session-id":
                self.session_id = next(it)
            elif arg == "--resume":
                self.resume = next(it)
            elif arg == "--settings":
                self.settings = next(it)
            elif arg == "--permission-mode":
                self.permission_mode = next(it)
            elif arg == "--model":
                next(it)  # as Claude Code takes it; the fake model server answers any
            elif arg == "--mcp-config":
                self.mcp_config = next(it)
            elif arg == "--no-hooks":
                self.no_hooks = True
            elif arg.startswith("--"):
                sys.stderr.write(f"error: unknown option '{arg}'\n")
                raise SystemExit(2)
            else:
                self.prompt = arg

    @property
    def transcript(self) -> str:
        return os.path.join(self.home, f"{self.session_id}.jsonl")

    @property
    def claude_transcript(self) -> str:
        """Claude Code's place: ``<config>/projects/<cwd, non-alphanumerics as '-'>/``."""
        config = os.environ.get("CLAUDE_CONFIG_DIR") or os.path.join(
            os.path.expanduser("~"), ".claude"
        )
        folder = re.sub(r"[^a-zA-Z0-9]", "-", os.path.abspath(self.cwd))
        return os.path.join(config, "projects", folder, f"{self.session_id}.jsonl")

    # -- hooks and transcript -------------------------------------------------

    def hook(self, event: str, **fields: object) -> None:
        groups = self.hooks.get(event) or []
        if not groups:
            return
        payload: dict[str, object] = {
            "session_id": self.session_id,
            "transcript_path": self.transcript,
            "cwd": self.cwd,
        }
        if event != "SessionStart":
            payload["prompt_id"] = self.prompt_id
            payload["permission_mode"] = self.permission_mode
        payload["hook_event_name"] = event
        payload.update(fields)
        data = json.dumps(payload).encode()
        env = dict(os.environ)
        env.update(
            CLAUDE_PID=str(os.getpid()),
            CLAUDE_CODE_SESSION_ID=str(self.session_id),
            CLAUDE_PROJECT_DIR=self.cwd,
            CLAUDE_CODE_ENTRYPOINT="cli",
            CLAUDECODE="1",
        )
        import subprocess

        for group in groups:
            matcher = str(group.get("matcher") or "")
            tool = str(fields.get("tool_name", ""))
            if (
                event in TOOL_EVENTS
                and matcher not in ("", "*")
                and not re.fullmatch(matcher, tool)
            ):
                continue
            for spec in group.get("hooks", []):  # type: ignore[attr-defined]
                if spec.get("type") != "command":
                    continue
                try:
                    subprocess.run(
                        spec["command"],
                        shell=True,
                        input=data,
                        env=env,
                        cwd=self.cwd,
                        stdout=subprocess.DEVNULL,
                        stderr=subprocess.DEVNULL,
                        timeout=float(spec.get("timeout", 60)),
                        check=False,
                    )
                except (OSError, subprocess.SubprocessError) as exc:
                    sys.stderr.write(f"hook {event} failed: {exc}\n")

    def log(self, role: str, content: object) -> None:
        uuid = _new_id()
        line = {
            "parentUuid": self.last_uuid,
            "type": role,
            "message": {"role": role, "content": content},
            "uuid": uuid,
            "timestamp": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
            "promptId": self.prompt_id,
            "sessionId": self.session_id,
            "cwd": self.cwd,
        }
        self.last_uuid = uuid
        with open(self.transcript, "a", encoding="utf-8") as f:
            f.write(json.dumps(line) + "\n")
        # Also where Claude Code keeps it, so volee's probe for a conversation sees it.
        os.makedirs(os.path.dirname(self.claude_transcript), exist_ok=True)
        with open(self.claude_transcript, "a", encoding="utf-8") as f:
            f.write(json.dumps(line) + "\n")

    # -- life ----------------------------------------------------------------

    def start(self) -> int:
        if self.resume is not None:
            self.session_id = self.resume
            if not os.path.exists(self.transcript):
                sys.stderr.write(f"No conversation found with session ID: {self.resume}\n")
                return 1
            with open(self.transcript, encoding="utf-8") as f:
                history = [json.loads(line) for line in f if line.strip()]
            self.count = sum(1 for h in history if h.get("type") == "user")
            self.last_uuid = history[-1]["uuid"] if history else None
            source = "resume"
        else:
            if self.session_id is None:
                self.session_id = _new_id()
            if os.path.exists(self.transcript):
                sys.stderr.write(f"Error: Session ID {self.session_id} is already in use.\n")
                return 1
            open(self.transcript, "a").close()
            source = "startup"
        for name in ("SIGTERM", "SIGHUP"):
            signal.signal(getattr(signal, name), self._on_term)
        signal.signal(signal.SIGWINCH, self._on_winch)
        _out("\x1b[?2004h")
        _out(f"fake-harness session {self.session_id} ({source}, {self.count} earlier prompts)\n")
        self.hook("SessionStart", source=source)
        self._own_keys()
        if self.prompt:
            self.count += 1
            _out(f"PROMPT {self.count} paste=0: {json.dumps(self.prompt)}\n")
            code = self.submit(self.prompt, 0)
            if code is not None:
                return code
        return self.loop()

    def _on_term(self, signum: int, frame: object) -> None:
        if self.ending:
            return
        self.ending = True
        self.hook("SessionEnd", reason="other")
        signal.signal(signum, signal.SIG_DFL)
        os.kill(os.getpid(), signum)

    def _on_winch(self, signum: int, frame: object) -> None:
        _out("WINCH {} {}\n".format(*self._size()))

    @staticmethod
    def _size() -> tuple[str, str]:
        try:
            size = os.get_terminal_size(0)
        except OSError:
            return ("rows=?", "cols=?")
        return (f"rows={size.lines}", f"cols={size.columns}")

    def _keys(self) -> tuple[str, int] | None:
        """Read one submitted line: (text, number of pastes), or None at end of input."""
        buf = bytearray()
        pastes = 0
        in_paste = False
        pending = b""
        ahead, self.unread = self.unread, b""
        while True:
            try:
                chunk, ahead = (ahead, b"") if ahead else (os.read(0, 4096), b"")
            except InterruptedError:
                continue
            except OSError:
                return None
            if not chunk:
                return None
            data = pending + chunk
            pending = b""
            i = 0
            while i < len(data):
                if data[i] == 0x1B:
                    rest = data[i:]
                    if rest.startswith(PASTE_START):
                        in_paste, pastes, i = True, pastes + 1, i + len(PASTE_START)
                        continue
                    if rest.startswith(PASTE_END):
                        in_paste, i = False, i + len(PASTE_END)
                        continue
                    if PASTE_START.startswith(rest) or PASTE_END.startswith(rest):
                        pending = rest  # a marker cut in two: wait for the rest
                        break
                byte = data[i]
                i += 1
                if byte in (0x0D, 0x0A) and not in_paste:
                    _out("\n")
                    return buf.decode(errors="replace"), pastes
                if byte == 0x7F and not in_paste:
                    if buf:
                        del buf[-1]
                        _out("\b \b")
                    continue
                buf.append(byte)
                if not in_paste:
                    _out(chr(byte) if 32 <= byte < 127 else "")

    @staticmethod
    def _own_keys() -> None:
        """No echo, no line editing by the tty: keys arrive one by one, like a TUI's."""
        import termios

        if os.isatty(0):
            attrs = termios.tcgetattr(0)
            attrs[0] &= ~(termios.ICRNL | termios.INLCR)
            attrs[3] &= ~(termios.ICANON | termios.ECHO)
            termios.tcsetattr(0, termios.TCSANOW, attrs)

    def loop(self) -> int:
        while True:
            _out("❯ ")
            got = self._keys()
            if got is None:
                self.hook("SessionEnd", reason="other")
                return 0
            text, pastes = got
            self.count += 1
            _out(f"PROMPT {self.count} paste={pastes}: {json.dumps(text)}\n")
            code = self.submit(text, pastes)
            if code is not None:
                return code

    def submit(self, text: str, pastes: int) -> int | None:
        """Handle one prompt; return an exit code to end the program."""
        stripped = text.strip()
        if stripped == "/exit":
            self.hook("SessionEnd", reason="prompt_input_exit")
            return 0
        if stripped == "CRASH":
            _out("crashing\n")
            os._exit(3)
        if stripped == "KILLME":
            os.kill(os.getpid(), signal.SIGKILL)
        self.prompt_id = _new_id()
        self.hook("UserPromptSubmit", prompt=text)
        if stripped.startswith("UNSAVED"):
            _out("thinking…\n")
            while True:
                time.sleep(3600)
        self.log("user", text)
        self.report_plan()
        limit = os.environ.get("FAKE_HARNESS_LIMIT")
        if limit and os.path.exists(limit):
            self.limited(limit)
            return None
        if stripped == "SIZE":
            reply = "SIZE {} {}".format(*self._size())
        elif stripped.startswith("RUN: "):
            reply = self.run_tool(stripped[5:])
        elif stripped.startswith("ASK: "):
            try:
                reply = self.ask(stripped[5:])
            except _Refused:
                return None  # no Stop: Claude Code fires no hook for a refused dialog
        elif stripped.startswith("SLEEP: "):
            _out("working…\n")
            time.sleep(float(stripped[7:]))
            reply = f"slept {stripped[7:]}"
        else:
            reply = f"ok: {text}"
        _out(reply + "\n")
        # "LATE …": the reply reaches the transcript 1.5 s after the Stop hook, as Claude Code
        # 2.1.332 sometimes writes it after running Stop.
        late = stripped.startswith("LATE ")
        if not late:
            self.log("assistant", [{"type": "text", "text": reply}])
        self.hook(
            "Stop",
            stop_hook_active=False,
            last_assistant_message=reply,
            background_tasks=[],
            session_crons=[],
        )
        if late:
            time.sleep(1.5)
            self.log("assistant", [{"type": "text", "text": reply}])
        return None

    def report_plan(self) -> None:
        """With ``FAKE_HARNESS_PLAN=P5,P7,RESET`` (per cents used of the 5-hour and weekly
        windows, the 5-hour reset in epoch seconds; or a file holding them), run the status
        line with the ``rate_limits`` a claude.ai login's Claude Code 2.1.332 gives it."""
        plan = os.environ.get("FAKE_HARNESS_PLAN")
        if plan and os.path.isfile(plan):  # or a file that holds them
            with open(plan, encoding="utf-8") as f:
                plan = f.read().strip()
        if not plan or not self.status_line:
            return
        five, seven, resets = (float(x) for x in plan.split(","))
        payload = {
            "session_id": self.session_id,
            "cwd": self.cwd,
            "context_window": {"used_percentage": 12, "context_window_size": 200000},
            "rate_limits": {
                "five_hour": {"used_percentage": five, "resets_at": resets},
                "seven_day": {"used_percentage": seven, "resets_at": resets + 3 * 86400},
            },
        }
        import subprocess

        subprocess.run(
            self.status_line,
            shell=True,
            input=json.dumps(payload).encode(),
            cwd=self.cwd,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            timeout=30,
            check=False,
        )

    def limited(self, path: str) -> None:
        """The turn meets the plan's limit: a retry line, then ``StopFailure``."""
        try:
            with open(path, encoding="utf-8") as f:
                clock = f.read().strip()
        except OSError:
            clock = ""
        when = f" ({clock})" if clock else ""
        _out(f"✻ 5-hour limit reached · retrying in 1s{when} · attempt 1/2\n")
        time.sleep(float(os.environ.get("FAKE_HARNESS_LIMIT_RETRY", "1.5")))
        _out("  ⎿  API Error: Request rejected (429) · Rate limited\n")
        self.hook(
            "StopFailure",
            error="rate_limit",
            last_assistant_message="API Error: Request rejected (429) · Rate limited",
        )

    def run_tool(self, command: str) -> str:
        import subprocess

        tool_input = {"command": command, "description": "run command"}
        use_id = "toolu_" + os.urandom(12).hex()
        self.hook("PreToolUse", tool_name="Bash", tool_input=tool_input, tool_use_id=use_id)
        started = time.monotonic()
        done = subprocess.run(
            command, shell=True, cwd=self.cwd, capture_output=True, text=True, check=False
        )
        ms = int((time.monotonic() - started) * 1000)
        if done.stdout:
            _out(done.stdout)
        if done.returncode != 0:
            self.hook(
                "PostToolUseFailure",
                tool_name="Bash",
                tool_input=tool_input,
                tool_use_id=use_id,
                error=f"Exit code {done.returncode}",
                is_interrupt=False,
                duration_ms=ms,
            )
            return f"Failed: exit code {done.returncode}"
        self.hook(
            "PostToolUse",
            tool_name="Bash",
            tool_input=tool_input,
            tool_response={
                "stdout": done.stdout,
                "stderr": done.stderr,
                "interrupted": False,
                "isImage": False,
                "noOutputExpected": False,
            },
            tool_use_id=use_id,
            duration_ms=ms,
        )
        return "Done: " + (done.stdout.strip() or "(Bash completed with no output)")

    def ask(self, command: str) -> str:
        if self.permission_mode == "bypassPermissions":
            return self.run_tool(command)
        tool_input = {"command": command, "description": "run command"}
        self.hook(
            "PermissionRequest",
            tool_name="Bash",
            tool_input=tool_input,
            permission_suggestions=[],
        )
        self.hook(
            "Notification",
            message="Claude needs your permission",
            notification_type="permission_prompt",
        )
        # Drawn like Claude Code 2.1's dialog (volee finds it on the rendered screen).
        _out(
            f"{'─' * 40}\n Bash command\n   {command}\n   run command\n"
            " Do you want to proceed?\n ❯ 1. Yes\n"
            f"   2. Yes, and don't ask again for {command.split()[0]} commands\n   3. No\n"
            " Esc to cancel · Tab to amend\n"
        )
        deaf = float(os.environ.get("FAKE_HARNESS_DEAF", "0") or 0)
        if deaf > 0:
            # Like Claude Code just after it draws a dialog: keys typed this soon are lost.
            import termios

            time.sleep(deaf)
            termios.tcflush(0, termios.TCIFLUSH)
        # Like Claude Code's dialog: a digit key picks an option at once, Esc refuses and
        # ends the turn with no hook; a typed line (y/yes + Enter) is read as before.
        try:
            first = os.read(0, 4096)
        except OSError:
            first = b""
        keylog = os.environ.get("FAKE_HARNESS_KEYLOG")
        if keylog:  # when the dialog's key arrived in the PTY (bench/machines.py)
            with open(keylog, "a", encoding="utf-8") as f:
                f.write(f"{time.time()}\n")
        if first[:1] in (b"1", b"2"):
            self.unread = first[1:]
            _out("\n")
            return self.run_tool(command)
        if first[:1] == b"3" or (first[:1] == b"\x1b" and not first.startswith(PASTE_START)):
            self.unread = first[1:]
            _out("\nInterrupted · What should Claude do instead?\n")
            raise _Refused
        self.unread = first
        got = self._keys()
        if got is not None and got[0].strip().lower() in ("y", "yes"):
            return self.run_tool(command)
        return "Permission denied"


def main() -> int:
    """Run the fake harness."""
    return Fake(sys.argv[1:]).start()


if __name__ == "__main__":
    sys.exit(main())
