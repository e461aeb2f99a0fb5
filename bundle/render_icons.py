"""Render the application icon's PNG sizes from its SVG, for icon themes and the window icon.

    python bundle/render_icons.py

Writes resources/icons/hicolor/<N>x<N>/apps/transformer-explorer.png for every size in
bundle.spec_support.PNG_ICON_SIZES (the freedesktop icon-theme layout, copied as is by the Linux
installer). Rerun after editing the SVG and commit the PNGs.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from bundle.spec_support import APP_ID, PNG_ICON_SIZES  # noqa: E402


def render(svg: Path, out_dir: Path, sizes=PNG_ICON_SIZES) -> list[Path]:
    from PySide6.QtCore import Qt
    from PySide6.QtGui import QGuiApplication, QImage, QPainter
    from PySide6.QtSvg import QSvgRenderer

    _app = QGuiApplication.instance() or QGuiApplication(["render_icons"])  # QPainter needs an application
    renderer = QSvgRenderer(str(svg))
    if not renderer.isValid():
        raise SystemExit(f"{svg} is not a valid SVG")
    written = []
    for size in sizes:
        image = QImage(size, size, QImage.Format.Format_ARGB32_Premultiplied)
        image.fill(Qt.GlobalColor.transparent)
        painter = QPainter(image)
        painter.setRenderHint(QPainter.RenderHint.Antialiasing)
        renderer.render(painter)
        painter.end()
        target = out_dir / f"{size}x{size}" / "apps" / f"{APP_ID}.png"
        target.parent.mkdir(parents=True, exist_ok=True)
        if not image.save(str(target), "PNG"):
            raise SystemExit(f"could not write {target}")
        written.append(target)
    return written


def main() -> int:
    os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")
    icons = ROOT / "resources" / "icons"
    for path in render(icons / f"{APP_ID}.svg", icons / "hicolor"):
        print(f"wrote {path.relative_to(ROOT)} ({path.stat().st_size:,} bytes)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
