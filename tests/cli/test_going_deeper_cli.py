"""`extrapolate` and `ladder`: their JSON, their refusals, and the bundled models against their recorded figures."""

from __future__ import annotations

import json

import pytest

from core.checkpoints import bundled_model_names, load_bundled
from core.going_deeper import recipe as R
from core.going_deeper.ladder import read_record
from core.presets import PRESETS
from core.training import CHECK_PREDICTIONS
from tests.cli.helpers import run


@pytest.fixture(scope="module")
def held_out(tmp_path_factory):
    """The held-out tenth as `ladder --write-held-out` writes it: the file every bundled figure is measured on."""
    path = tmp_path_factory.mktemp("held-out") / "held-out.txt"
    from core.cli import main

    assert main(["ladder", "--write-held-out", str(path)]) == 0
    return path


def test_every_going_deeper_model_is_bundled_as_its_preset():
    for name in [rung.model for rung in R.RUNGS] + R.context_model_names():
        assert name in bundled_model_names(), name
        loaded = load_bundled(name)
        assert loaded.config == PRESETS[name] and loaded.tokenizer.vocab_size == 65
        assert loaded.metadata["corpus"] == "tinyshakespeare.txt"


def test_every_going_deeper_record_is_its_recipe_on_the_bundled_corpus():
    import hashlib

    from core.training import TrainSettings

    text = _corpus()
    for name in [rung.model for rung in R.RUNGS] + R.context_model_names():
        record = load_bundled(name).metadata
        fine_tune = name == R.INTERPOLATION
        settings = R.PI_FINE_TUNE if fine_tune else R.RECIPE
        seed = R.CONTEXT_SEED if name.startswith("ctx-") else R.BUNDLED_SEED
        assert record["settings"] == TrainSettings(**settings, seed=seed).to_dict(), name
        assert record["steps_done"] == settings["steps"] and record["start"] == ("fine-tune" if fine_tune else "fresh")
        assert record["threads"] == R.THREADS and record["corpus_characters"] == len(text)
        assert record["corpus_sha256"] == hashlib.sha256(text.encode("utf-8")).hexdigest()


def test_extrapolate_json_has_a_row_per_length_and_the_learned_table_refuses(capsys, tmp_path):
    text = tmp_path / "sample.txt"
    text.write_text(R.held_out_text(_corpus())[:3000], encoding="utf-8")
    code, out, err = run(capsys, "extrapolate", "--checkpoint", "ctx-learned", "--lengths", "64,128",
                         "--text-file", str(text), "--json", "--quiet")
    assert code == 0 and err == ""
    data = json.loads(out)
    assert data["train_context"] == 64 and data["accepted_length"] == 64
    first, second = data["rows"]
    assert first["length"] == 64 and first["windows"] == 3000 // 64 and first["nats_per_char"] > 0
    assert first["nats_per_char_beyond"] is None  # 63 predictions a window: none past position 63
    assert second == {"length": 128, "nats_per_char": None, "nats_per_char_beyond": None, "windows": 3000 // 128,
                      "refused": "127 tokens exceed the model's context length of 64 (its learned position table "
                                 "has 64 rows)"}


def test_extrapolate_scores_past_the_trained_length_where_positions_allow(capsys, tmp_path):
    text = tmp_path / "sample.txt"
    text.write_text(R.held_out_text(_corpus())[:2000], encoding="utf-8")
    code, out, _ = run(capsys, "extrapolate", "--checkpoint", "ctx-alibi", "--lengths", "128", "--text-file",
                       str(text), "--json", "--quiet")
    row = json.loads(out)["rows"][0]
    assert code == 0 and row["nats_per_char"] > 0 and row["nats_per_char_beyond"] > 0 and "refused" not in row


@pytest.mark.parametrize("argv, message", [
    (["extrapolate", "--checkpoint", "ctx-learned", "--held-out", "--rope-scale", "2"],
     "--rope-scale rescales RoPE positions; bundled ctx-learned has learned positions"),
    (["extrapolate", "--checkpoint", "ctx-rope"], "give the text to score: --text-file FILE or --held-out"),
    (["extrapolate", "--train"], "--train needs --out DIR"),
])
def test_bad_requests_are_refused_in_one_line(capsys, argv, message):
    code, _out, err = run(capsys, *argv)
    assert code == 2 and err.count("\n") == 1 and message in err, err


def test_an_unknown_rung_is_refused_while_parsing(capsys):
    with pytest.raises(SystemExit) as exit_info:
        run(capsys, "ladder", "--train", "--rungs", "2018")
    err = capsys.readouterr().err
    assert exit_info.value.code == 2 and "unknown rung 2018" in err and err.count("\n") == 1


