"""Claude Code's status line for agents volee launches: tell volee the context share, then
show the person's own status line, if they have one, exactly as before.

Claude Code runs its ``statusLine`` command with a JSON document on stdin (its fields are
in ``docs/context.md``) every time the conversation changes, so this runs often: like the
hook shim it is stdlib only, run as ``python -I -S statusline.py STATE [OWN-COMMAND]``:

- ``STATE`` is a file of this agent's where the last share sent is kept: a payload is handed
  to the daemon (as the hook event ``StatusLine``, through ``hookshim.hand_over``) only when
  the share, in whole per cent, changed.  A payload volee cannot read (not JSON, no context
  window: another version) is handed over once, so the daemon logs it once, then ignored.
- ``OWN-COMMAND`` is the person's own ``statusLine`` command (from their settings, read when
  volee launched the agent): it gets the same stdin and its output is this command's output.

Whatever happens, volee's part never stops the person's status line from showing, and this
exits with the person's command's exit code (0 without one).
"""

from __future__ import annotations

import os
import sys
import time

# Not `typing.TYPE_CHECKING`: importing typing costs more than the rest (as in the shim).
TYPE_CHECKING = False
if TYPE_CHECKING:
    from volee_desktop import lean
    from volee_desktop.cli import hookshim
else:  # run as a file with -I -S: the shim next to it, without the volee package
    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
    import hookshim
    import lean  # the shim put the package's folder on the path

EVENT = "StatusLine"
MAX_PAYLOAD = 1 << 20
BAD = "unreadable"
OWN_TIMEOUT = 10.0


def share_of(payload: object) -> tuple[float, float | None] | None:
    """(share 0..1, cost in dollars or None) from Claude Code's status-line input, else None."""
    if not isinstance(payload, dict):
        return None
    window = payload.get("context_window")
    if not isinstance(window, dict):
        return None
    used = window.get("used_percentage")
    share: float | None = None
    if isinstance(used, (int, float)) and not isinstance(used, bool) and 0 <= used <= 100:
        share = used / 100
    elif used is None:
        # No API call yet in this conversation: Claude Code says null; nothing used.
        size = window.get("context_window_size")
        usage = window.get("current_usage")
        if usage is None and isinstance(size, int) and size > 0:
            share = 0.0
    if share is None:
        return None
    cost = None
    spent = payload.get("cost")
    if isinstance(spent, dict):
        total = spent.get("total_cost_usd")
        if isinstance(total, (int, float)) and not isinstance(total, bool) and total >= 0:
            cost = float(total)
    return share, cost


#: The windows of the plan's use in the status-line input (claude.ai logins only; read in
#: 2.1.332: ``used_percentage`` 0..100 and ``resets_at`` in epoch seconds; docs/limits.md).
PLAN_WINDOWS = ("five_hour", "seven_day")


def plan_of(payload: object) -> dict[str, dict[str, float | None]]:
    """``{window: {used: 0..1, resets_at}}`` of the plan's use the harness reports ({}: none)."""
    out: dict[str, dict[str, float | None]] = {}
    limits = payload.get("rate_limits") if isinstance(payload, dict) else None
    if not isinstance(limits, dict):
        return out
    for window in PLAN_WINDOWS:
        entry = limits.get(window)
        if not isinstance(entry, dict):
            continue
        used = entry.get("used_percentage")
        if isinstance(used, bool) or not isinstance(used, (int, float)) or not 0 <= used <= 100:
            continue
        resets = entry.get("resets_at")
        when: float | None = None
        if isinstance(resets, (int, float)) and not isinstance(resets, bool) and resets > 0:
            when = float(resets)
        out[window] = {"used": used / 100, "resets_at": when}
    return out


def _last(state: str) -> str:
    try:
        with open(state, encoding="utf-8") as f:
            return f.read(64)
    except OSError:
        return ""


def _keep(state: str, text: str) -> None:
    try:
        tmp = f"{state}.{os.getpid()}.tmp"
        with open(tmp, "w", encoding="utf-8") as f:
            f.write(text)
        os.replace(tmp, state)
    except OSError:
        pass


def tell_volee(state: str, data: bytes) -> None:
    """Hand the share to the daemon when it changed (or an unreadable payload, once)."""
    received_at = time.time()
    try:
        payload = lean.loads(data.decode("utf-8"))
    except (ValueError, UnicodeDecodeError):
        payload = None
    found = share_of(payload)
    if found is None:
        if _last(state) != BAD:
            _keep(state, BAD)
            hookshim.hand_over(EVENT, data, received_at)
        return
    share, cost = found
    plan = plan_of(payload)
    key = str(round(share * 100))
    for window, use in plan.items():  # the plan's use, in whole per cent, counts too
        key += f" {window}={round((use['used'] or 0) * 100)}"
    if _last(state) == key:
        return
    _keep(state, key)
    session = payload.get("session_id") if isinstance(payload, dict) else None
    sent: dict[str, object] = {
        "session_id": session if isinstance(session, str) else None,
        "context": share,
        "cost_usd": cost,
    }
    if plan:
        sent["plan"] = plan
    hookshim.hand_over(EVENT, lean.dumps(sent).encode(), received_at)


def run_own(command: str, data: bytes) -> int:
    """Run the person's own status line with the same input; print what it printed."""
    import subprocess

    try:
        done = subprocess.run(
            ["/bin/sh", "-c", command],
            input=data,
            stdout=subprocess.PIPE,
            timeout=OWN_TIMEOUT,
            check=False,
        )
    except (OSError, subprocess.SubprocessError) as exc:
        print(f"volee: your status line failed: {exc}", file=sys.stderr)
        return 1
    sys.stdout.buffer.write(done.stdout)
    sys.stdout.flush()
    return done.returncode


def main(argv: list[str]) -> int:
    state = argv[0] if argv else ""
    own = argv[1] if len(argv) > 1 else ""
    try:
        data = sys.stdin.buffer.read(MAX_PAYLOAD + 1)
    except (OSError, ValueError):
        data = b""
    if state and len(data) <= MAX_PAYLOAD:
        try:
            tell_volee(state, data)
        except Exception as exc:  # volee's part never hides the person's status line
            print(f"volee status line: failed ({exc!r}); this is a bug in volee", file=sys.stderr)
    return run_own(own, data[:MAX_PAYLOAD]) if own else 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
