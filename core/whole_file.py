"""Files written whole or not at all.

The new content goes to a temporary file in the target's folder, is flushed to the disk, gets the
permissions a newly created file would get, and is renamed over the target in one step. A failure at
any point (a full disk, an exception in the writer, a crash) leaves the old file as it was and no
temporary file behind.
"""

from __future__ import annotations

import os
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path


def _read_umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask


# Read once, at import: os.umask can only be read by setting it, which is not safe while other threads create files.
_UMASK = _read_umask()


@contextmanager
def replacing(path: str | Path) -> Iterator[Path]:
    """A temporary path beside `path` for a writer to fill (by name, as safetensors' save_file does); when the
    block ends without an exception it replaces `path`. Raises OSError (the folder cannot be written)."""
    path = Path(path)
    folder = path.parent if str(path.parent) else Path(".")
    handle, name = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".partial", dir=folder)
    os.close(handle)
    temporary = Path(name)
    try:
        yield temporary
        with open(temporary, "rb+") as stream:
            os.fsync(stream.fileno())
        # mkstemp makes owner-only files; a saved file gets the usual permissions.
        os.chmod(temporary, 0o666 & ~_UMASK)
        os.replace(temporary, path)
    finally:
        temporary.unlink(missing_ok=True)


def write_text_whole(path: str | Path, text: str, encoding: str = "utf-8") -> Path:
    """Write `text` to `path` whole or not at all; returns the path. Raises OSError."""
    with replacing(path) as temporary, open(temporary, "w", encoding=encoding, newline="\n") as stream:
        stream.write(text)
    return Path(path)


__all__ = ["replacing", "write_text_whole"]
