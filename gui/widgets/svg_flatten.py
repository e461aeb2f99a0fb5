"""QSvgGenerator output that renders the same outside Qt.

Qt writes a plot's shapes in data coordinates inside a group scaled to pixels, with
`vector-effect="non-scaling-stroke"` to keep their outlines one pixel wide. librsvg and ImageMagick ignore
that attribute and scale the outline with the group: a pie's 1.5 px white edge becomes 200 px wide and hides
the wedges, a leader line becomes a black band over the labels. Written here with the group's transform
applied to the coordinates themselves, each outline is as wide in every renderer as on screen.
"""

from __future__ import annotations

import re
import xml.etree.ElementTree as ElementTree
from pathlib import Path

SVG_NS = "http://www.w3.org/2000/svg"
XLINK_NS = "http://www.w3.org/1999/xlink"
MATRIX = re.compile(r"matrix\(([^)]*)\)")
PATH_TOKEN = re.compile(r"[A-Za-z]|[-+]?(?:\d+\.?\d*|\.\d+)(?:[eE][-+]?\d+)?")
PAIRED_COMMANDS = set("MLCSQT")  # absolute commands whose numbers are x,y pairs: what QSvgGenerator writes
SHAPES = {"path", "polyline", "polygon", "rect", "line"}


def _tag(element: ElementTree.Element) -> str:
    return element.tag.rsplit("}", 1)[-1]


def _number(value: float) -> str:
    return f"{value:.4f}".rstrip("0").rstrip(".") or "0"


def _mapped(matrix: tuple[float, ...], x: float, y: float) -> tuple[float, float]:
    a, b, c, d, e, f = matrix
    return a * x + c * y + e, b * x + d * y + f


def _map_path(data: str, matrix: tuple[float, ...]) -> str | None:
    """The path data with every point mapped; None for a command this cannot map (relative, arcs, H/V)."""
    out, numbers, command = [], [], ""

    def flush() -> bool:
        if len(numbers) % 2:
            return False
        for index in range(0, len(numbers), 2):
            x, y = _mapped(matrix, numbers[index], numbers[index + 1])
            out.append(f"{_number(x)},{_number(y)}")
        numbers.clear()
        return True

    for token in PATH_TOKEN.findall(data):
        if token.isalpha():
            if not flush():
                return None
            if token not in PAIRED_COMMANDS and token not in "Zz":
                return None
            command = token
            out.append(command)
        else:
            if command not in PAIRED_COMMANDS:
                return None
            numbers.append(float(token))
    return " ".join(out) if flush() else None


def _map_points(points: str, matrix: tuple[float, ...]) -> str | None:
    values = [float(v) for v in re.split(r"[\s,]+", points.strip()) if v]
    if len(values) % 2:
        return None
    return " ".join("{},{}".format(*map(_number, _mapped(matrix, values[i], values[i + 1]))) for i in range(0, len(values), 2))


def _bake(shape: ElementTree.Element, matrix: tuple[float, ...]) -> bool:
    """Apply matrix to the shape's coordinates in place; False (shape unchanged) when it cannot."""
    kind = _tag(shape)
    if kind == "rect":  # a rect under a rotation or flip is no longer a rect: written as a path
        x, y = float(shape.get("x", 0)), float(shape.get("y", 0))
        w, h = float(shape.get("width", 0)), float(shape.get("height", 0))
        corners = [_mapped(matrix, px, py) for px, py in ((x, y), (x + w, y), (x + w, y + h), (x, y + h))]
        for name in ("x", "y", "width", "height"):
            shape.attrib.pop(name, None)
        shape.tag = f"{{{SVG_NS}}}path"
        shape.set("d", "M " + " L ".join(f"{_number(px)},{_number(py)}" for px, py in corners) + " Z")
        return True
    if kind == "line":
        x1, y1 = _mapped(matrix, float(shape.get("x1", 0)), float(shape.get("y1", 0)))
        x2, y2 = _mapped(matrix, float(shape.get("x2", 0)), float(shape.get("y2", 0)))
        shape.set("x1", _number(x1)), shape.set("y1", _number(y1)), shape.set("x2", _number(x2)), shape.set("y2", _number(y2))
        return True
    key = "d" if kind == "path" else "points"
    mapped = (_map_path if kind == "path" else _map_points)(shape.get(key, ""), matrix)
    if mapped is None:
        return False
    shape.set(key, mapped)
    return True


def flatten_svg(text: str) -> str:
    """Groups of shapes drawn with non-scaling outlines get their transform applied to their coordinates."""
    ElementTree.register_namespace("", SVG_NS)
    ElementTree.register_namespace("xlink", XLINK_NS)
    root = ElementTree.fromstring(text)
    for group in root.iter(f"{{{SVG_NS}}}g"):
        found = MATRIX.fullmatch(group.get("transform", "").strip())
        children = list(group)
        if not found or not children or any(_tag(child) not in SHAPES for child in children):
            continue
        if not any(child.get("vector-effect") == "non-scaling-stroke" for child in children):
            continue
        matrix = tuple(float(v) for v in re.split(r"[\s,]+", found.group(1).strip()))
        if len(matrix) != 6:
            continue
        originals = [dict(child.attrib) for child in children]
        tags = [child.tag for child in children]
        if all(_bake(child, matrix) for child in children):
            del group.attrib["transform"]
            for child in children:
                child.attrib.pop("vector-effect", None)
        else:  # put every shape back: the group keeps its transform
            for child, attributes, tag in zip(children, originals, tags):
                child.attrib.clear()
                child.attrib.update(attributes)
                child.tag = tag
    # A renderer without SVG Tiny 1.2 support reads this as plain SVG 1.1, which it is once flattened.
    root.set("version", "1.1")
    root.attrib.pop("baseProfile", None)
    return '<?xml version="1.0" encoding="UTF-8" standalone="no"?>\n' + ElementTree.tostring(root, encoding="unicode")


def flatten_svg_file(path: str | Path) -> None:
    path = Path(path)
    path.write_text(flatten_svg(path.read_text(encoding="utf-8")), encoding="utf-8")


__all__ = ["flatten_svg", "flatten_svg_file"]
