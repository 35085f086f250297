"""The Qt tray app (the only package that imports PySide6 and qasync).

Entry point: ``main.run_app(argv, start_daemon=..., connect=...)`` (``volee app``).
The daemon is reached only through ``link.DaemonLink`` (``IpcDaemonLink`` for
real, ``tests/ui/fakes.py: FakeDaemonLink`` in tests).

Qt-free: ``link``, ``live`` (the local registry and what each event changed),
``summary`` (tray counts and tooltip), ``notify_policy`` (when to notify),
``texts``, ``terminal``, ``tasks``, ``embed`` (the real daemon in the loop).
Qt: ``controller`` (composition), ``actions`` (what a person does to an agent), ``tray``,
``tray_state`` (what the tray says of the registry), ``icons``, ``agent_model``,
``delegate``, ``panel`` (built on demand by ``list_later``), ``agent_window``, ``timeline``,
``approval``, ``settings``, ``notifier``.
"""
