"""Packaging: the PyInstaller spec, its helpers, the build command and the Linux desktop files."""
