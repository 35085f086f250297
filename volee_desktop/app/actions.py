"""The actions a person takes on an agent: the panel's buttons, menu and keys, the tray menu.

``Action`` names them (the panel emits the names); ``AgentActions`` carries them out:
the agent's window (output, reply box), a terminal attached to its host, its
timeline, the daemon calls (stop, resume, forget, send) and the answers to its
request.  The controller builds it with what it needs and keeps the composition.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Callable
from enum import StrEnum
from typing import TYPE_CHECKING, Any

from PySide6.QtGui import QIcon
from PySide6.QtWidgets import QWidget

from volee_desktop.core import limits
from volee_desktop.core.model import Location
from volee_desktop.core.registry import Registry
from volee_desktop.core.states import AgentState

from ..ipc.methods import Method
from . import feedback
from .attention import answer_call, choice_label, is_answer
from .errors import LinkError
from .focus import Focused, bring_forward, where
from .link import DaemonLink
from .looking import Looking
from .tasks import Tasks
from .texts import takes_over

if TYPE_CHECKING:  # both load when first opened, not with the tray icon (issue 27)
    from .agent_window import AgentWindow

log = logging.getLogger(__name__)


class Action(StrEnum):
    """One of the panel's actions; the value is its name in signals and object names."""

    OPEN = "open"
    REPLY = "reply"
    STOP = "stop"
    RESUME = "resume"
    TIMELINE = "timeline"
    FORGET = "forget"
    OUTPUT = "output"
    TERMINAL = "terminal"


#: How the window's status names a key it typed.
KEY_WORDS = {"esc": "Esc", "shift-tab": "Shift+Tab"}

#: Actions that open a window (``before_window`` runs first; the list stays behind it).
OPENS_A_WINDOW = frozenset(
    {Action.OPEN, Action.OUTPUT, Action.TERMINAL, Action.REPLY, Action.TIMELINE}
)


