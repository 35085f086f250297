"""A mission on devbox, over the real sshd rig (``test_machines_ssh.py``): created from here
with ``--machine``, its worker's diff read from here, approved from here with
``volee mission answer devbox:MISSION``, the merge done there, as devbox's user."""

from __future__ import annotations

import json
import os
from typing import Any

import pytest

from tests.e2e.test_machines_ssh import Machines, add_devbox, m
from tests.polling import wait_until
from volee_desktop.ipc.client import Client
from volee_desktop.paths import dirs

pytestmark = [pytest.mark.e2e, pytest.mark.slow, pytest.mark.timeout(180)]
__all__ = ["m"]

COMMIT = "RUN: echo one > one.txt && git add one.txt && git commit -qm one"


def mission(m: Machines, ref: str) -> dict[str, Any]:
    shown: dict[str, Any] = json.loads(m.here.cli("mission", "show", ref, "--json").stdout)
    return shown


def test_a_mission_on_devbox_is_approved_from_here_and_merged_there(m: Machines) -> None:
    add_devbox(m)
    there = m.there
    repo = there.home / "project"
    there.git(repo, "init", "-q", "-b", "main")
    for key, value in (("user.name", "t"), ("user.email", "t@example.com")):
        there.git(repo, "config", key, value)
    there.git(repo, "commit", "-q", "--allow-empty", "-m", "init")
    (repo / ".gitignore").write_text(".claude/\n.fake-harness/\n")
    os.chown(repo / ".gitignore", there.uid, there.gid)
    there.git(repo, "add", ".gitignore")
    there.git(repo, "commit", "-q", "-m", "ignore")
    created = json.loads(
        m.here.cli(
            "mission", "create", "--machine", "devbox", "--goal", "add one file",
            "--repo", str(repo), "--json",
        ).stdout
    )  # fmt: skip
    ident, coordinator = created["id"], created["coordinator"]
    assert created["machine"] == "devbox"
    wait_until(
        lambda: any(a["id"] == coordinator and a["state"] == "done" for a in there.agents()),
        what="the coordinator read its brief, there",
    )
    # What its coordinator's MCP tools would ask, there.
    worker = there.call("missions.spawn_worker", agent=coordinator, prompt=COMMIT, verbatim=True)[
        "id"
    ]
    wait_until(
        lambda: mission(m, f"devbox:{ident}")["status"] == "reporting",
        timeout=60,
        what="the worker delivered, seen here",
    )
    there.call("missions.request_approval", agent=coordinator, body="one file added")
    wait_until(
        lambda: f"awaiting-approval devbox:{ident}" in m.here.cli("mission", "ls").stdout,
        what="the mission awaiting approval, listed here with its machine",
    )
    shown = m.here.cli("mission", "show", f"devbox:{ident}").stdout
    assert f"volee mission answer devbox:{ident} --option approve" in shown
    # The review's diff, asked here, is read there (the app's approval dialog asks the same).
    with Client.connect(dirs({"VOLEE_HOME": str(m.here.home)}).socket) as client:
        changes = client.call("agents.changes", agent=worker, diff=True)
    assert changes["machine"] == "devbox"
    assert "+one" in changes["diff"]
    m.here.cli("mission", "answer", f"devbox:{ident}", "--option", "approve", timeout=120)
    wait_until(lambda: mission(m, f"devbox:{ident}")["status"] == "closed", what="closed, there")
    assert (repo / "one.txt").read_text() == "one\n"
    assert os.stat(repo / "one.txt").st_uid == there.uid  # merged there, as its user
    assert "Merge volee/" in there.git(repo, "log", "--oneline", "main")
