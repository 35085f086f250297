"""volee desktop: supervise the coding agents you run on your own machine."""

__version__ = "0.1.0"
