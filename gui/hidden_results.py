"""A view on a hidden tab keeps no large result: it drops it and computes it again when it is shown.

At GPT-2 small's size and 1,024 tokens the Attention view's maps of every head are 604 MB, held while
the student works in another panel, where they raise every other job's peak. A hidden view's result is
dropped when its arrays and tensors together pass HIDDEN_RESULT_BYTES, and so is one that arrives after
its view was hidden; what it costs is one computation of the same inputs when the view is shown again (a
few seconds at that size, the view marked stale until then). Results of the bundled models' size stay,
so going back to a tab shows them at once.
"""

from __future__ import annotations

import dataclasses
from typing import Any

HIDDEN_RESULT_BYTES = 64 * 2**20
_MAX_DEPTH = 6  # results are dataclasses of arrays, tuples of them, or dicts: a few levels deep


def result_bytes(value: Any) -> int:
    """The bytes of the numpy arrays and torch tensors a result holds (each buffer counted once)."""
    seen: set[int] = set()

    def walk(item: Any, depth: int) -> int:
        if depth > _MAX_DEPTH or item is None or isinstance(item, (str, bytes, int, float, bool)):
            return 0
        nbytes = getattr(item, "nbytes", None)  # a numpy array
        if isinstance(nbytes, int) and hasattr(item, "base"):
            base = item
            while getattr(base, "base", None) is not None and hasattr(base.base, "nbytes"):
                base = base.base
            if id(base) in seen:
                return 0
            seen.add(id(base))
            return int(base.nbytes)
        storage = getattr(item, "untyped_storage", None)  # a torch tensor (torch is not imported here)
        if callable(storage) and hasattr(item, "is_meta") and not item.is_meta:
            buffer = storage()
            if buffer.data_ptr() in seen:
                return 0
            seen.add(buffer.data_ptr())
            return int(buffer.nbytes())
        if isinstance(item, dict):
            return sum(walk(child, depth + 1) for child in item.values())
        if isinstance(item, (list, tuple, set, frozenset)):
            return sum(walk(child, depth + 1) for child in item)
        if dataclasses.is_dataclass(item) and not isinstance(item, type):
            return sum(walk(getattr(item, field.name, None), depth + 1) for field in dataclasses.fields(item))
        return 0

    return walk(value, 0)


def release_if_large(view, event) -> bool:
    """On a view's hide event: drop its result when large; it is marked stale (dimmed, readouts cleared) and
    computes again when shown. A minimised window (a spontaneous hide) keeps its views' results."""
    if event.spontaneous() or view.result is None or result_bytes(view.result) < HIDDEN_RESULT_BYTES:
        return False
    view._mark_stale()
    view.on_release()
    view.shown_inputs = view.result = None
    view._pending_update = True
    return True


def drop_if_hidden(view, result) -> bool:
    """A large result that arrives when its view is no longer on screen is not kept: the view stays as it was
    and computes it again when shown."""
    if view.is_on_screen() or result_bytes(result) < HIDDEN_RESULT_BYTES:
        return False
    view._pending_update = True
    return True