def test_logits_past_a_learned_table_is_one_line_naming_its_size(capsys, tmp_path):
    code, _out, err = run(capsys, "logits", "--checkpoint", "ctx-learned", "--text", "a" * 65,
                          "--out", str(tmp_path / "x.npy"), "--quiet")
    assert code == 2 and err.count("\n") == 1
    assert "65 tokens exceed the model's context length of 64 (its learned position table has 64 rows)" in err
    code, _out, _err = run(capsys, "logits", "--checkpoint", "ctx-rope", "--text", "a" * 200,
                           "--out", str(tmp_path / "y.npy"), "--quiet")
    assert code == 0 and (tmp_path / "y.npy").is_file()


def test_ladder_json_names_each_rung_its_change_its_model_and_its_seeds(capsys):
    code, out, _ = run(capsys, "ladder", "--json")
    data = json.loads(out)
    assert code == 0 and len(data["rungs"]) >= 6
    counts = [rung["parameters"] for rung in data["rungs"]]
    assert max(counts) <= 1.02 * min(counts)
    for rung, expected in zip(data["rungs"], R.RUNGS):
        assert (rung["name"], rung["change"], rung["model"]) == (expected.name, expected.change, expected.model)
        assert len(rung["seeds"]) >= 3 and all(set(seed) >= {"seed", "nats_per_char", "seconds"}
                                                for seed in rung["seeds"])
        assert rung["seconds"] == pytest.approx(sum(seed["seconds"] for seed in rung["seeds"]), abs=0.2)
    code, out, _ = run(capsys, "ladder")
    assert code == 0 and all(rung.name in out for rung in R.RUNGS)


def test_each_bundled_rung_model_evaluates_to_its_recorded_seed(capsys, held_out, tmp_path):
    """`evaluate` on the held-out tenth gives the bundled seed's figure; the whole tenth for the first rung (seconds
    a model), the first 16,384 predictions (the check_loss every run records) for every rung."""
    record = read_record()
    start = tmp_path / "start.txt"
    start.write_text(held_out.read_text(encoding="utf-8")[: CHECK_PREDICTIONS + 1], encoding="utf-8")
    for index, rung in enumerate(record["rungs"]):
        recorded = next(seed for seed in rung["seeds"] if seed["seed"] == record["bundled_seed"])
        training = load_bundled(rung["model"]).metadata
        assert training["val_loss_nats_per_char"] == recorded["nats_per_char"]
        assert training["check_loss"]["predictions"] == CHECK_PREDICTIONS
        for text, figure in ((start, training["check_loss"]["loss"]),
                             *([(held_out, recorded["nats_per_char"])] if index == 0 else [])):
            code, out, _ = run(capsys, "evaluate", "--checkpoint", rung["model"], "--text-file", str(text), "--json",
                               "--quiet")
            # The same windows and sums as the run's own evaluation; a thread count may round float32 sums apart.
            assert code == 0 and json.loads(out)["loss_nats_per_character"] == pytest.approx(figure, rel=1e-4)


def test_ladder_train_writes_the_record_and_the_models(capsys, tmp_path, monkeypatch):
    from core.going_deeper import trainer

    monkeypatch.setattr(trainer, "corpus_text", lambda: _corpus()[:20_000])
    out = tmp_path / "ladder"
    code, stdout, err = run(capsys, "ladder", "--train", "--seeds", "2", "--rungs", "RoPE,GQA", "--steps", "1",
                            "--out", str(out), "--json")
    assert code == 0 and "ladder: 4/4 run" in err
    data = json.loads(stdout)
    assert data == json.loads((out / "ladder.json").read_text())
    assert [rung["name"] for rung in data["rungs"]] == ["RoPE", "GQA"]
    assert sorted(p.name for p in out.iterdir()) == ["ladder-gqa", "ladder-rope", "ladder.json"]
    code, _out, err = run(capsys, "ladder", "--train", "--out", str(out))
    assert code == 2 and "exists and is not an empty folder" in err


def _corpus() -> str:
    from core.corpus import bundled_corpus

    return bundled_corpus().text


def test_evaluate_takes_a_window_past_the_trained_length_where_positions_allow(capsys, tmp_path):
    text = tmp_path / "sample.txt"
    text.write_text(R.held_out_text(_corpus())[:1000], encoding="utf-8")
    code, out, _ = run(capsys, "evaluate", "--checkpoint", "ctx-alibi", "--text-file", str(text), "--window", "128",
                       "--json", "--quiet")
    assert code == 0 and json.loads(out)["loss_nats_per_character"] > 0
    code, _out, err = run(capsys, "evaluate", "--checkpoint", "ctx-learned", "--text-file", str(text), "--window", "128",
                          "--quiet")
    assert code == 2 and err.count("\n") == 1 and "its learned position table has 64 rows" in err
