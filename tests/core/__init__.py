"""Tests of the pure domain model (volee_desktop.core)."""
