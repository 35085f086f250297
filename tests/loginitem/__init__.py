"""Tests of the login items (volee_desktop.loginitem)."""
