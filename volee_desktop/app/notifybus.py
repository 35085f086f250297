"""Notifications on Linux over D-Bus, with every peer on the bus identified before volee acts.

``org.freedesktop.Notifications`` is a name any process of the person's user may own, and
its signals (``ActionInvoked``, ``NotificationReplied``) are what make volee answer a
request as the person.  So (docs/trust-model.md, "The desktop"):

- before a notification is sent, the name's owner (its unique name) is identified: the
  bus says its pid (``GetConnectionUnixProcessID``) and the daemon whose process that is
  (``vouch``: the same identification as its socket).  An owner of an agent's tree is
  refused: nothing is sent to it, the refusal is in that agent's timeline, and the person
  is told (``on_refused``).  The notification goes to that unique name, never to the
  well-known one, so an owner that changes in between receives nothing;
- an action is taken only from the connection the notification was sent to, and only when
  its sender's pid is the person's; an agent's is refused and recorded the same way;
- what is sent follows the server's ``GetCapabilities`` (read for each owner of the name,
  logged once): the body is escaped where the server reads markup (``body-markup``), so
  what it shows is the text volee sent, character for character, and never a link; a
  server without ``actions`` gets a body that says where to answer; a notification about
  the same agent replaces the one before (``replaces_id``) instead of stacking.

A peer whose pid the bus does not say, or that the daemon cannot identify, is not the
person (fail closed).
"""

from __future__ import annotations

import asyncio
import html
import logging
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from .notify_policy import Notice
from .tasks import Tasks

if TYPE_CHECKING:  # dbus-fast loads with the first notification, not at start (issue 27)
    from dbus_fast import Message
    from dbus_fast.aio import MessageBus

log = logging.getLogger(__name__)

NAME = "org.freedesktop.Notifications"
PATH = "/org/freedesktop/Notifications"
BUS = "org.freedesktop.DBus"
BUS_PATH = "/org/freedesktop/DBus"
#: The action key of a click on the notification's body.
DEFAULT_KEY = "default"
#: KDE's inline reply (``NotificationReplied``); ``x-kde-reply-submit-button-text``.
REPLY_KEY = "inline-reply"
MAX_BUTTONS = 3  # GNOME shows three; more are cut
#: NotificationClosed's reason when the person dismissed it.
DISMISSED = 2

Activate = Callable[..., None]  # (choice: str = "open", text: str | None = None)


@dataclass(frozen=True)
class Peer:
    """A D-Bus peer as the daemon identified its pid: the person or not, in words."""

    person: bool
    pid: int | None
    who: str  # "the person", "agent intruder (descends from …)"


#: Asks the daemon who ``pid`` is; an agent's attempt (in words) is recorded there.
Vouch = Callable[[int, str], Awaitable[Peer]]


@dataclass
class _Shown:
    notice: Notice
    activate: Activate
    server: str  # the unique name it was sent to: only its actions count
    done: bool = False  # acted on: an answer never goes in twice


#: Added to the body of a request's notification where the server shows no buttons.
NO_BUTTONS = "Answer it in volee's agent list (its tray icon): this notification shows no buttons."


def body_text(body: str, markup: bool) -> str:
    """The body as the server must get it: escaped when it reads markup (``<``, ``>``,
    ``&``: no tag, no ``<a href>`` link), as is when it shows plain text."""
    return html.escape(body, quote=False) if markup else body


#: A capability volee adds for a server that takes actions but draws no buttons.
HIDDEN_BUTTONS = "x-volee-no-buttons-drawn"
#: Servers that take actions (``makoctl invoke``, a key binding) but draw no buttons: their
#: cards say how to answer too (seen in issue 28's trial on sway: mako's card said nothing).
NO_BUTTONS_DRAWN = {"mako": "or with mako's menu (`makoctl menu`)"}


def server_caps(caps: frozenset[str], server_name: str) -> frozenset[str]:
    """``caps`` as the server reported them, with ``HIDDEN_BUTTONS`` for one that draws none."""
    return caps | {HIDDEN_BUTTONS} if server_name in NO_BUTTONS_DRAWN else caps


