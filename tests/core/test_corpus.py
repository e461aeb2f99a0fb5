"""A training corpus read without a window: what it holds, what it refuses, and why a config cannot train on it."""

from __future__ import annotations

import pytest

from core.config import ModelConfig
from core.corpus import (
    MIN_CORPUS_CHARS,
    Corpus,
    CorpusError,
    bundled_corpus,
    read_corpus,
    vocabulary_problem,
    window_problem,
)
from resources import resource_path

TINY = ModelConfig(name="test-tiny", vocab_size=65, context_length=32, d_model=32, n_heads=2, n_layers=1, d_ff=64)


def test_the_bundled_corpus_is_the_shipped_text_and_its_distinct_characters():
    text = resource_path("tinyshakespeare.txt").read_text(encoding="utf-8")
    corpus = bundled_corpus()
    assert corpus.name == "tinyshakespeare.txt" and corpus.text == text
    assert corpus.vocab_size == len(set(text)) == 65


def test_a_text_file_becomes_a_corpus(tmp_path):
    path = tmp_path / "abcd.txt"
    path.write_text("abcd" * 300, encoding="utf-8")
    corpus = read_corpus(path)
    assert corpus == Corpus("abcd.txt", "abcd" * 300, 4)


@pytest.mark.parametrize(
    ("content", "message"),
    [
        (b"\xff\xfe" + b"a" * 2000, "is not UTF-8 text (byte 0"),
        (b"a" * (MIN_CORPUS_CHARS - 1), f"has {MIN_CORPUS_CHARS - 1:,} characters; a corpus needs at least"),
    ],
    ids=["not-utf8", "too-short"],
)
def test_a_file_that_cannot_be_a_corpus_says_why(tmp_path, content, message):
    path = tmp_path / "bad.txt"
    path.write_bytes(content)
    with pytest.raises(CorpusError, match=message.replace("(", r"\(")):
        read_corpus(path)


def test_a_missing_file_or_a_folder_is_refused_with_a_corpus_error(tmp_path):
    for path in (tmp_path / "missing.txt", tmp_path):
        with pytest.raises(CorpusError):
            read_corpus(path)


def test_each_objective_needs_the_vocabulary_of_its_corpus():
    corpus = Corpus("four.txt", "abcd" * 300, 4)
    assert vocabulary_problem(TINY.replace(vocab_size=4), corpus) == ""
    assert "set vocab_size to 4" in vocabulary_problem(TINY, corpus)
    encoder = TINY.replace(architecture="encoder", attention="bidirectional")
    # A masked LM reads the blank too: one token more than the corpus's characters.
    assert vocabulary_problem(encoder.replace(vocab_size=5), corpus) == ""
    assert "set vocab_size to 5" in vocabulary_problem(encoder.replace(vocab_size=4), corpus)
    assert "contains '_'" in vocabulary_problem(encoder.replace(vocab_size=5), Corpus("b.txt", "ab_c" * 300, 4))
    pairs = Corpus("pairs.txt", "ab\tba\n" * 200, 4)
    encoder_decoder = TINY.replace(architecture="encoder-decoder", vocab_size=4)
    assert vocabulary_problem(encoder_decoder, pairs) == ""
    assert "has no tab" in vocabulary_problem(encoder_decoder, corpus)
    assert "causal" in vocabulary_problem(TINY.replace(attention="bidirectional", vocab_size=4), corpus)
    assert vocabulary_problem(TINY, None) == ""  # no corpus yet: only the architecture is checked


def test_windows_need_the_training_split_to_hold_one_window_and_its_target():
    # core.training keeps the first nine tenths for training; a window of T needs T + 1 characters there.
    corpus = Corpus("short.txt", "a" * 1000, 1)
    longest_fitting = max(t for t in range(1, 1000) if int((t + 2) / 0.9) + 1 <= 1000)
    assert window_problem(corpus, longest_fitting) == ""
    assert "Shorten the sequence length" in window_problem(corpus, longest_fitting + 1)


def _distinct_characters(count: int) -> list[str]:
    """`count` distinct characters, none of them a line break, a tab or the blank."""
    skipped = {"\t", "\n", "\r", "\x0b", "\x0c", "\x1c", "\x1d", "\x1e", "\x85", "\u2028", "\u2029", "_"}
    return [c for c in map(chr, range(0x21, 0x21 + count + 4096)) if c not in skipped
            and not 0xD800 <= ord(c) <= 0xDFFF][:count]


def test_a_corpus_wider_than_the_character_vocabulary_bound_is_refused_naming_the_bound():
    from core.limits import MAX_CHARACTER_VOCAB

    wide = _distinct_characters(MAX_CHARACTER_VOCAB + 1)
    corpus = Corpus("wide.txt", "".join(wide), len(wide))
    for config in (TINY, TINY.replace(architecture="encoder", attention="bidirectional")):
        problem = vocabulary_problem(config.replace(vocab_size=corpus.vocab_size + 1), corpus)
        assert f"{MAX_CHARACTER_VOCAB + 1:,} distinct characters" in problem
        assert f"at most {MAX_CHARACTER_VOCAB:,} tokens" in problem
    # At the bound itself a decoder trains; an encoder's blank makes one token more.
    at_bound = Corpus("full.txt", "".join(wide[:-1]), MAX_CHARACTER_VOCAB)
    assert vocabulary_problem(TINY.replace(vocab_size=MAX_CHARACTER_VOCAB), at_bound) == ""
    encoder = TINY.replace(architecture="encoder", attention="bidirectional", vocab_size=MAX_CHARACTER_VOCAB + 1)
    assert f"({MAX_CHARACTER_VOCAB + 1:,} tokens with the blank); a character model trains on at most" in \
        vocabulary_problem(encoder, at_bound)