class AgentActions:
    """Carries out the actions on an agent; owns the agents' windows (``windows``)."""

    def __init__(
        self,
        *,
        registry: Callable[[], Registry],
        link: Callable[[], DaemonLink],
        call: Callable[[str, dict[str, Any]], None],
        tasks: Tasks,
        looking: Looking,
        icon: Callable[[], QIcon],
        terminal: Callable[[str], list[str] | None],
        screen_lines: int,
        confirm: Callable[[str, str], bool],
        show_error: Callable[[str, str], None],
        keep: Callable[[QWidget], None],
        withdraw: Callable[[str], None],
        opened: Callable[[str, str], None],
        called: Callable[[str], None],
        before_window: Callable[[], None],
        focus: Callable[[int | None], Focused] = bring_forward,
        said: Callable[[str, float | None], None] | None = None,
        monotonic: Callable[[], float] = time.monotonic,
        failed: Callable[[str, str], None] | None = None,
    ) -> None:
        self.registry = registry
        self.link = link
        self.call = call
        self.tasks = tasks
        self.looking = looking
        self.icon = icon
        self.terminal = terminal
        self.screen_lines = screen_lines
        self.confirm = confirm
        self.show_error = show_error
        self.keep = keep
        self.withdraw = withdraw
        self.opened = opened
        self.called = called
        self.before_window = before_window
        self.focus = focus
        self.said = said or (lambda _text, _started: None)  # what an answer did, for the list
        self.monotonic = monotonic  # when an answer began: one that took long notifies
        self.failed = failed or (lambda _title, _why: None)  # an answer that did not go in
        self._fetching: set[str] = set()
        self._taking_over: set[str] = set()
        #: While a session is taken over: how often discovery is asked, and for how long.
        self.take_over_every = 2.0
        self.take_over_for = 600.0
        self._screen_method = Method.AGENTS_OUTPUT
        self.windows: dict[str, AgentWindow] = {}

    def run(self, name: str, agent_id: str) -> None:
        """Carry out one of the panel's (or the tray menu's) actions on an agent."""
        if is_answer(name):
            # The list and the menu show the agent's current request: answer that one.
            self.answer_agent(agent_id, name)
            return
        handlers: dict[Action, Callable[[str], None]] = {
            Action.OPEN: self.open_agent,
            Action.OUTPUT: self.show_output,
            Action.TERMINAL: self.open_terminal,
            Action.REPLY: self.reply_to,
            Action.STOP: lambda a: self.call(Method.AGENTS_STOP, {"agent": a}),
            Action.RESUME: self.resume,
            Action.FORGET: self.forget,
            Action.TIMELINE: self.show_timeline,
        }
        try:
            action = Action(name)
        except ValueError:
            log.warning("unknown action %r", name)
            return
        handler = handlers[action]
        if action in OPENS_A_WINDOW:
            self.before_window()
        handler(agent_id)

    def resume(self, agent_id: str) -> None:
        """Resume the agent; one that runs in the person's own terminal is taken over, one that
        a usage limit stopped is continued now (docs/limits.md)."""
        agent = self.registry().agents.get(agent_id)
        if agent is not None and limits.waits(agent):
            # Stopped by a usage limit: continue it now with volee's labelled prompt.
            self.call(Method.AGENTS_CONTINUE, {"agent": agent_id})
            return
        if agent is None or not takes_over(agent):
            self.call(Method.AGENTS_RESUME, {"agent": agent_id})
            return
        if agent_id in self._taking_over:
            return
        if not self.confirm(
            f"Move {agent.name} into volee?",
            f"{agent.name} runs in your own terminal. Quit it there (/exit in Claude Code): "
            "as soon as it has left, volee carries its session on in a host of its own, which "
            "you can answer from the list, the tray and notifications.",
        ):
            return
        self._taking_over.add(agent_id)
        self.tasks.spawn(self.take_over(agent_id), f"take over {agent_id}")

    async def take_over(self, agent_id: str) -> None:
        """Wait for the session to leave its terminal, then resume it in a host.

        While it waits, the interface asks discovery for a fresh listing every two seconds
        (seed 002: ``discovery.refresh`` "every two seconds while it waits for a session to
        leave its terminal"), so the end is seen at once; it gives up after ten minutes."""
        loop = asyncio.get_running_loop()
        deadline = loop.time() + self.take_over_for
        agent = self.registry().agents.get(agent_id)
        try:
            while loop.time() < deadline:
                await self.link().call(Method.DISCOVERY_REFRESH, {})
                agent = self.registry().agents.get(agent_id)
                if agent is None:
                    return  # forgotten meanwhile
                if not (agent.state.live and agent.location is Location.TERMINAL):
                    log.info("agent %s left its terminal: resuming it in a host", agent_id)
                    self.call(Method.AGENTS_RESUME, {"agent": agent_id})
                    return
                await asyncio.sleep(self.take_over_every)
            name = agent.name if agent is not None else agent_id
            self.show_error(
                f"{name} is still in its terminal",
                "volee waited ten minutes for it to leave its terminal and stopped waiting. "
                "Quit it there, then choose Move into volee again.",
            )
        finally:
            self._taking_over.discard(agent_id)

    def open_agent(self, agent_id: str) -> None:
        """Attach in a terminal when the agent runs in a volee host, else show its output."""
        agent = self.registry().agents.get(agent_id)
        self.withdraw(agent_id)  # the person is looking at it now
        if agent is not None and agent.state is AgentState.DONE:
            self.call(Method.AGENTS_SEEN, {"agent": agent_id})
        if agent is not None and agent.live and agent.location is Location.HOST:
            argv = self._terminal(agent_id)
            if argv is not None:
                log.info("opened agent %s in a terminal: %s", agent_id, " ".join(argv))
                self.opened(agent_id, Action.TERMINAL)
                return
        if agent is not None and agent.live and agent.location is Location.BACKGROUND:
            place = where(agent.pid, agent.worktree or agent.cwd)
            self.show_error(
                f"{agent.name} runs in the background",
                f"It has no terminal to bring forward: it runs as {place}. Answer it from the "
                "list or its notification.",
            )
            self.opened(agent_id, "where")
            return
        if agent is not None and agent.live and agent.location is Location.TERMINAL:
            # Started in the person's own terminal: bring that one forward, or say where.
            found = self.focus(agent.pid)
            if found.how is not None:
                log.info("brought agent %s forward: %s", agent_id, found.text)
                self.opened(agent_id, "forward")
                return
            place = where(agent.pid, agent.worktree or agent.cwd)
            log.info("agent %s runs in its own terminal (%s): %s", agent_id, found.text, place)
            self.show_error(
                f"{agent.name} runs in your own terminal",
                f"volee could not bring it forward ({found.text}). It runs as {place}. "
                "Answer it from the list or its notification, or switch to that terminal.",
            )
            self.opened(agent_id, "where")
            return
        self.show_output(agent_id)

    def open_terminal(self, agent_id: str) -> None:
        argv = self._terminal(agent_id)
        if argv is None:
            self.show_error(
                "No terminal emulator found",
                "volee looked for $TERMINAL, x-terminal-emulator, gnome-terminal, konsole and "
                "xterm. Set TERMINAL to your terminal's command; meanwhile here is the output.",
            )
            self.show_output(agent_id)
            return
        log.info("opened agent %s in a terminal: %s", agent_id, " ".join(argv))
        self.opened(agent_id, Action.TERMINAL)

    def _terminal(self, agent_id: str) -> list[str] | None:
        try:
            return self.terminal(agent_id)
        except OSError as exc:
            log.warning("could not start a terminal: %s", exc)
            return None

    def _window(self, agent_id: str) -> AgentWindow | None:
        window = self.windows.get(agent_id)
        if window is None:
            agent = self.registry().agents.get(agent_id)
            if agent is None:
                return None
            from .agent_window import AgentWindow

            window = AgentWindow(agent)
            window.setWindowIcon(self.icon())
            window.send.connect(self.send)
            window.refresh.connect(self.refresh_output)
            window.action.connect(lambda name, a: self.run(name, a))
            window.keys.connect(self.press)
            window.closed.connect(self._window_closed)
            window.answer.connect(
                lambda a, choice, text, rid: self.answer_agent(
                    a, choice, text or None, request_id=rid or None
                )
            )
            window.conversation.fetch = lambda start, a=agent_id: self._log(a, start)
            window.conversation.spawn = self.tasks.spawn
            window.changes.call = lambda method, params: self.link().call(method, params)
            window.changes.spawn = self.tasks.spawn
            self.looking.watch(window)
            self.windows[agent_id] = window
        return window

    async def _log(self, agent_id: str, start: int) -> dict[str, Any]:
        """A page of the agent's conversation from entry ``start`` (``agents.log``)."""
        page = await self.link().call(Method.AGENTS_LOG, {"agent": agent_id, "start": start})
        return page if isinstance(page, dict) else {}

    def _window_closed(self, agent_id: str) -> None:
        window = self.windows.pop(agent_id, None)
        if window is not None:
            window.deleteLater()

    def show_output(self, agent_id: str) -> None:
        agent = self.registry().agents.get(agent_id)
        # An agent waiting for an answer (the notification's Open lands here): typing answers.
        needs_you = agent is not None and agent.state is AgentState.NEEDS_INPUT
        self._open_window(agent_id, Action.OUTPUT, reply=needs_you)

    def review_agent(self, agent_id: str) -> None:
        """Open the agent's window on its Changes (a done notification's Review)."""
        self._open_window(agent_id, Action.OUTPUT, reply=False)
        window = self.windows.get(agent_id)
        if window is not None:
            window.show_changes()

    def reply_to(self, agent_id: str) -> None:
        self._open_window(agent_id, Action.REPLY, reply=True)

    def _open_window(self, agent_id: str, how: Action, *, reply: bool) -> None:
        """Bring the agent's window to the front (the cursor in its reply box if ``reply``)."""
        window = self._window(agent_id)
        if window is None:
            return
        self.withdraw(agent_id)
        window.show()
        window.raise_()
        window.activateWindow()
        if reply:
            window.focus_reply()
        self.refresh_output(agent_id)
        log.info(
            "opened agent %s: %s", agent_id, "reply box" if how is Action.REPLY else "output view"
        )
        self.opened(agent_id, how)

    def refresh_output(self, agent_id: str) -> None:
        """Ask for the agent's rendered screen (``agents.output``) and show it if it changed."""
        if agent_id not in self.windows or agent_id in self._fetching:
            return  # one request at a time per window: a slow daemon is not piled on
        self._fetching.add(agent_id)

        async def fetch() -> None:
            try:
                result = await self._screen(agent_id)
            except LinkError as exc:
                window = self.windows.get(agent_id)
                if window is not None:
                    window.show_status(f"No screen: {exc}")
                return
            finally:
                self._fetching.discard(agent_id)
                self.called(Method.AGENTS_OUTPUT)
            window = self.windows.get(agent_id)
            if window is None:
                return
            if isinstance(result, dict):
                lines = result.get("lines")
                text = "\n".join(lines) if isinstance(lines, list) else str(result.get("text", ""))
                version, cols = result.get("version"), result.get("cols")
                window.set_screen(
                    text,
                    version if isinstance(version, int) else None,
                    bool(result.get("live", True)),
                    cols if isinstance(cols, int) and cols > 0 else None,
                )
            else:
                window.set_screen(str(result))

        self.tasks.spawn(fetch(), f"show the screen of {agent_id}")

    async def _screen(self, agent_id: str) -> Any:
        link = self.link()
        params = {"agent": agent_id, "lines": self.screen_lines}
        if self._screen_method == Method.AGENTS_OUTPUT:
            try:
                return await link.call(Method.AGENTS_OUTPUT, params)
            except LinkError as exc:
                if "unknown" not in str(exc).lower():
                    raise
                self._screen_method = Method.AGENTS_SCREEN  # an older daemon: its raw output
        return await link.call(Method.AGENTS_SCREEN, params)

    def send(self, agent_id: str, text: str) -> None:
        async def deliver() -> None:
            window = self.windows.get(agent_id)
            try:
                result = await self.link().call(
                    Method.AGENTS_SEND, {"agent": agent_id, "text": text}
                )
            except LinkError as exc:
                if window is not None:
                    window.show_status(f"Not sent: {exc}")
                else:
                    self.show_error("The message was not sent", str(exc))
                return
            finally:
                self.called(Method.AGENTS_SEND)
            if window is not None:
                window.sent()
                if isinstance(result, dict) and result.get("resumed"):
                    window.show_status("Sent; the agent was resumed with it.")

        self.tasks.spawn(deliver(), f"send to {agent_id}")

    def press(self, agent_id: str, key: str) -> None:
        """Type a key that is not a line of text (Esc, Shift+Tab, a dialog's option)."""

        async def press() -> None:
            window = self.windows.get(agent_id)
            try:
                result = await self.link().call(Method.AGENTS_KEYS, {"agent": agent_id, "key": key})
            except LinkError as exc:
                if window is not None:
                    window.show_status(f"Not typed: {exc}")
                return
            finally:
                self.called(Method.AGENTS_KEYS)
            if window is not None:
                said = f"Typed {KEY_WORDS.get(key, key.replace(':', ' '))}"
                # The daemon checks the screen moved after it (an older one does not say).
                taken = not isinstance(result, dict) or result.get("taken", True)
                window.show_status(
                    f"{said}." if taken else f"{said}, but its screen did not change."
                )
            self.refresh_output(agent_id)

        self.tasks.spawn(press(), f"type {key} to {agent_id}")

    def forget(self, agent_id: str) -> None:
        agent = self.registry().agents.get(agent_id)
        name = agent.name if agent is not None else agent_id
        if not self.confirm(
            f"Forget {name}?",
            f"volee stops tracking {name}; its sessions are ignored from then on. "
            "Its files and branch stay as they are.",
        ):
            return
        self.call(Method.AGENTS_FORGET, {"agent": agent_id})

    def show_timeline(self, agent_id: str) -> None:
        async def fetch() -> None:
            try:
                entries = await self.link().call(Method.AGENTS_TIMELINE, {"agent": agent_id})
            finally:
                self.called(Method.AGENTS_TIMELINE)
            name = self.registry().name_of(agent_id) or agent_id
            from .timeline import TimelineDialog

            dialog = TimelineDialog(name, list(entries or []))
            dialog.setWindowIcon(self.icon())
            self.keep(dialog)
            dialog.show()
            log.info("timeline of %s shown (%d events)", agent_id, len(entries or []))

        self.tasks.spawn(fetch(), f"show the timeline of {agent_id}")

    # --- answering an agent ------

    def answer_agent(
        self,
        agent_id: str,
        choice: str,
        text: str | None = None,
        request_id: str | None = None,
    ) -> bool:
        """Answer the agent's open request (allow, deny, option:N, reply with ``text``).

        Refused here, with the reason and nothing sent, when the agent is gone, asks
        nothing, was answered already, or asks something other than ``request_id``; the
        daemon checks again against the screen (docs/answers.md).
        """
        agent = self.registry().agents.get(agent_id)
        name = agent.name if agent is not None else agent_id
        request = agent.request if agent is not None else None
        problem = None
        if agent is None:
            problem = "volee no longer knows this agent."
        elif request is None or agent.state is not AgentState.NEEDS_INPUT:
            problem = f"{name} asks nothing now (it was answered, or it moved on)."
        elif request.answered:
            problem = f"{name}'s request was answered already ({request.answered})."
        elif request_id is not None and request.id != request_id:
            problem = f"{name} now asks something else: {request.summary}"
        if problem is not None or request is None:
            self.show_error("Not answered", problem or "nothing to answer")
            return False
        try:
            method, params = answer_call(agent_id, request.id, choice, text)
        except ValueError as exc:
            self.show_error("Not answered", str(exc))
            return False
        self.withdraw(agent_id)
        done = feedback.done_text(method, params, self.registry())

        async def send() -> None:
            window = self.windows.get(agent_id)
            started = self.monotonic()
            try:
                await self.link().call(method, params)
            except LinkError as exc:
                self.failed(f"{name} was not answered", str(exc))
                self.show_error(f"{name} was not answered", str(exc))
                if window is not None:
                    window.show_status(f"Not answered: {exc}")
                return
            finally:
                self.called(method)
            log.info("answered %s (%s): %s", agent_id, request.id, choice)
            self.said(done, started)
            if window is not None:
                window.answered()  # the reason typed for it goes with it
                window.show_status(f"Answered: {choice_label(choice, request.options)}.")

        self.tasks.spawn(send(), f"answer {name}")
        return True