def card_body(notice: Notice, caps: frozenset[str], server_name: str = "") -> str:
    """The body for a server with ``caps``: how to answer where it has no buttons, escaped
    where it reads markup."""
    body = notice.body
    if notice.choices or notice.reply:
        if "actions" not in caps:
            body = f"{body}\n{NO_BUTTONS}"
        elif HIDDEN_BUTTONS in caps:
            how = NO_BUTTONS_DRAWN.get(server_name)
            where = f"volee's agent list (its tray icon){' ' + how if how else ''}"
            body = f"{body}\nAnswer it in {where}."
    return body_text(body, "body-markup" in caps)


class BusSink:
    """A ``WithdrawingSink`` on the session bus (dbus-fast on the running asyncio loop)."""

    def __init__(
        self,
        vouch: Vouch,
        on_refused: Callable[[str | None], None],
        app_name: str = "volee",
        icon: Path | None = None,
        address: str | None = None,
    ) -> None:
        self.vouch = vouch
        self.on_refused = on_refused
        self.app_name = app_name
        self.icon = icon.as_uri() if icon is not None else ""
        self.address = address
        self.bus: MessageBus | None = None
        self._shown: dict[int, _Shown] = {}  # by the server's id
        self._ids: dict[Notice, tuple[int, str]] = {}
        self._latest: dict[str, Notice] = {}  # by subject: the one a new one replaces
        self._owners: dict[str, Peer] = {}  # unique name -> who (unique names never recur)
        self._caps: dict[str, frozenset[str]] = {}
        self._names: dict[str, str] = {}  # each server's name (GetServerInformation)
        #: Why notifications are not sent now (an agent owns the name), or None.
        self.refusing: str | None = None
        self._tasks = Tasks()
        self._connecting: asyncio.Lock | None = None
        self._no_bus = False

    @property
    def shown(self) -> tuple[int, ...]:
        """The server's ids of the notifications shown and not closed yet."""
        return tuple(self._shown)

    # --- the bus ---------------------------------------------------------------------------

    async def _bus(self) -> MessageBus:
        if self._connecting is None:
            self._connecting = asyncio.Lock()
        async with self._connecting:
            if self.bus is None or not self.bus.connected:
                from dbus_fast.aio import MessageBus

                bus = await MessageBus(bus_address=self.address).connect()
                bus.add_message_handler(self._message)
                # Every signal of the interface, whoever sends it: a forged one is identified
                # (and an agent's recorded) before it is ignored.  A new owner of the name
                # is identified at the next notification (unique names never recur).
                rule = f"type='signal',interface='{NAME}',path='{PATH}'"
                await self._call(bus, BUS, BUS_PATH, BUS, "AddMatch", "s", [rule])
                self.bus = bus
            return self.bus

    @staticmethod
    async def _call(
        bus: MessageBus,
        destination: str,
        path: str,
        interface: str,
        member: str,
        signature: str = "",
        body: list[Any] | None = None,
    ) -> list[Any]:
        from dbus_fast import Message, MessageType

        reply = await bus.call(
            Message(
                destination=destination,
                path=path,
                interface=interface,
                member=member,
                signature=signature,
                body=body or [],
            )
        )
        if reply is None or reply.message_type is MessageType.ERROR:
            error = reply.error_name if reply is not None else "no reply"
            detail = reply.body[0] if reply is not None and reply.body else ""
            raise OSError(f"{destination} {member}: {error} {detail}".strip())
        return list(reply.body)

    async def _pid(self, bus: MessageBus, unique: str) -> int | None:
        try:
            [pid] = await self._call(
                bus, BUS, BUS_PATH, BUS, "GetConnectionUnixProcessID", "s", [unique]
            )
        except (OSError, ValueError) as exc:
            log.warning("the bus does not say which process %s is: %s", unique, exc)
            return None
        return int(pid)

    async def peer(self, bus: MessageBus, unique: str, attempt: str) -> Peer:
        """Who ``unique`` is (its pid through the daemon's identification); not the person
        when the bus does not say its pid."""
        pid = await self._pid(bus, unique)
        if pid is None:
            return Peer(False, None, f"a process the bus does not name ({unique})")
        return await self.vouch(pid, attempt)

    async def _server(self, bus: MessageBus) -> str | None:
        """The unique name of the notification server, once known to be the person's; None
        when there is none or it is refused."""
        try:
            [owner] = await self._call(bus, BUS, BUS_PATH, BUS, "GetNameOwner", "s", [NAME])
        except OSError:
            # No server runs: let the bus start the one the session has (activation).
            try:
                await self._call(bus, BUS, BUS_PATH, BUS, "StartServiceByName", "su", [NAME, 0])
                [owner] = await self._call(bus, BUS, BUS_PATH, BUS, "GetNameOwner", "s", [NAME])
            except OSError as exc:
                log.warning("no notification server on the session bus: %s", exc)
                return None
        owner = str(owner)
        peer = self._owners.get(owner)
        if peer is None:
            attempt = f"serve the person's notifications (it took {NAME})"
            peer = self._owners[owner] = await self.peer(bus, owner, attempt)
            if not peer.person:
                self.refusing = (
                    f"volee stopped sending notifications: {NAME} is held by {peer.who}, not "
                    "by your notification server (restart it, or log out and in again)"
                )
                log.warning("%s", self.refusing)
                self.on_refused(self.refusing)
            elif self.refusing is not None:
                self.refusing = None
                self.on_refused(None)
        return owner if peer.person else None

    async def _capabilities(self, bus: MessageBus, server: str) -> frozenset[str]:
        caps = self._caps.get(server)
        if caps is None:
            try:
                [found] = await self._call(bus, server, PATH, NAME, "GetCapabilities")
                caps = frozenset(str(c) for c in found)
            except OSError as exc:
                log.warning("notification server capabilities unknown: %s", exc)
                caps = frozenset()
            try:
                about = await self._call(bus, server, PATH, NAME, "GetServerInformation")
                who = " ".join(str(v) for v in about[:3])
                self._names[server] = str(about[0])
            except (OSError, ValueError, IndexError):
                who = server
            log.info("notification server %s: %s", who, ", ".join(sorted(caps)) or "nothing")
            caps = server_caps(caps, self._names.get(server, ""))
            self._caps[server] = caps
        return caps

    # --- NotificationSink ------------------------------------------------------------------

    async def show(self, notice: Notice, activate: Activate) -> bool:
        try:
            bus = await self._bus()
        except Exception as exc:  # no session bus here: the next sink shows it
            if not self._no_bus:
                log.warning("no session bus for notifications (%s); using the tray", exc)
            self._no_bus = True
            return False
        self._no_bus = False
        server = await self._server(bus)
        if server is None:
            return False
        caps = await self._capabilities(bus, server)
        actions: list[str] = [DEFAULT_KEY, ""]
        if "actions" in caps:
            for choice, label in notice.choices[:MAX_BUTTONS]:
                actions += [choice, label]
            if len(notice.choices) < MAX_BUTTONS:
                actions += ["open", notice.action.value]
        from dbus_fast import Variant

        hints: dict[str, Variant] = {"urgency": Variant("y", 1)}
        if notice.reply and "inline-reply" in caps:
            actions += [REPLY_KEY, "Reply"]
            hints["x-kde-reply-submit-button-text"] = Variant("s", "Send")
        body = card_body(notice, caps, self._names.get(server, ""))
        # The card about the same agent (or mission) on this server is updated in place:
        # the one before is no longer volee's to withdraw or to act on.
        subject = notice.subject if notice.kind is not None else ""
        before = self._latest.get(subject) if subject else None
        previous = self._ids.get(notice) or (self._ids.get(before) if before else None)
        replaces = previous[0] if previous is not None and previous[1] == server else 0
        if previous is not None:
            self._shown.pop(previous[0], None)
            if before is not None and before != notice and replaces:
                self._ids.pop(before, None)
        [nid] = await self._call(
            bus,
            server,
            PATH,
            NAME,
            "Notify",
            "susssasa{sv}i",
            [self.app_name, replaces, self.icon, notice.title, body, actions, hints, -1],
        )
        nid = int(nid)
        log.debug("notification %d shown by %s (replacing %d)", nid, server, replaces)
        self._shown[nid] = _Shown(notice, activate, server)
        self._ids[notice] = (nid, server)
        if subject:
            self._latest[subject] = notice
        return True

    async def withdraw(self, notice: Notice) -> None:
        if self._latest.get(notice.subject) == notice:
            del self._latest[notice.subject]
        found = self._ids.pop(notice, None)
        if found is None:
            return
        nid, server = found
        self._shown.pop(nid, None)
        await self._close(nid, server)

    async def _close(self, nid: int, server: str) -> None:
        if self.bus is None:
            return
        try:
            await self._call(self.bus, server, PATH, NAME, "CloseNotification", "u", [nid])
        except OSError as exc:  # closed already: nothing to do
            log.debug("closing notification %s: %s", nid, exc)

    # --- what the server says --------------------------------------------------------------

    def _message(self, msg: Message) -> bool:
        """Every message of the bus connection (dbus-fast's handler: never claims one)."""
        from dbus_fast import MessageType

        if msg.message_type is not MessageType.SIGNAL:
            return False
        if msg.interface != NAME or msg.path != PATH or not msg.sender:
            return False
        if msg.member == "ActionInvoked" and len(msg.body) == 2:
            nid, key = int(msg.body[0]), str(msg.body[1])
            if key == REPLY_KEY:
                return False  # the text comes with NotificationReplied
            choice = "open" if key == DEFAULT_KEY else key
            # Taken now: xfce4-notifyd sends NotificationClosed right after, which is handled
            # before the action's task runs (Allow clicked there did nothing, until this).
            shown = self._shown.get(nid)
            act = self._act(msg.sender, nid, shown, choice, None)
            self._tasks.spawn(act, "a notification action")
        elif msg.member == "NotificationReplied" and len(msg.body) == 2:
            nid, text = int(msg.body[0]), str(msg.body[1])
            shown = self._shown.get(nid)
            act = self._act(msg.sender, nid, shown, "reply", text)
            self._tasks.spawn(act, "a notification reply")
        elif msg.member == "NotificationClosed" and len(msg.body) == 2:
            nid = int(msg.body[0])
            shown = self._shown.get(nid)
            log.debug("notification %d closed by %s (reason %s)", nid, msg.sender, msg.body[1])
            if shown is not None and shown.server == msg.sender:
                self._shown.pop(nid, None)
                self._ids.pop(shown.notice, None)
        return False

    async def _act(
        self, sender: str, nid: int, shown: _Shown | None, choice: str, text: str | None
    ) -> None:
        if shown is None:
            log.debug("%s on notification %d from %s: not one volee shows", choice, nid, sender)
            return
        notice = shown.notice
        what = choice
        subject = notice.name or notice.subject or "the list"
        attempt = f"act on volee's notification about {subject} ({what}) as the person"
        if self.bus is None:
            return
        peer = await self.peer(self.bus, sender, attempt)
        if not peer.person:
            message = f"A notification action ({what}) came from {peer.who}: refused"
            log.warning("%s", message)
            self.on_refused(message)
            return
        server = shown.server
        if sender != server:
            # Not from the server it was sent to: a process of the person's, but not the one
            # that showed it (dbus-fast's own proxies ignore these too).
            log.warning("notification action from %s, not its server %s: ignored", sender, server)
            return
        if shown.done:
            return  # answered meanwhile: an answer never goes in twice
        shown.done = True
        if self._shown.get(nid) is shown:
            del self._shown[nid]
        if self._ids.get(notice) == (nid, server):
            del self._ids[notice]
        # Some servers (dunst's context menu) leave the card up after an action: the person
        # answered it, so close it.
        self._tasks.spawn(self._close(nid, shown.server), "close an answered notification")
        shown.activate(choice, text)

    async def close(self) -> None:
        if self.bus is not None:
            self.bus.disconnect()
            self.bus = None


__all__ = ["NO_BUTTONS", "BusSink", "Peer", "Vouch", "body_text", "card_body"]
