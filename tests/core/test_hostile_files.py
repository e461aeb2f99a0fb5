"""Sessions and lessons a careless or hostile user hands the lab: each is one clear message, at once."""

from __future__ import annotations

import copy
import json
import os
from pathlib import Path

import pytest

from core.json_files import MAX_DEPTH, MAX_INTEGER_DIGITS, JsonFileError, nesting_depth, read_json_document
from core.lessons import MAX_FILE_BYTES, LessonError, load_lesson, parse_lesson
from core.limits import MAX_LESSON_STEPS, MAX_PROSE_CHARS, MAX_SEED, MAX_TEXT_CHARS, MAX_TITLE_CHARS
from core.presets import get_preset
from gui.session import MAX_SESSION_BYTES, Session, SessionError, parse_session, read_session

SESSION = Session(get_preset("tiny-gpt"), seed=1, text="To be").to_json()
LESSON = {"title": "A lesson", "steps": [{"title": "one", "text": "Read this.", "state": {"seed": 0, "text": "abc"}}]}


def _session_file(tmp_path: Path, **changes) -> Path:
    path = tmp_path / "session.json"
    path.write_text(json.dumps({**SESSION, **changes}), encoding="utf-8")
    return path


def _one_line(error: pytest.ExceptionInfo) -> str:
    message = str(error.value)
    assert message and "\n" not in message and "Traceback" not in message
    return message


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="FIFOs are POSIX")
@pytest.mark.parametrize("reader", [read_session, load_lesson])
def test_a_fifo_is_refused_without_waiting_for_a_writer(tmp_path, reader):
    fifo = tmp_path / "pipe.json"
    os.mkfifo(fifo)
    with pytest.raises((SessionError, LessonError)) as caught:
        reader(fifo)  # would block forever if it were opened for reading without O_NONBLOCK
    assert "is not a regular file" in _one_line(caught)


@pytest.mark.skipif(not Path("/dev/zero").exists(), reason="needs /dev/zero")
@pytest.mark.parametrize("reader", [read_session, load_lesson])
def test_a_link_to_a_device_is_refused_without_reading_it(tmp_path, reader):
    link = tmp_path / "zero.json"
    link.symlink_to("/dev/zero")
    with pytest.raises((SessionError, LessonError)) as caught:
        reader(link)
    assert "is not a regular file" in _one_line(caught)


def test_a_folder_and_a_missing_file(tmp_path):
    with pytest.raises(SessionError, match="is a folder, not a session file"):
        read_session(tmp_path)
    with pytest.raises(LessonError, match="does not exist"):
        load_lesson(tmp_path / "absent.json")


@pytest.mark.parametrize(("reader", "limit"), [(read_session, MAX_SESSION_BYTES), (load_lesson, MAX_FILE_BYTES)])
def test_a_file_over_the_size_bound_is_refused_before_parsing(tmp_path, reader, limit):
    path = tmp_path / "big.json"
    path.write_bytes(b" " * (limit + 1))
    with pytest.raises((SessionError, LessonError)) as caught:
        reader(path)
    assert f"more than the {limit:,} of" in _one_line(caught)


def test_a_text_over_the_bound_is_refused_before_anything_tokenizes_it(tmp_path):
    with pytest.raises(SessionError) as caught:
        read_session(_session_file(tmp_path, text="a" * (1024 * 1024)))
    assert _one_line(caught) == f"'text' has 1,048,576 characters, more than the {MAX_TEXT_CHARS:,} the lab takes"
    assert read_session(_session_file(tmp_path, text="a" * MAX_TEXT_CHARS)).text == "a" * MAX_TEXT_CHARS


def test_seeds_are_bounded_by_the_windows_32_bit_boxes(tmp_path):
    assert read_session(_session_file(tmp_path, seed=MAX_SEED)).seed == MAX_SEED
    with pytest.raises(SessionError) as caught:
        read_session(_session_file(tmp_path, seed=MAX_SEED + 1))
    assert _one_line(caught) == "'seed' must be a whole number from 0 to 2,147,483,647, got 2147483648"
    lesson = copy.deepcopy(LESSON)
    lesson["steps"][0]["state"]["seed"] = 2**31
    with pytest.raises(LessonError, match=r"step 1: 'seed': must be an integer from 0 to 2,147,483,647, not 2147483648"):
        parse_lesson(lesson)


