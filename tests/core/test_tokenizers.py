import json

import pytest
from hypothesis import given
from hypothesis import strategies as st

from core.tokenizers import (
    CharTokenizer,
    HuggingFaceTokenizer,
    Tokenizer,
    TokenizerFileError,
    UnknownTokenError,
    WordTokenizer,
    load_tokenizer,
    tokenizer_from_json,
)
from resources import resource_path

CORPUS = resource_path("tinyshakespeare.txt").read_text(encoding="utf-8")


def test_char_tokenizer_of_the_corpus_has_65_characters():
    tokenizer = CharTokenizer.from_text(CORPUS)
    assert tokenizer.vocab_size == 65
    assert tokenizer.decode(tokenizer.encode("To be, or not to be")) == "To be, or not to be"
    assert tokenizer.token_text(tokenizer.id_of("a")) == "a"


@given(st.text(alphabet=sorted(set(CORPUS)), max_size=50))
def test_char_round_trip(text):
    tokenizer = CharTokenizer.from_text(CORPUS)
    assert tokenizer.decode(tokenizer.encode(text)) == text


def test_unknown_character_names_it_and_its_position():
    with pytest.raises(UnknownTokenError, match=r"'é' at position 2"):
        CharTokenizer.from_text(CORPUS).encode("caé")
    with pytest.raises(UnknownTokenError):
        CharTokenizer.from_text(CORPUS).decode([65])


def test_word_tokenizer_maps_unknown_words_to_unk():
    tokenizer = WordTokenizer.from_text("the cat sat on the mat .")
    ids = tokenizer.encode("the dog sat")
    assert tokenizer.token_text(ids[1]) == WordTokenizer.UNKNOWN
    assert tokenizer.decode(tokenizer.encode("the cat sat")) == "the cat sat"
    with pytest.raises(UnknownTokenError):
        WordTokenizer(["a", "b"]).encode("c")


def _tiny_bpe_json() -> dict:
    from tokenizers import Tokenizer as HF
    from tokenizers.models import WordLevel
    from tokenizers.pre_tokenizers import Whitespace

    tokenizer = HF(WordLevel({"[UNK]": 0, "hello": 1, "world": 2}, unk_token="[UNK]"))
    tokenizer.pre_tokenizer = Whitespace()
    return json.loads(tokenizer.to_str())


def test_hugging_face_tokenizer_json(tmp_path):
    path = tmp_path / "tokenizer.json"
    path.write_text(json.dumps(_tiny_bpe_json()))
    tokenizer = load_tokenizer(path)
    assert isinstance(tokenizer, HuggingFaceTokenizer)
    assert isinstance(tokenizer, Tokenizer)
    assert tokenizer.encode("hello world") == [1, 2]
    assert tokenizer.token_text(2) == "world"
    assert tokenizer.id_of("hello") == 1
    with pytest.raises(UnknownTokenError):
        tokenizer.id_of("nope")


@pytest.mark.parametrize("kind", ["char", "word"])
def test_saved_tokenizers_reload(kind):
    tokenizer = CharTokenizer.from_text("a b c") if kind == "char" else WordTokenizer.from_text("a b c")
    again = tokenizer_from_json(json.loads(json.dumps(tokenizer.to_json())))
    assert again.encode("a b") == tokenizer.encode("a b")


@pytest.mark.parametrize(
    ("content", "message"),
    [
        ("{not json", "not valid JSON"),
        ("[1, 2]", "JSON object"),
        ('{"kind": "char"}', "no 'vocab' list"),
        ('{"kind": "char", "vocab": ["ab"]}', "single character"),
        ('{"kind": "char", "vocab": ["a", "a"]}', "twice"),
        ('{"kind": "char", "vocab": []}', "at least one"),
        ('{"kind": "bytes", "vocab": []}', "unknown tokenizer"),
        ('{"model": {"type": "Nonsense"}}', "not a valid tokenizer.json"),
    ],
)
def test_corrupt_tokenizer_files_get_a_message(tmp_path, content, message):
    path = tmp_path / "tokenizer.json"
    path.write_text(content)
    with pytest.raises(TokenizerFileError, match=message):
        load_tokenizer(path)


def test_missing_and_binary_tokenizer_files(tmp_path):
    with pytest.raises(TokenizerFileError, match="no tokenizer file"):
        load_tokenizer(tmp_path / "absent.json")
    binary = tmp_path / "binary.json"
    binary.write_bytes(b"\xff\xfe\x00\x81")
    with pytest.raises(TokenizerFileError, match="not a text file"):
        load_tokenizer(binary)
