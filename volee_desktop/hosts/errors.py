"""The hosts package's exceptions.

::

    Error                 root: catch this to catch anything hosts raises
    ├── HostError         a host could not be started or reached, or refused a request
    ├── RecordError       a host record exists but cannot be read
    └── NativeBuildError  the native host could not be built (hosts/native)
"""

from __future__ import annotations


class Error(Exception):
    """Root of every error the hosts package raises."""


class HostError(Error):
    """A host could not be started or reached, or it refused a request."""


class RecordError(Error):
    """A host record exists but is not a readable record."""
