"""Errors of the daemon package.

::

    Error                 root of the daemon package
    ├── Refused           an event or request was refused by the rules (reason for people)
    ├── Forbidden         an agent asked for what only the person may do (docs/trust-model.md)
    ├── NotFound          an agent, mission or message that does not exist
    ├── Ambiguous         a name or id prefix that matches more than one thing
    ├── AlreadyRunning    another daemon holds this VOLEE_HOME
    ├── GitError          a git command failed (git.py)
    ├── ForgeError        the forge could not be asked or refused (forge.py)
    ├── listers.Error     a listing failed, or discovery is unavailable (listers.py)
    └── Broken            the log could not be written: the daemon stops taking writes
        └── NotWritten    a write failed cleanly (disk full): nothing kept, a retry can work
"""

from __future__ import annotations

from ..pidlock import Held


class Error(Exception):
    """Root of the daemon package's errors."""


class Refused(Error):
    """The rules refuse this event or request; the message says why."""


class NotFound(Error):
    """Nothing of that name or id."""


class Ambiguous(Error):
    """A name or prefix that matches more than one thing."""


class AlreadyRunning(Error, Held):
    """Another daemon holds the lock of this VOLEE_HOME."""

    def explain(self, who: str, lock: str) -> str:
        return (
            f"a volee daemon is already running for this VOLEE_HOME ({who} holds {lock}); "
            "use `volee daemon status` or `volee daemon stop`"
        )


class Broken(Error):
    """The event log failed under the daemon; it takes no more writes."""


class NotWritten(Broken):
    """A write failed cleanly (disk full, read-only folder): nothing of it was kept.

    The daemon keeps going: once the writes in flight have failed too, a retry works again as
    soon as the cause is gone (docs/faults.md).
    """


class Forbidden(Error):
    """An agent asked for what only the person may do (``attempt``: what it tried, in words)."""

    def __init__(self, attempt: str, message: str) -> None:
        super().__init__(message)
        self.attempt = attempt
