"""The volee daemon: validate -> append -> apply -> notify, and the runners around it.

The kernel sits here, at the package's root: the composition root (``main``), the service
(validate, append, apply, notify), the context every runner is given, snapshots, the clock,
errors, ids, parameter checks, views, direct threads, spawning, git and the forge, the log
file.  Around it, one room per capability, each a package importing only the kernel and the
rooms below it (``tests/test_layers.py`` keeps it so): ``agents`` (below the rest),
``discovery``, ``missions``, ``machines``, ``serving``.
"""
