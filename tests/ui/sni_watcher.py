"""A StatusNotifierWatcher with a host registered, as KDE's or GNOME's AppIndicator extension
has: its presence makes Qt show the tray icon as a StatusNotifierItem and export its menu on
the session bus (``com.canonical.dbusmenu`` at ``/MenuBar``).  Prints ``watching`` once it
owns the name, then ``item <service>`` for each item that registers."""

from __future__ import annotations

import asyncio

from dbus_fast import Message, MessageType, Variant
from dbus_fast.aio import MessageBus

NAME = "org.kde.StatusNotifierWatcher"
PATH = "/StatusNotifierWatcher"
PROPS = "org.freedesktop.DBus.Properties"
INTROSPECTION = f"""<node><interface name="{NAME}">
<method name="RegisterStatusNotifierItem"><arg type="s" direction="in"/></method>
<method name="RegisterStatusNotifierHost"><arg type="s" direction="in"/></method>
<property name="RegisteredStatusNotifierItems" type="as" access="read"/>
<property name="IsStatusNotifierHostRegistered" type="b" access="read"/>
<property name="ProtocolVersion" type="i" access="read"/>
<signal name="StatusNotifierItemRegistered"><arg type="s"/></signal>
<signal name="StatusNotifierItemUnregistered"><arg type="s"/></signal>
<signal name="StatusNotifierHostRegistered"/>
</interface></node>"""


async def main() -> None:
    bus = await MessageBus().connect()
    items: list[str] = []

    def props() -> dict[str, Variant]:
        return {
            "RegisteredStatusNotifierItems": Variant("as", items),
            "IsStatusNotifierHostRegistered": Variant("b", True),
            "ProtocolVersion": Variant("i", 0),
        }

    def handle(msg: Message) -> Message | bool:
        if msg.message_type is not MessageType.METHOD_CALL or msg.path != PATH:
            return False
        if msg.member == "Introspect":
            return Message.new_method_return(msg, "s", [INTROSPECTION])
        if msg.interface == PROPS and msg.member == "Get":
            return Message.new_method_return(msg, "v", [props()[msg.body[1]]])
        if msg.interface == PROPS and msg.member == "GetAll":
            return Message.new_method_return(msg, "a{sv}", [props()])
        if msg.interface == NAME and msg.member == "RegisterStatusNotifierItem":
            service = str(msg.body[0])
            items.append(service if service.startswith(":") or "." in service else msg.sender)
            print(f"item {msg.sender} {service}", flush=True)
            return Message.new_method_return(msg)
        if msg.interface == NAME and msg.member == "RegisterStatusNotifierHost":
            return Message.new_method_return(msg)
        return False

    bus.add_message_handler(handle)
    await bus.request_name(NAME)
    print("watching", flush=True)
    await asyncio.Event().wait()


if __name__ == "__main__":
    asyncio.run(main())
