"""Tests of the tray app (pytest-qt; offscreen unless a test needs real X)."""
