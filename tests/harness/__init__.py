"""Tests of the harness profiles (argv builders, payload parsers, version checks)."""
