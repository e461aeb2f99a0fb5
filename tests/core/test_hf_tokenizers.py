"""Hugging Face tokenizer folders: both GPT-2 layouts, special tokens, and how byte-level pieces read."""

from __future__ import annotations

import json

import pytest

from core.display import display_token
from core.tokenizers import (
    HuggingFaceTokenizer,
    TokenizerFileError,
    UnknownTokenError,
    byte_level_alphabet,
    load_pretrained_tokenizer,
    tokenizer_from_json,
)
from tests.hf_folders import SAMPLE_TEXT, gpt2_folder, llama_folder

transformers = pytest.importorskip("transformers")

MIXED_TEXT = SAMPLE_TEXT + " Café, naïve — 日本<|endoftext|>"


@pytest.fixture(scope="module")
def gpt2_dirs(tmp_path_factory):
    root = tmp_path_factory.mktemp("gpt2")
    return {layout: gpt2_folder(root / layout.replace("+", "_"), layout=layout) for layout in ("tokenizer.json", "vocab+merges")}


@pytest.fixture(scope="module")
def llama_dir(tmp_path_factory):
    return llama_folder(tmp_path_factory.mktemp("llama") / "llama")


def test_byte_level_alphabet_is_gpt2s():
    table = byte_level_alphabet()
    assert sorted(table) == list(range(256))
    assert len(set(table.values())) == 256
    assert (table[ord(" ")], table[ord("\n")], table[ord("A")]) == ("Ġ", "Ċ", "A")


@pytest.mark.parametrize("layout", ["tokenizer.json", "vocab+merges"])
def test_both_layouts_encode_as_transformers(gpt2_dirs, layout):
    folder = gpt2_dirs[layout]
    ours = load_pretrained_tokenizer(folder)
    reference = transformers.AutoTokenizer.from_pretrained(str(folder))
    assert ours.encode(MIXED_TEXT) == reference(MIXED_TEXT)["input_ids"]
    assert ours.vocab_size == len(reference)
    assert ours.decode(ours.encode(MIXED_TEXT)) == MIXED_TEXT


def test_byte_level_pieces_read_as_text(gpt2_dirs):
    tokenizer = load_pretrained_tokenizer(gpt2_dirs["tokenizer.json"])
    ids = tokenizer.encode(" to be\nor")
    pieces = [tokenizer.piece(i) for i in ids]
    texts = [tokenizer.token_text(i) for i in ids]
    assert "".join(pieces).startswith("Ġ")  # the vocabulary's own spelling of a space
    assert "".join(texts) == " to be\nor"
    shown = [display_token(t) for t in texts]
    assert "Ġ" not in "".join(shown) and "Ċ" not in "".join(shown)
    assert any(label.startswith("␣") for label in shown)
    assert "⏎" in "".join(shown)
    for token_id, text in zip(ids, texts):  # what a chip shows can be typed back
        assert tokenizer.id_of(text) == token_id
        assert tokenizer.id_of(tokenizer.piece(token_id)) == token_id


def test_a_character_split_across_tokens_shows_its_bytes(gpt2_dirs):
    tokenizer = load_pretrained_tokenizer(gpt2_dirs["tokenizer.json"])
    ids = tokenizer.encode("日")  # three UTF-8 bytes, none of them merged in a Shakespeare vocabulary
    assert len(ids) == 3
    assert [display_token(tokenizer.token_text(i)) for i in ids] == ["\\xe6", "\\x97", "\\xa5"]
    assert [tokenizer.id_of(tokenizer.token_text(i)) for i in ids] == ids
    assert tokenizer.decode(ids) == "日"


def test_special_tokens_stand_for_themselves(gpt2_dirs):
    tokenizer = load_pretrained_tokenizer(gpt2_dirs["vocab+merges"])
    ids = tokenizer.encode("be<|endoftext|>")
    assert ids[-1] == 0
    assert tokenizer.token_bytes(0) is None
    assert tokenizer.token_text(0) == "<|endoftext|>"


def test_sentencepiece_pieces_and_bos(llama_dir):
    tokenizer = load_pretrained_tokenizer(llama_dir)
    ids = tokenizer.encode("To be")
    assert ids[0] == 1 and tokenizer.special_prefix == [1]
    assert tokenizer.token_text(1) == "<s>"
    assert "".join(tokenizer.token_text(i) for i in ids[1:]) == " To be"  # ▁ is the space it stands for
    assert tokenizer.decode(ids) == "To be"  # the <s> the post-processor adds is not part of the text
    assert tokenizer.encode(tokenizer.decode(ids)) == ids


def test_saved_tokenizer_json_keeps_specials_and_bos(llama_dir):
    tokenizer = load_pretrained_tokenizer(llama_dir)
    again = tokenizer_from_json(json.loads(json.dumps(tokenizer.to_json())))
    assert isinstance(again, HuggingFaceTokenizer)
    assert again.encode(SAMPLE_TEXT) == tokenizer.encode(SAMPLE_TEXT)


def test_a_folder_without_a_tokenizer_gives_none(tmp_path):
    assert load_pretrained_tokenizer(tmp_path) is None


@pytest.mark.parametrize(
    ("files", "message"),
    [
        ({"tokenizer.json": "{oops"}, "not valid JSON"),
        ({"tokenizer.json": "[1]"}, "JSON object"),
        ({"tokenizer.json": '{"model": {"type": "Nonsense"}}'}, "not a valid tokenizer.json"),
        ({"vocab.json": '{"a": "x"}', "merges.txt": ""}, "integer ids"),
        ({"vocab.json": '{"a": 0}', "merges.txt": "#version: 0.2\na b c\n"}, "line 2"),
        ({"vocab.json": '{"a": 0}', "merges.txt": "a b\n"}, "do not form a BPE tokenizer"),
        ({"vocab.json": '{"a": 0}', "merges.txt": "", "tokenizer_config.json": "nope"}, "not valid JSON"),
    ],
)
def test_broken_tokenizer_folders_get_a_message(tmp_path, files, message):
    for name, content in files.items():
        (tmp_path / name).write_text(content, encoding="utf-8")
    with pytest.raises(TokenizerFileError, match=message):
        load_pretrained_tokenizer(tmp_path)


@pytest.mark.parametrize("layout", ["gpt2", "llama"])
def test_pieces_and_lookups_are_the_librarys(gpt2_dirs, llama_dir, layout):
    """The vocabulary read once at load answers as the library does for every id and piece."""
    folder = gpt2_dirs["tokenizer.json"] if layout == "gpt2" else llama_dir
    tokenizer = load_pretrained_tokenizer(folder)
    backend = tokenizer._tokenizer
    assert tokenizer.vocab_size == backend.get_vocab_size(with_added_tokens=True)
    for token_id in range(tokenizer.vocab_size):
        piece = backend.id_to_token(token_id)
        assert tokenizer.piece(token_id) == (piece if piece is not None else f"<{token_id}>")
        if piece is not None:
            assert tokenizer.id_of(piece) == backend.token_to_id(piece)
    with pytest.raises(UnknownTokenError):
        tokenizer.id_of("\ud800 no such piece")  # a lone surrogate is no piece of any vocabulary
