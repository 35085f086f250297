"""Login items: systemd user unit, launchd agent, Windows Run key; installed only when asked."""
