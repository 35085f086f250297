"""A hostile notification server, as an agent would run one: it takes
``org.freedesktop.Notifications`` (once the person's server is gone), writes every Notify it
receives to ``--log`` (one JSON line each); with ``--press LABEL`` it presses that button of
each notification it gets (``ActionInvoked`` with the button's key), and with ``--act NID
KEY`` it sends ``ActionInvoked(NID, KEY)`` as soon as it holds the name. ``--caps a,b`` sets
what ``GetCapabilities`` answers (a plain server: ``--caps body``); each logged Notify holds
its ``replaces`` id.

``python impostor_notifications.py --log FILE [--press LABEL]
[--act NID[-NID] KEY [--act-after FILE]]``; prints ``holding`` once it owns the name,
``acted`` after the signal.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os

from dbus_fast import Message, MessageType, NameFlag, RequestNameReply
from dbus_fast.aio import MessageBus

NAME = "org.freedesktop.Notifications"
PATH = "/org/freedesktop/Notifications"


#: What it says it is when asked (desktop-notifier builds its proxy from this).
INTROSPECTION = f"""<node><interface name="{NAME}">
<method name="GetCapabilities"><arg type="as" direction="out"/></method>
<method name="GetServerInformation"><arg type="s" direction="out"/><arg type="s" direction="out"/>
<arg type="s" direction="out"/><arg type="s" direction="out"/></method>
<method name="Notify"><arg type="s" direction="in"/><arg type="u" direction="in"/>
<arg type="s" direction="in"/><arg type="s" direction="in"/><arg type="s" direction="in"/>
<arg type="as" direction="in"/><arg type="a{{sv}}" direction="in"/><arg type="i" direction="in"/>
<arg type="u" direction="out"/></method>
<method name="CloseNotification"><arg type="u" direction="in"/></method>
<signal name="ActionInvoked"><arg type="u"/><arg type="s"/></signal>
<signal name="NotificationClosed"><arg type="u"/><arg type="u"/></signal>
</interface></node>"""


def serve(log: str, press: str | None, bus: MessageBus, caps: list[str]) -> object:
    ids = [100]

    def handle(msg: Message) -> Message | bool:
        if msg.message_type is not MessageType.METHOD_CALL:
            return False
        if msg.member == "Introspect" and msg.path == PATH:
            return Message.new_method_return(msg, "s", [INTROSPECTION])
        if msg.interface != NAME:
            return False
        if msg.member == "GetCapabilities":
            return Message.new_method_return(msg, "as", [caps])
        if msg.member == "GetServerInformation":
            return Message.new_method_return(msg, "ssss", ["impostor", "agent", "1", "1.2"])
        if msg.member == "Notify":
            ids[0] += 1
            _app, replaces, _icon, summary, body, actions, _hints, _timeout = msg.body
            with open(log, "a") as fh:
                line = {"summary": summary, "body": body, "actions": actions}
                line["replaces"] = replaces
                fh.write(json.dumps(line) + "\n")
            keys = dict(zip(actions[1::2], actions[::2], strict=False))
            if press is not None and press in keys:
                # Press the button as the person would: its key is in the Notify it got.
                body = [ids[0], keys[press]]
                signal = Message.new_signal(PATH, NAME, "ActionInvoked", "us", body)
                asyncio.get_running_loop().call_later(0.2, bus.send, signal)
            return Message.new_method_return(msg, "u", [ids[0]])
        if msg.member == "CloseNotification":
            return Message.new_method_return(msg)
        return False

    return handle


async def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--log", required=True)
    parser.add_argument("--act", nargs=2)
    parser.add_argument("--act-after", help="act only once this file exists")
    parser.add_argument("--press", help="press the button of this label on each Notify")
    parser.add_argument("--caps", default="actions,body,body-markup")
    args = parser.parse_args()
    bus = await MessageBus().connect()
    bus.add_message_handler(serve(args.log, args.press, bus, args.caps.split(",")))  # type: ignore[arg-type]
    reply = await bus.request_name(NAME, NameFlag.REPLACE_EXISTING | NameFlag.DO_NOT_QUEUE)
    if reply is not RequestNameReply.PRIMARY_OWNER:
        raise SystemExit(f"could not take {NAME}: {reply}")
    print("holding", flush=True)
    with open(args.log + ".holding", "w"):
        pass  # for a test that cannot read its output (run as an agent, in a PTY)
    if args.act:
        while args.act_after and not os.path.exists(args.act_after):
            await asyncio.sleep(0.02)  # the test marks this process as an agent's first
        # NID or FIRST-LAST: the ids are small numbers counted up by the server.
        first, _, last = args.act[0].partition("-")
        for nid in range(int(first), int(last or first) + 1):
            signal = Message.new_signal(PATH, NAME, "ActionInvoked", "us", [nid, args.act[1]])
            await bus.send(signal)
        print("acted", flush=True)
    await asyncio.Event().wait()


if __name__ == "__main__":
    asyncio.run(main())
