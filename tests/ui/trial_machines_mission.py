"""The last step of issue 24's trial (``trial_machines.py``): a mission on devbox, approved from
the laptop's tray app.

Created from the laptop with ``volee mission create --machine devbox``: its coordinator is the
REAL Claude Code there (the fake model API), bypassPermissions.  The person's messages to it
(``volee send devbox:pricing-lead "MCP: …"``) make the fake model call the coordinator's volee
MCP tools there: ``spawn_worker`` (a real Claude Code worker, in its own worktree there, that
commits one file) and, once volee says the worker delivered, ``present_report``.  Then, in the
app on the laptop: the list's strip "Mission to approve: devbox: …", a real click on its
Review… button, Alt+D (Show the diff) in the approval dialog, a real click on the approving
option; then devbox's ``git log main``, read as that user, and the list's "Merged on devbox".
Every wait is bounded; a failure raises (the trial stops there)."""

from __future__ import annotations

import json
import os
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from PySide6.QtGui import QImage

from tests.e2e.machines_rig import ServerUser
from ui import desktop as dt
from ui import procs

GOAL = "Round the shop's prices to cents"
LEAD = "pricing-lead"
WORKER = "round-prices"
TASK = (
    "RUN: printf 'ROUNDING = 2  # prices in cents\\n' > pricing.py && git add pricing.py"
    " && git commit -qm 'pricing: round to cents'"
)
APPROVE = "Approve and merge"
STRIP = (0xFF, 0xF4, 0xE6)  # missions_strip.py: a mission's framed line


def boxes(
    png: Path, match: Callable[[int, int, int], bool], run: int
) -> tuple[int, int, int, int] | None:
    """The bounding box (x, y, w, h) of the rows holding ``run`` pixels in a row that
    ``match`` (a button's or a frame's fill, not a line of text in that colour)."""
    image = QImage(str(png)).convertToFormat(QImage.Format.Format_RGB888)
    width, stride = image.width(), image.bytesPerLine()
    data = bytes(image.constBits())
    found: list[tuple[int, int, int]] = []
    for y in range(image.height()):
        row = data[y * stride : y * stride + 3 * width]
        xs: list[int] = []
        longest = length = 0
        for x in range(width):
            if match(row[3 * x], row[3 * x + 1], row[3 * x + 2]):
                xs.append(x)
                length += 1
                longest = max(longest, length)
            else:
                length = 0
        if longest >= run:
            found.append((y, min(xs), max(xs)))
    if not found:
        return None
    left, right = min(f[1] for f in found), max(f[2] for f in found)
    return left, found[0][0], right - left + 1, found[-1][0] - found[0][0] + 1


def strip_fill(r: int, g: int, b: int) -> bool:
    return (r, g, b) == STRIP


def green_fill(r: int, g: int, b: int) -> bool:
    """The approving button's green (drawn as a gradient: #2f9e44 and lighter)."""
    return g > r + 60 and g > b + 40


@dataclass
class Rig:
    """What the step uses of the trial: the desktop, the app, devbox and the laptop's CLI."""

    desk: dt.Desktop
    app: procs.Proc
    there: ServerUser
    repo: Path  # devbox's repository (a path there)
    out: Path
    volee: Callable[..., str]


def prepare(there: ServerUser, repo: Path) -> None:
    """devbox's repository, made by its user: one commit on main, .claude/ ignored."""
    there.git(repo, "init", "-q", "-b", "main")
    for key, value in (("user.name", "Dev Box"), ("user.email", "dev@devbox.example")):
        there.git(repo, "config", key, value)
    for name, text in ((".gitignore", ".claude/\n"), ("README.md", "# pricing\n")):
        (repo / name).write_text(text)
        os.chown(repo / name, there.uid, there.gid)
    there.git(repo, "add", ".")
    there.git(repo, "commit", "-q", "-m", "start")


