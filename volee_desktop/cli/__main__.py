"""``python -m volee_desktop.cli`` runs ``volee``."""

from volee_desktop.cli.entry import main

raise SystemExit(main())
