"""The Qt tray app (the only package that imports PySide6 and qasync)."""