def mission_on_devbox(r: Rig) -> dict[str, float]:
    """The step; what it timed (seconds since the mission's creation)."""
    desk, app, there = r.desk, r.app, r.there
    prepare(there, r.repo)

    def shown(ref: str) -> dict[str, Any]:
        view: dict[str, Any] = json.loads(r.volee("mission", "show", ref, "--json", quiet=True))
        return view

    def shot(name: str) -> Path:
        path = desk.screenshot(r.out / name)
        print("screenshot", path)
        return path

    def status(ref: str) -> str:
        return str(shown(ref)["status"])

    times: dict[str, float] = {}
    create = ["mission", "create", "--machine", "devbox", "--goal", GOAL, "--kind", "change",
              "--repo", str(r.repo), "--name", LEAD,
              "--permission-mode", "bypassPermissions"]  # fmt: skip
    print("$ volee " + " ".join(create))
    created = json.loads(r.volee(*create, "--json", quiet=True))
    began = time.monotonic()

    def mark(what: str) -> None:
        times[what] = round(time.monotonic() - began, 1)
        print(f"[{times[what]:6.1f} s] {what}")

    ref = f"devbox:{created['id']}"
    coordinator = created["coordinator"]
    print("mission:", ref, "on", created.get("machine"), "coordinator", coordinator)
    dt.poll(
        "the coordinator's first turn over, there",
        lambda: any(a["id"] == coordinator and a["state"] == "done" for a in there.agents()),
        120,
    )
    mark("coordinator read its brief")
    spawn = json.dumps({"task": TASK, "name": WORKER})
    r.volee("send", f"devbox:{LEAD}", f"MCP: mcp__volee__spawn_worker {spawn}")
    dt.poll("its worker, there", lambda: any(a["name"] == WORKER for a in there.agents()), 90)
    mark("worker spawned by the coordinator's spawn_worker")
    dt.poll("the worker delivered (reporting)", lambda: status(ref) == "reporting", 180)
    mark("worker delivered: reporting")
    report = {
        "body": "## Prices rounded\n\n`round-prices` added `pricing.py` (ROUNDING = 2) on its"
        " branch, one commit, clean tree.",
        "options": [APPROVE, "Not yet"],
        "approving": APPROVE,
    }
    dt.poll(
        "the coordinator idle again (its report asked)",
        lambda: any(
            a["id"] == coordinator and a["state"] not in ("launching", "working")
            for a in there.agents()
        ),
        120,
    )
    r.volee("send", f"devbox:{LEAD}", f"MCP: mcp__volee__present_report {json.dumps(report)}")
    dt.poll("awaiting approval", lambda: status(ref) == "awaiting-approval", 120)
    mark("awaiting approval")
    r.volee("mission", "ls")

    # The laptop's app: its notification, then the list's strip and its Review… button.
    dt.poll(
        "the mission's notification",
        lambda: (
            (app.output() or True)
            and any("notification:" in x and "A mission waits" in x for x in app.lines)
        ),
        30,
    )
    mark("the app's notification")
    print([x for x in app.lines if "notification:" in x][-1])
    time.sleep(1.5)
    shot("6-mission-notification.png")
    desk.run("dunstctl", "close-all")
    icon = dt.poll("the tray icon", desk.tray_icon)
    assert isinstance(icon, tuple)
    x, y, iw, ih = icon
    if not desk.visible("Agents — volee"):
        desk.click(x + iw // 2, y + ih // 2)
        app.wait_line(r"agent list shown", timeout=10)
    time.sleep(1.5)
    strip_png = shot("7-list-mission.png")
    strip = boxes(strip_png, strip_fill, 40)
    assert strip is not None, "no mission strip in the list"
    sx, sy, sw, sh = strip
    print("the strip's frame:", strip)
    desk.click(sx + sw - 40, sy + sh // 2)  # its Review… button, at the frame's right end
    app.wait_line(r"approval dialog of \S+ shown", timeout=15)
    mark("review opened from the list's strip")
    wid = dt.poll(
        "the dialog's window",
        lambda: desk.run(
            "xdotool", "search", "--onlyvisible", "--name", "Review mission", check=False
        ).split(),
        10,
    )
    assert isinstance(wid, list)
    dialog = wid[0]
    print("dialog window:", desk.run("xdotool", "getwindowname", dialog).strip())
    geometry = dict(
        line.split("=", 1)
        for line in desk.run("xdotool", "getwindowgeometry", "--shell", dialog).split()
    )
    dx, dy = int(geometry["X"]), int(geometry["Y"])
    time.sleep(3)  # the workers' changes, read there through the link
    desk.click(dx + 200, dy + 20)  # the dialog has the focus (its goal line)
    desk.run("xdotool", "key", "alt+d")  # Show the diff: devbox's worker's, read there
    time.sleep(4)
    dialog_png = r.out / "8-review-dialog.png"
    desk.run("import", "-window", dialog, str(dialog_png))
    print("screenshot", dialog_png)
    shot("8-review-screen.png")
    button = boxes(dialog_png, green_fill, 40)
    assert button is not None, "no approving button in the dialog"
    bx, by, bw, bh = button
    print("the approving button:", button)
    desk.click(dx + bx + bw // 2, dy + by + bh // 2)
    app.wait_line(r"mission \S+ answered", timeout=30)
    mark("approved in the dialog")
    dt.poll("closed (merged there)", lambda: status(ref) == "closed", 240)
    mark("merged there: closed")
    app.wait_line(r"Merged on devbox: the mission", timeout=30)  # the list's status line
    mark("the laptop's list says merged")
    log = there.git(r.repo, "log", "--oneline", "--graph", "main")
    print(f"devbox, as {there.name}: git log --oneline --graph main\n{log}")
    made = r.repo / "pricing.py"
    print(f"{made}: {made.read_text().strip()!r}, owner uid {made.stat().st_uid}")
    assert "Merge volee/" in log
    assert made.stat().st_uid == there.uid
    r.volee("mission", "show", ref)
    r.volee("mission", "ls", "--all")
    time.sleep(2)
    if not desk.visible("Agents — volee"):
        desk.click(x + iw // 2, y + ih // 2)
        app.wait_line(r"agent list shown", timeout=10)
        time.sleep(1.5)
    shot("9-after-approve.png")
    return times
