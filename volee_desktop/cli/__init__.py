"""The volee command."""
