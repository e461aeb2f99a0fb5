"""The desktop app: PySide6 + pyqtgraph views over the Qt-free lab in core/."""

APP_NAME = "Transformer Explorer"
APP_ORGANIZATION = "transformer-explorer"
APP_VERSION = "0.1.0"
APP_ID = "transformer-explorer"  # executable, .desktop file and icon name