@pytest.mark.parametrize("reader", [read_session, load_lesson])
def test_an_integer_of_thousands_of_digits_is_one_line(tmp_path, reader):
    path = tmp_path / "digits.json"
    path.write_text('{"format": "transformer-explorer-session", "version": 1, "seed": ' + "9" * 5000 + "}")
    with pytest.raises((SessionError, LessonError)) as caught:
        reader(path)
    assert _one_line(caught) == f"digits.json cannot be {'a session file' if reader is read_session else 'a lesson'}: " \
                                f"it holds an integer of 5,000 digits (at most {MAX_INTEGER_DIGITS})"


@pytest.mark.parametrize("levels", [MAX_DEPTH + 1, 100_000])
@pytest.mark.parametrize("reader", [read_session, load_lesson])
def test_deep_nesting_is_one_line(tmp_path, reader, levels):
    path = tmp_path / "deep.json"
    path.write_text("[" * levels + "]" * levels)
    with pytest.raises((SessionError, LessonError)) as caught:
        reader(path)
    assert "nests" in _one_line(caught) and f"{MAX_DEPTH} levels" in str(caught.value)


def test_nesting_under_the_bound_reaches_the_validator(tmp_path):
    settings: dict = {}
    inner = settings
    for _ in range(MAX_DEPTH - 3):
        inner["x"] = {}
        inner = inner["x"]
    path = _session_file(tmp_path, panels={"Tokens & masks": settings})
    assert nesting_depth(json.loads(path.read_text())) == MAX_DEPTH
    assert read_session(path).panels["Tokens & masks"] == settings


def test_nan_is_not_a_number_here(tmp_path):
    path = tmp_path / "nan.json"
    path.write_text('{"seed": NaN}')
    with pytest.raises(JsonFileError, match="it holds NaN, which is not a JSON number"):
        read_json_document(path, 1000, "a session file")


def test_lesson_text_fields_are_bounded():
    for where, change, limit in (
        ("'title'", lambda lesson: lesson.update(title="t" * (MAX_TITLE_CHARS + 1)), MAX_TITLE_CHARS),
        ("step 1: 'title'", lambda lesson: lesson["steps"][0].update(title="t" * (MAX_TITLE_CHARS + 1)), MAX_TITLE_CHARS),
        ("step 1: 'text'", lambda lesson: lesson["steps"][0].update(text="t" * (MAX_PROSE_CHARS + 1)), MAX_PROSE_CHARS),
        ("step 1: 'text'", lambda lesson: lesson["steps"][0]["state"].update(text="t" * (MAX_TEXT_CHARS + 1)), MAX_TEXT_CHARS),
    ):
        lesson = copy.deepcopy(LESSON)
        change(lesson)
        with pytest.raises(LessonError) as caught:
            parse_lesson(lesson)
        assert _one_line(caught).startswith(where) and f"more than the {limit:,} allowed" in str(caught.value)
    lesson = copy.deepcopy(LESSON)
    lesson["steps"] = lesson["steps"] * (MAX_LESSON_STEPS + 1)
    with pytest.raises(LessonError, match=f"more than the {MAX_LESSON_STEPS} allowed"):
        parse_lesson(lesson)


def test_a_refused_huge_value_is_quoted_short():
    lesson = copy.deepcopy(LESSON)
    lesson["steps"][0]["state"]["seed"] = "x" * 100_000
    with pytest.raises(LessonError) as caught:
        parse_lesson(lesson)
    assert len(_one_line(caught)) < 150


def test_session_parse_refuses_a_long_device_name():
    with pytest.raises(SessionError, match="'device' must be one of cpu, cuda, cuda:N, mps or auto"):
        parse_session({**SESSION, "device": "cuda" * 100})
    with pytest.raises(SessionError, match="'device' must be one of"):
        parse_session({**SESSION, "device": "banana"})
    assert parse_session({**SESSION, "device": "cuda:1"}).device == "cuda:1"
