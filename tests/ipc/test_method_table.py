"""The method table: a method added with a decoder gets its parameters decoded, once."""

from __future__ import annotations

from typing import Any, cast

import pytest

from volee_desktop.ipc.methods import Method
from volee_desktop.ipc.protocol import ErrorCode, IpcError, encode_request
from volee_desktop.ipc.server import Connection, MethodTable

CONN = cast(Connection, object())


@pytest.mark.parametrize("method", list(Method))
def test_a_request_named_by_its_method_is_the_same_bytes(method: Method) -> None:
    params = {"agent": "a1", "all": True}
    assert encode_request(7, method, params) == encode_request(7, str(method.value), params)


async def test_a_decoded_method_receives_what_its_decoder_made() -> None:
    table = MethodTable()
    decoded: list[dict[str, Any]] = []
    seen: list[tuple[str, int]] = []

    def decode(params: dict[str, Any]) -> tuple[str, int]:
        decoded.append(params)
        return (params["name"], len(params))

    async def handler(_conn: Connection, value: tuple[str, int]) -> str:
        seen.append(value)
        return value[0]

    table.add("named", handler, decode)
    assert await table(CONN, "named", {"name": "x", "n": 1}) == "x"
    assert seen == [("x", 2)]
    assert decoded == [{"name": "x", "n": 1}]  # once


async def test_a_decoder_that_refuses_reaches_no_handler() -> None:
    table = MethodTable()
    ran: list[object] = []

    def decode(params: dict[str, Any]) -> int:
        raise IpcError(ErrorCode.BAD_REQUEST, "parameter 'n' must be a whole number, not 'x'")

    async def handler(_conn: Connection, value: int) -> None:
        ran.append(value)

    table.add("counted", handler, decode)
    with pytest.raises(IpcError) as caught:
        await table(CONN, "counted", {"n": "x"})
    assert caught.value.code == ErrorCode.BAD_REQUEST
    assert ran == []
    assert table.handler("counted") is handler


async def test_a_method_without_a_decoder_gets_the_parameters_as_sent() -> None:
    table = MethodTable()

    async def echo(_conn: Connection, params: dict[str, Any]) -> dict[str, Any]:
        return params

    table.add("echo", echo)
    assert await table(CONN, "echo", {"a": [1]}) == {"a": [1]}
