"""The fault-injection suite (docs/faults.md): clock steps, hostile input, other users, disk
faults, lying host records, connection floods.  Each test fails without the fix it guards."""

from __future__ import annotations

from tests.hosts.conftest import Rig, host_kind, native_host, pytest_generate_tests, rig

__all__ = ["Rig", "host_kind", "native_host", "pytest_generate_tests", "rig"]
