"""The answers CSV: written as a page writes it, read back, summarised per step; anything else refused in one line."""

from __future__ import annotations

import json

import pytest

from core.cli import main
from core.handouts.answers import AnswerRow, AnswersError, answers_csv, parse_answers, summarise

ROWS = [
    AnswerRow("The causal mask", 1, "A claim you can test", "yes", "yes", "right", "2026-01-05T10:00:00Z"),
    AnswerRow("The causal mask", 2, "Take the mask away", "yes", "no", "wrong", "2026-01-05T10:01:00Z"),
    AnswerRow("The causal mask", 4, "After the softmax", "", "no", "skipped", "2026-01-05T10:02:00Z"),
    AnswerRow("The causal mask", 3, 'Quotes "and", commas\nand a newline', "=1+1", "x", "wrong", "t"),
]


def test_the_csv_round_trip_keeps_every_field():
    assert parse_answers(answers_csv(ROWS)) == ROWS


def test_the_summary_counts_right_wrong_skipped_and_the_common_wrong_answers(tmp_path, capsys):
    others = [AnswerRow("The causal mask", 2, "Take the mask away", guess, "no", result, "t")
              for guess, result in (("yes", "wrong"), ("no", "right"), ("Yes", "wrong"), ("yes", "wrong"))]
    paths = []
    for index, rows in enumerate((ROWS, others)):
        path = tmp_path / f"student{index}.csv"
        path.write_text(answers_csv(rows), encoding="utf-8")
        paths.append(str(path))
    step2 = next(item for item in summarise(ROWS + others) if item.step == 2)
    assert (step2.answered, step2.right, step2.skipped) == (5, 1, 0)
    assert step2.common_wrong == (("yes", 3), ("Yes", 1))
    assert main(["lesson-answers", *paths, "--json"]) == 0
    printed = json.loads(capsys.readouterr().out)
    assert printed["files"] == 2
    by_step = {item["step"]: item for item in printed["steps"]}
    assert by_step[2]["right"] == 1 and by_step[2]["wrong"] == 4 and by_step[4]["skipped"] == 1
    assert by_step[2]["common_wrong"][0] == {"prediction": "yes", "count": 3}
    assert main(["lesson-answers", *paths]) == 0
    assert "The causal mask, step 2 (Take the mask away): 1 of 5 right (20%), 0 skipped; answer no" in \
        capsys.readouterr().out


@pytest.mark.parametrize("content", [
    "name,score\nada,3\n",  # another CSV
    '"lesson","step","title","prediction","answer","result","time"\n"L","two","t","p","a","right","t"\n',
    '"lesson","step","title","prediction","answer","result","time"\n"L","1","t","p","a","maybe","t"\n',
    '"lesson","step","title","prediction","answer","result","time"\n"L","1","t"\n',
    "",
])
def test_a_file_that_is_not_an_answers_csv_is_refused_in_one_line(tmp_path, capsys, content):
    path = tmp_path / "answers.csv"
    path.write_text(content, encoding="utf-8")
    with pytest.raises(AnswersError):
        parse_answers(content)
    assert main(["lesson-answers", str(path)]) == 2
    err = capsys.readouterr().err
    assert err.startswith("transformer-explorer lesson-answers: error: ") and err.count("\n") == 1


def test_binary_and_missing_files_are_refused_in_one_line(tmp_path, capsys):
    binary = tmp_path / "photo.csv"
    binary.write_bytes(b"\x89PNG\r\n\x1a\n\x00\x00\xff\xfe")
    for path in (binary, tmp_path / "missing.csv", tmp_path):
        assert main(["lesson-answers", str(path)]) == 2
        err = capsys.readouterr().err
        assert err.count("\n") == 1 and "error:" in err
