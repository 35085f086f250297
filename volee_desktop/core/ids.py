"""ULID identifiers with a kind prefix (``ag_``, ``ms_``, ``th_``, ``msg_``).

The core never reads the clock or draws random numbers: callers pass the
time (milliseconds) and the 10 random bytes in.  ULIDs sort by creation time.
"""

from __future__ import annotations

from .errors import Error

_ALPHABET = "0123456789ABCDEFGHJKMNPQRSTVWXYZ"  # Crockford base32
_VALUES = {c: i for i, c in enumerate(_ALPHABET)}

AGENT = "ag_"
MISSION = "ms_"
THREAD = "th_"
MESSAGE = "msg_"
PREFIXES = (AGENT, MISSION, THREAD, MESSAGE)


class IdError(Error, ValueError):
    """An identifier that is not a well-formed prefixed ULID."""


def ulid(time_ms: int, randomness: bytes) -> str:
    """The 26-character ULID for ``time_ms`` and 10 random bytes."""
    if not 0 <= time_ms < 1 << 48:
        raise IdError(f"ULID time {time_ms} is outside 0..2^48-1")
    if len(randomness) != 10:
        raise IdError(f"ULID randomness must be 10 bytes, got {len(randomness)}")
    value = (time_ms << 80) | int.from_bytes(randomness, "big")
    chars = []
    for _ in range(26):
        chars.append(_ALPHABET[value & 31])
        value >>= 5
    return "".join(reversed(chars))


def new_id(prefix: str, time_ms: int, randomness: bytes) -> str:
    """A prefixed id such as ``ag_01J...``."""
    if prefix not in PREFIXES:
        raise IdError(f"unknown id prefix {prefix!r}; expected one of {', '.join(PREFIXES)}")
    return prefix + ulid(time_ms, randomness)


def is_id(value: str, prefix: str) -> bool:
    """Whether ``value`` is a well-formed id of the given kind."""
    if not value.startswith(prefix):
        return False
    body = value[len(prefix) :]
    return len(body) == 26 and body[0] in "01234567" and all(c in _VALUES for c in body)


def time_of(value: str) -> int:
    """The creation time (ms) encoded in a prefixed id."""
    if not any(is_id(value, prefix) for prefix in PREFIXES):
        raise IdError(
            f"{value!r} is not a prefixed ULID: expected one of {', '.join(PREFIXES)} "
            "followed by 26 Crockford base32 characters"
        )
    body = value.split("_", 1)[1]
    result = 0
    for c in body[:10]:
        result = result * 32 + _VALUES[c]
    return result
