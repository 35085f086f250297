"""Hosts: one lean process per agent that keeps the program alive in a PTY."""
