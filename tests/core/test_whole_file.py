"""core.whole_file: a file is replaced whole or left as it was, and no temporary file stays behind."""

from __future__ import annotations

import os
import stat

import pytest

from core.whole_file import replacing, write_text_whole


def test_a_written_file_replaces_the_old_one_with_the_usual_permissions(tmp_path):
    target = tmp_path / "page.html"
    target.write_text("old", encoding="utf-8")
    write_text_whole(target, "new ✓")
    assert target.read_text(encoding="utf-8") == "new ✓"
    mask = os.umask(0)
    os.umask(mask)
    assert stat.S_IMODE(target.stat().st_mode) == 0o666 & ~mask
    assert sorted(p.name for p in tmp_path.iterdir()) == ["page.html"]


def test_a_writer_that_fails_leaves_the_old_file_and_no_temporary(tmp_path):
    target = tmp_path / "lens.safetensors"
    target.write_bytes(b"what the user had")
    with pytest.raises(RuntimeError), replacing(target) as temporary:
        temporary.write_bytes(b"half a fi")
        raise RuntimeError("the writer failed")
    assert target.read_bytes() == b"what the user had"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["lens.safetensors"]


def test_a_folder_that_cannot_be_written_raises_oserror_and_changes_nothing(tmp_path):
    with pytest.raises(OSError):
        write_text_whole(tmp_path / "missing-folder" / "x.json", "{}")
    assert list(tmp_path.iterdir()) == []
