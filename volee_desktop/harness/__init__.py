"""Harness profiles: argv builders, hook payload parsers and small runners per harness."""
