"""Text and corpus files as a user writes them: lines end at a newline only, a byte-order mark is no character, a
symbolic link loop is named as a loop, and a model folder with an empty vocabulary says so."""

from __future__ import annotations

import json
import os
import shutil

import pytest

from core.text_files import decode_text, is_link_loop, text_lines

# Characters str.splitlines() ends a line at, which are ordinary characters of a corpus line.
NOT_LINE_ENDS = ["\r", "\x0b", "\x0c", "\x1c", "\x1d", "\x1e", "\x85", "\u2028", "\u2029"]


def test_lines_end_at_a_newline_alone_and_a_crlf_is_one_line_end():
    text = "".join(f"a{c}b\n" for c in NOT_LINE_ENDS if c != "\r") + "x\ry\r\nlast"
    expected = [f"a{c}b" for c in NOT_LINE_ENDS if c != "\r"] + ["x\ry", "last"]
    assert text_lines(text) == expected
    assert text_lines("one\n") == ["one"] and text_lines("one\n\n") == ["one", ""] and text_lines("") == []
    assert text_lines("a\r\nb\r\n") == ["a", "b"]


def test_pairs_keep_every_character_that_is_not_a_newline():
    from core.objectives.pairs import parse_pairs

    lines = [f"s{c}x\tt{c}y" for c in NOT_LINE_ENDS if c != "\r"]
    pairs = parse_pairs("\r\n".join(lines) + "\r\n")  # written on Windows
    assert [(p.source, p.target) for p in pairs] == [tuple(line.split("\t")) for line in lines]
    from core.objectives.pairs import PairsError

    with pytest.raises(PairsError, match="line 3 is not"):  # numbered by newlines
        parse_pairs("a\u2028b\tc\nd\te\nno tab here\n")


def test_a_byte_order_mark_is_dropped_not_read_as_a_character(tmp_path):
    from core.corpus import read_corpus

    text = "First Citizen:\nBefore we proceed any further, hear me speak.\n" * 30
    plain, marked = tmp_path / "plain.txt", tmp_path / "marked.txt"
    plain.write_bytes(text.encode("utf-8"))
    marked.write_bytes(b"\xef\xbb\xbf" + text.encode("utf-8"))
    assert read_corpus(marked).text == read_corpus(plain).text == text
    assert read_corpus(marked).vocab_size == len(set(text))
    assert decode_text(b"\xef\xbb\xbfab") == "ab" and decode_text("\ufeff".encode() * 2) == "\ufeff"  # one mark only


def test_a_json_document_or_a_merges_file_with_a_byte_order_mark_is_read(tmp_path):
    from core.json_files import read_json_document
    from core.tokenizers import load_pretrained_tokenizer

    document = tmp_path / "lesson.json"
    document.write_bytes(b"\xef\xbb\xbf" + json.dumps({"title": "x"}).encode())
    assert read_json_document(document, 10_000, "a lesson file") == {"title": "x"}
    (tmp_path / "vocab.json").write_text('{"a": 0, "b": 1, "ab": 2}', encoding="utf-8")
    (tmp_path / "merges.txt").write_bytes(b"\xef\xbb\xbf#version: 0.2\na b\n")
    tokenizer = load_pretrained_tokenizer(tmp_path)
    assert tokenizer is not None and tokenizer.vocab_size >= 3


@pytest.mark.skipif(not hasattr(os, "symlink"), reason="symbolic links")
def test_a_symbolic_link_loop_is_named_as_a_loop_not_as_missing(tmp_path, capsys):
    from core.checkpoints import CheckpointError, check_destination, resolve_checkpoint
    from core.cli import main
    from core.corpus import CorpusError, read_corpus

    loop = tmp_path / "loop"
    os.symlink(tmp_path / "other", loop)
    os.symlink(loop, tmp_path / "other")
    assert is_link_loop(loop) and not is_link_loop(tmp_path) and not is_link_loop(tmp_path / "absent")
    for attempt in (lambda: resolve_checkpoint(str(loop)), lambda: check_destination(loop)):
        with pytest.raises(CheckpointError, match="is a symbolic link loop"):
            attempt()
    with pytest.raises(CorpusError, match="symbolic links"):
        read_corpus(loop)
    for argv in (["logits", "--checkpoint", str(loop), "--text", "a", "--out", str(tmp_path / "x.npy")],
                 ["logits", "--checkpoint", "tiny-gpt", "--text", "a", "--out", str(loop / "x.npy")],
                 ["evaluate", "--checkpoint", "tiny-gpt", "--text-file", str(loop)]):
        assert main(argv) == 2
        err = capsys.readouterr().err
        assert len(err.strip().splitlines()) == 1 and "symbolic link" in err, err
        assert "does not exist" not in err and "neither" not in err, err


def test_a_marian_folder_with_an_empty_vocabulary_says_so(tmp_path):
    from core.checkpoints import CheckpointError, resolve_checkpoint
    from tests.encoder_folders import marian_folder

    base = marian_folder(tmp_path / "marian")
    for key in ("vocab_size", "decoder_vocab_size"):
        folder = tmp_path / key
        shutil.copytree(base, folder)
        config = json.loads((folder / "config.json").read_text(encoding="utf-8"))
        config[key] = 0
        (folder / "config.json").write_text(json.dumps(config), encoding="utf-8")
        with pytest.raises(CheckpointError, match=f"{key} is 0: the (target )?vocabulary is empty") as caught:
            resolve_checkpoint(str(folder))
        assert "separate source and target" not in str(caught.value)
