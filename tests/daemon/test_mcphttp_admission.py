"""Who and what the MCP endpoint over HTTP admits (daemon/serving/mcpadmission.py): the pure checks.

The endpoint with real processes is tests/daemon/test_mcphttp.py; these are its rules one
by one, with the exact words a refused caller reads.
"""

from __future__ import annotations

import pytest

from volee_desktop.daemon.serving.mcpadmission import Refusal, admit, claim_of, unidentified
from volee_desktop.ipc.caller import Caller
from volee_desktop.ipc.transport import PeerCredentials

PORT = 40123
# Crockford base32 has an X: an agent id may end in one.
AGENT = "ag_01HF7YAT01000000000000000X"
OTHER = "ag_01HF7YAT010000000000000002"
HOSTS = {"host": f"127.0.0.1:{PORT}"}
ME = Caller.of_agent(AGENT, 4321, "is the program (pid 4321) of agent a")


def test_a_peer_is_identified_only_as_a_process_of_the_daemons_user() -> None:
    assert unidentified(None, 1000) == "no such connection"
    assert unidentified(PeerCredentials(1001, 77, None), 1000) == "a process of uid 1001"
    assert unidentified(PeerCredentials(1000, None, None), 1000) == (
        "no process of yours holds the socket"
    )
    assert unidentified(PeerCredentials(1000, 77, None), 1000) is None


def test_another_users_process_is_refused_by_its_uid_even_with_no_pid() -> None:
    assert unidentified(PeerCredentials(0, None, None), 1000) == "a process of uid 0"


def test_an_agent_with_the_loopbacks_host_is_admitted_at_mcp_with_or_without_its_name() -> None:
    for path in ("/mcp", "/mcp/", f"/mcp/{AGENT}", f"/mcp/{AGENT}/", f"/mcp/{OTHER}"):
        assert admit(path, HOSTS, PORT, ME) is None, path


def test_localhost_is_the_loopback_too() -> None:
    assert admit("/mcp", {"host": f"localhost:{PORT}"}, PORT, ME) is None


def test_another_path_is_not_found_and_not_counted_as_a_refusal() -> None:
    for path in ("/", "/other", "/mcpx", "/mcpX", "/api/mcp/x", "//mcp"):
        refusal = admit(path, HOSTS, PORT, ME)
        assert refusal == Refusal(404, f"volee serves MCP at /mcp/<agent>, not {path}"), path
        assert not refusal.counted


def test_the_not_found_message_shows_at_most_80_characters_of_the_path() -> None:
    path = "/" + "p" * 99
    refusal = admit(path, HOSTS, PORT, ME)
    assert refusal is not None
    assert refusal.message == "volee serves MCP at /mcp/<agent>, not /" + "p" * 79


def test_a_request_from_a_web_page_is_refused_and_its_origin_recorded() -> None:
    headers = {**HOSTS, "origin": "https://evil.example"}
    refusal = admit("/mcp/x", headers, PORT, ME)
    assert refusal == Refusal(
        403,
        "volee's MCP endpoint takes no requests from web pages",
        "send an MCP request from a web page (Origin https://evil.example)",
    )
    assert refusal.counted


def test_an_empty_origin_is_an_origin_all_the_same() -> None:
    refusal = admit("/mcp", {**HOSTS, "origin": ""}, PORT, ME)
    assert refusal is not None
    assert (refusal.status, refusal.attempt) == (
        403,
        "send an MCP request from a web page (Origin )",
    )


def test_the_recorded_origin_is_cut_at_80_characters() -> None:
    origin = "https://" + "o" * 100
    refusal = admit("/mcp", {**HOSTS, "origin": origin}, PORT, ME)
    assert refusal is not None
    assert refusal.attempt == f"send an MCP request from a web page (Origin {origin[:80]})"


@pytest.mark.parametrize(
    "host",
    [
        f"evil.example:{PORT}",
        "127.0.0.1",
        f"127.0.0.1:{PORT + 1}",
        f"localhost:{PORT + 1}",
        f"LOCALHOST:{PORT}",
        f"127.0.0.1:{PORT} ",
        f"[::1]:{PORT}",
    ],
)
def test_a_host_that_is_not_this_endpoint_is_refused_and_recorded(host: str) -> None:
    refusal = admit("/mcp", {"host": host}, PORT, ME)
    assert refusal == Refusal(
        403,
        f"volee's MCP endpoint is 127.0.0.1:{PORT}, not {host!r}",
        f"send an MCP request for host {host!r}",
    )
    assert refusal.counted


def test_a_request_without_a_host_is_refused() -> None:
    refusal = admit("/mcp", {}, PORT, ME)
    assert refusal == Refusal(
        403,
        f"volee's MCP endpoint is 127.0.0.1:{PORT}, not ''",
        "send an MCP request for host ''",
    )


def test_the_host_in_the_words_is_cut_at_80_characters() -> None:
    host = "h" * 100
    refusal = admit("/mcp", {"host": host}, PORT, ME)
    assert refusal is not None
    assert refusal.message == f"volee's MCP endpoint is 127.0.0.1:{PORT}, not {'h' * 80!r}"
    assert refusal.attempt == f"send an MCP request for host {'h' * 80!r}"


def test_with_no_port_yet_no_host_is_this_endpoint() -> None:
    assert admit("/mcp", HOSTS, None, ME) is not None


def test_the_origin_is_refused_before_the_host() -> None:
    refusal = admit("/mcp", {"origin": "null", "host": "evil"}, PORT, ME)
    assert refusal is not None
    assert refusal.message == "volee's MCP endpoint takes no requests from web pages"


def test_a_wrong_path_is_not_found_before_any_other_check() -> None:
    refusal = admit("/x", {"origin": "null"}, PORT, Caller.person(1, "the person"))
    assert refusal is not None
    assert refusal.status == 404


@pytest.mark.parametrize(
    "caller",
    [
        Caller.person(555, "descends from no agent volee knows"),
        Caller.unknown(555, "its process (pid 555) is gone"),
        Caller.unknown(None, "no process of yours holds the socket"),
    ],
)
def test_the_person_and_an_unknown_peer_are_refused_with_what_was_seen(caller: Caller) -> None:
    refusal = admit("/mcp", HOSTS, PORT, caller)
    assert refusal == Refusal(
        403,
        "volee's MCP endpoint serves the agents volee runs; this connection is not one of "
        f"them ({caller.how}). Use `volee mcp` for an MCP client of yours.",
    )
    assert refusal.attempt is None  # no agent's timeline to keep it in: counted and logged
    assert refusal.counted


def test_the_person_is_refused_on_the_host_check_first_so_a_web_page_is_recorded_as_such() -> None:
    person = Caller.person(555, "descends from no agent volee knows")
    refusal = admit("/mcp", {"host": "evil:1"}, PORT, person)
    assert refusal is not None
    assert refusal.attempt == "send an MCP request for host 'evil:1'"


def test_the_claim_is_the_agent_the_path_names() -> None:
    assert claim_of(f"/mcp/{AGENT}") == AGENT
    assert claim_of(f"/mcp/{AGENT}/") == AGENT
    assert claim_of(f"/mcp/{AGENT}//") == AGENT
    assert claim_of("/mcp/human") == "human"
    assert claim_of("/mcp/a/b") == "a/b"
    assert claim_of("/mcp") == ""
    assert claim_of("/mcp/") == ""
    assert claim_of("/mcpx") == ""
    assert claim_of("/other/agent") == ""
