"""Fuzz the files the lab reads: session files, tokenizer files and checkpoint folders.

Random JSON-ish data and byte garbage give the loader's own error with a message (SessionError,
TokenizerFileError, CheckpointError), never another exception type and never a crash.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from core.checkpoints import CONFIG_FILE, MODEL_FILE, TOKENIZER_FILE, CheckpointError, load_checkpoint, save_checkpoint
from core.config import ModelConfig
from core.tokenizers import CharTokenizer, TokenizerFileError, load_tokenizer
from gui.session import SESSION_FORMAT, Session, SessionError, parse_session, read_session, write_session

FUZZ = settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture])

SCALARS = st.none() | st.booleans() | st.integers(-(2**70), 2**70) | st.floats(allow_nan=True) | st.text(max_size=20)
JSONISH = st.recursive(SCALARS, lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=12), inner, max_size=5),
                       max_leaves=20)
CONFIG_KEYS = ModelConfig.field_names()
TINY = ModelConfig(name="fuzz", vocab_size=12, context_length=8, d_model=8, n_heads=2, n_layers=1, d_ff=16).validated()


def _config_like() -> st.SearchStrategy[dict]:
    """Config dicts near the real thing: real field names with random values, plus stray keys."""
    return st.dictionaries(st.sampled_from(CONFIG_KEYS + ["bogus"]), SCALARS, max_size=6).map(
        lambda changes: {**TINY.to_dict(), **changes})


def _session_like() -> st.SearchStrategy[dict]:
    base = Session(config=TINY, text="ab").to_json()
    keys = list(base) + ["extra"]
    return st.dictionaries(st.sampled_from(keys), JSONISH | _config_like(), max_size=4).map(lambda changes: {**base, **changes})


def _write(path: Path, content: bytes | str) -> None:
    if isinstance(content, str):
        path.write_text(content, encoding="utf-8", errors="surrogatepass")
    else:
        path.write_bytes(content)


def _json_text(value) -> str:
    return json.dumps(value, allow_nan=True)


# ---- sessions -----------------------------------------------------------------------------------


@FUZZ
@given(data=JSONISH | _session_like())
def test_parse_session_gives_a_session_or_a_session_error(data):
    try:
        session = parse_session(data)
    except SessionError as error:
        assert str(error) and "\n" not in str(error)
    else:
        assert isinstance(session, Session)


@FUZZ
@given(content=st.binary(max_size=300) | JSONISH.map(_json_text) | _session_like().map(_json_text)
       | st.text(max_size=200))
def test_read_session_on_garbage_files(tmp_path, content):
    path = tmp_path / "fuzz.json"
    if isinstance(content, str):
        content = content.encode("utf-8", errors="surrogatepass")
    path.write_bytes(content)
    try:
        read_session(path)
    except SessionError as error:
        assert str(error)


@pytest.mark.parametrize("content", [b"[" * 100_000, b'{"a":' * 50_000, b"\xef\xbb\xbf{}", b"", b"\x00" * 10, b"1e99999"])
def test_pathological_session_files(tmp_path, content):
    path = tmp_path / "odd.json"
    path.write_bytes(content)
    with pytest.raises(SessionError):
        read_session(path)


def test_a_session_round_trips(tmp_path):
    session = Session(config=TINY, seed=4, text="ab", tokens=(1, 2), panels={"x": {"y": 1}})
    assert read_session(write_session(tmp_path / "s.json", session)) == session


# ---- tokenizer files ----------------------------------------------------------------------------


@FUZZ
@given(content=st.binary(max_size=300)
       | JSONISH.map(_json_text)
       | st.fixed_dictionaries({"kind": st.sampled_from(["char", "word", "bpe", 3]), "vocab": JSONISH}).map(_json_text)
       | st.fixed_dictionaries({"model": JSONISH}).map(_json_text))
def test_load_tokenizer_on_garbage_files(tmp_path, content):
    path = tmp_path / "tokenizer.json"
    _write(path, content)
    try:
        tokenizer = load_tokenizer(path)
    except TokenizerFileError as error:
        assert str(error)
    else:
        assert tokenizer.vocab_size >= 0


def test_a_deeply_nested_tokenizer_file(tmp_path):
    path = tmp_path / "deep.json"
    path.write_bytes(b"[" * 100_000)
    with pytest.raises(TokenizerFileError):
        load_tokenizer(path)


def test_missing_and_folder_tokenizer_files(tmp_path):
    with pytest.raises(TokenizerFileError):
        load_tokenizer(tmp_path / "absent.json")
    with pytest.raises(TokenizerFileError):
        load_tokenizer(tmp_path)


# ---- checkpoint folders -------------------------------------------------------------------------


@pytest.fixture(scope="module")
def good_checkpoint(tmp_path_factory) -> Path:
    from core.model import Transformer

    folder = tmp_path_factory.mktemp("good") / "ckpt"
    save_checkpoint(Transformer.from_seed(TINY, seed=0), folder, tokenizer=CharTokenizer(list("abcdefghijkl")))
    assert load_checkpoint(folder).config == TINY
    return folder


def _copy(good: Path, tmp_path: Path) -> Path:
    target = tmp_path / "ckpt"
    if target.exists():
        shutil.rmtree(target)
    shutil.copytree(good, target)
    return target


def _expect_checkpoint_error(folder: Path) -> None:
    try:
        load_checkpoint(folder)
    except CheckpointError as error:
        assert str(error)


@FUZZ
@given(config=JSONISH | _config_like()
       | _config_like().map(lambda c: {"format": "transformer-explorer-checkpoint", "format_version": 1, "config": c})
       | st.binary(max_size=100))
def test_random_config_json(good_checkpoint, tmp_path, config):
    folder = _copy(good_checkpoint, tmp_path)
    _write(folder / CONFIG_FILE, config if isinstance(config, bytes) else _json_text(config))
    _expect_checkpoint_error(folder)


@FUZZ
@given(cut=st.floats(0.0, 1.0), garbage=st.binary(max_size=64), mode=st.sampled_from(["truncate", "garbage", "flip", "append"]))
def test_damaged_safetensors(good_checkpoint, tmp_path, cut, garbage, mode):
    folder = _copy(good_checkpoint, tmp_path)
    weights = (folder / MODEL_FILE).read_bytes()
    at = int(cut * len(weights))
    damaged = {
        "truncate": weights[:at],
        "garbage": garbage,
        "flip": weights[:at] + garbage + weights[at + len(garbage):],
        "append": weights + garbage,
    }[mode]
    (folder / MODEL_FILE).write_bytes(damaged)
    _expect_checkpoint_error(folder)


@FUZZ
@given(content=st.binary(max_size=200) | JSONISH.map(_json_text)
       | st.fixed_dictionaries({"kind": st.sampled_from(["char", "word"]), "vocab": JSONISH}).map(_json_text))
def test_random_tokenizer_in_a_checkpoint(good_checkpoint, tmp_path, content):
    folder = _copy(good_checkpoint, tmp_path)
    _write(folder / TOKENIZER_FILE, content)
    _expect_checkpoint_error(folder)


@pytest.mark.parametrize("name", [CONFIG_FILE, TOKENIZER_FILE])
def test_deeply_nested_json_in_a_checkpoint(good_checkpoint, tmp_path, name):
    folder = _copy(good_checkpoint, tmp_path)
    (folder / name).write_bytes(b'{"a":' * 50_000)
    with pytest.raises(CheckpointError, match="nests deeper than"):
        load_checkpoint(folder)


@pytest.mark.parametrize("missing", [CONFIG_FILE, MODEL_FILE, TOKENIZER_FILE, "everything"])
def test_missing_files(good_checkpoint, tmp_path, missing):
    folder = _copy(good_checkpoint, tmp_path)
    if missing == "everything":
        shutil.rmtree(folder)
        folder.mkdir()
    else:
        (folder / missing).unlink()
    with pytest.raises(CheckpointError):
        load_checkpoint(folder)


def test_a_file_or_nothing_instead_of_a_folder(tmp_path):
    (tmp_path / "file").write_text("x")
    for target in (tmp_path / "file", tmp_path / "absent"):
        with pytest.raises(CheckpointError):
            load_checkpoint(target)
    (tmp_path / "dir-config").mkdir()
    (tmp_path / "dir-config" / CONFIG_FILE).mkdir()  # a folder where config.json should be
    with pytest.raises(CheckpointError):
        load_checkpoint(tmp_path / "dir-config")


def test_session_format_tag_is_stable():
    assert SESSION_FORMAT == "transformer-explorer-session"


# ---- the fuzz run's makers for the Causal lab and Families views (tools/fuzz_inputs.py) ------------


def _draws(maker, count: int = 400, seed: int = 7):
    import random

    rng = random.Random(seed)
    return [maker(rng) for _ in range(count)]


def test_view_settings_reach_past_every_bound_and_stay_within_some():
    """Settings aim at the views: over many draws each declared setting gets values the lesson check accepts and values
    it refuses, every sub-tab is asked for, and the named hostile values (heads a model lacks, periods past a context,
    blanks past the text, ids past int64) all come up."""
    from core.lesson_parts import PANEL_PARTS
    from tools.fuzz_inputs import NEW_HALF_TABS, PAST_INT64, new_half_settings

    for panel, tabs in NEW_HALF_TABS.items():
        declared = PANEL_PARTS[panel].settings
        draws = _draws(lambda rng, panel=panel, tabs=tabs: new_half_settings(rng, panel, rng.choice(tabs)))
        assert {d["tab"] for d in draws} >= set(tabs)
        for key, setting in declared.items():
            values = [d[key] for d in draws if key in d]
            if key == "tab":
                continue
            assert any(not setting.problem(v) for v in values), (panel, key)
            assert any(setting.problem(v) for v in values) or setting.kind == "text", (panel, key)
        seen = [value for d in draws for value in d.values()]
        assert any(isinstance(v, list) and PAST_INT64 in v for v in seen) or panel == "Families"
    causal = _draws(lambda rng: new_half_settings(rng, "Causal lab", "Induction"))
    assert _values(causal, "period") >= {33, 65, 129, 513}  # twice past the contexts 64 and 128, and past the bound 512
    assert _values(causal, "heads") >= {"L9H9", "L0H99", "L"}
    assert _values(causal, "site") >= {"mlp_out", "head"}
    families = _draws(lambda rng: new_half_settings(rng, "Families", "Fill in the blank"))
    assert _values(families, "blank") >= {0, 65, 10_000, 10_001}
    assert _values(families, "cross_head") >= {-1, 4, 1024}


def _values(draws: list[dict], key: str) -> set:
    return {d[key] for d in draws if isinstance(d.get(key), (int, str))}


def test_within_lesson_bounds_keeps_exactly_what_a_lesson_may_say():
    from core.lesson_parts import PANEL_PARTS
    from core.limits import settings_problem
    from tools.fuzz_inputs import NEW_HALF_TABS, new_half_settings, within_lesson_bounds

    kept_any = dropped_any = False
    for panel, tabs in NEW_HALF_TABS.items():
        draws = _draws(lambda rng, panel=panel, tabs=tabs: new_half_settings(rng, panel, rng.choice(tabs)), 200)
        for settings in draws:
            kept = within_lesson_bounds(panel, settings)
            assert all(not PANEL_PARTS[panel].settings[key].problem(value) for key, value in kept.items())
            assert not settings_problem(kept, "panel_settings")
            kept_any |= bool(kept)
            dropped_any |= len(kept) < len(settings)
    assert kept_any and dropped_any


def test_view_lessons_built_from_the_makers_pass_the_lesson_check_and_put_every_family_before_every_view():
    """The state and in-bounds settings make lessons check-lesson passes (so the window must show them), with a
    model of each family and mismatches (a router view on a decoder, cross-attention on an encoder)."""
    from core.lessons import LessonError, parse_lesson
    from core.presets import PRESETS
    from tools.fuzz_inputs import (FAMILY_PRESETS, NEW_HALF_TABS, VIEW_PRESETS, new_half_settings, new_half_state,
                                   within_lesson_bounds)

    pairs, passed, refused = set(), 0, 0

    def lesson(rng):
        panel = rng.choice(sorted(NEW_HALF_TABS))
        tab = rng.choice(NEW_HALF_TABS[panel])
        label, state = new_half_state(rng, tab)
        settings = within_lesson_bounds(panel, new_half_settings(rng, panel, tab))
        return tab, state, {"title": "t", "steps": [{"title": "s", "text": "x", "panel": panel, "state": state,
                                                     "panel_settings": settings}]}

    for tab, state, document in _draws(lesson, 300):
        assert state["preset"] in PRESETS and 0 < len(state["text"]) <= 10_000
        pairs.add((state["preset"], tab))
        try:
            parse_lesson(document, panels=list(NEW_HALF_TABS))
            passed += 1
        except LessonError:
            refused += 1
    assert passed > 200 and refused < passed  # what the window gets, mostly: the views must refuse, not the loader
    assert {preset for preset, _ in pairs} >= set(FAMILY_PRESETS)
    assert ("tiny-gpt", "Router") in pairs and ("tiny-encoder", "Cross-attention") in pairs
    assert all((VIEW_PRESETS[tab], tab) in pairs for tab in VIEW_PRESETS)


def test_view_command_lines_cover_each_command_with_the_hostile_values():
    from tools.fuzz_inputs import NEW_HALF_COMMANDS, PAST_INT64, new_half_argv

    draws = [argv for _label, argv in _draws(new_half_argv, 600)]
    assert {argv[0] for argv in draws} == set(NEW_HALF_COMMANDS)
    values = [value for argv in draws for value in argv]
    assert any(str(PAST_INT64) in value or "99999999999999999999" in value for value in values)  # ids past int64
    assert any(len(value) == 10_000 for value in values)  # a text of 10,000 characters
    assert any("€" in value for value in values)  # a token no vocabulary has
    wrong = [argv for argv in draws if argv[2] != NEW_HALF_COMMANDS[argv[0]]]
    assert wrong and {argv[0] for argv in wrong} == set(NEW_HALF_COMMANDS)  # each command on another family's model
