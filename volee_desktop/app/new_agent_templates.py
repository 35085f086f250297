"""What was chosen last in the New agent dialog, per project (``new_agent.json``)."""

from __future__ import annotations

import json
import logging
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from volee_desktop.atomicfile import write_atomic

log = logging.getLogger(__name__)


@dataclass
class Template:
    """What was chosen last for a project."""

    harness: str
    mode: str | None
    worktree: bool


class Templates:
    """The last harness, permission mode and worktree choice per project, in a small JSON
    file; a file that is missing or not volee's gives none, saving never raises."""

    def __init__(self, path: Path | None) -> None:
        self.path = path
        self.projects: dict[str, Template] = {}
        if path is None:
            return
        try:
            data: Any = json.loads(path.read_text(encoding="utf-8"))
        except FileNotFoundError:
            return
        except (OSError, ValueError) as exc:
            log.warning("the New agent choices in %s are unreadable (%s): none", path, exc)
            return
        projects = data.get("projects") if isinstance(data, dict) else None
        for folder, t in (projects or {}).items() if isinstance(projects, dict) else ():
            if isinstance(t, dict) and isinstance(t.get("harness"), str):
                mode = t.get("mode") if isinstance(t.get("mode"), str) else None
                self.projects[str(folder)] = Template(t["harness"], mode, t.get("worktree") is True)

    def get(self, project: str) -> Template | None:
        return self.projects.get(project)

    def remember(self, project: str, template: Template) -> None:
        self.projects[project] = template
        if self.path is None:
            return
        data = {"projects": {k: vars(v) for k, v in self.projects.items()}}
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            write_atomic(self.path, json.dumps(data, indent=1).encode())
        except OSError as exc:
            log.warning("could not keep the New agent choices in %s: %s", self.path, exc)
