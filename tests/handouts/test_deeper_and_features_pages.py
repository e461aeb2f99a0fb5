"""The Going deeper and Features panels on a page: the figures the window draws, checked against numbers worked out
here (a context model's held-out loss, the ladder's seeds and means, a feature's unembedding effect, the
next-token distribution without an edit)."""

from __future__ import annotations

import re
from dataclasses import replace

import numpy as np
import pytest
import torch

from core.handouts.collect import ViewRequest, default_view, view_figures
from core.handouts.collect_features import FEATURES_TRAIN_NOTE
from core.presets import PRESETS

FLOAT32_REL = 1e-5  # a page keeps float32's seven significant digits


def _layer_data(figure, mark):
    return next(layer["data"]["values"] for layer in figure.spec["layer"]
                if (layer["mark"]["type"] if isinstance(layer["mark"], dict) else layer["mark"]) == mark)


def test_stretching_marks_the_trained_length_and_stops_the_learned_table_where_it_refuses():
    from core.checkpoints import load_bundled
    from core.corpus import bundled_corpus
    from core.going_deeper.recipe import TRAINED_LENGTH, held_out_text
    from core.going_deeper.stretching import SAMPLE_CHARS
    from core.tokenizers import CharTokenizer

    result = view_figures(default_view("Going deeper"))
    plot = result.figures[0]
    points = _layer_data(plot, "line")
    learned = [row["x"] for row in points if row["series"] == "ctx-learned"]
    assert max(learned) == TRAINED_LENGTH  # no point past the table's last row
    refusal = _layer_data(plot, "point")
    assert [row["x"] for row in refusal] == [2 * TRAINED_LENGTH] and "refuses" in refusal[0]["text"]
    assert _layer_data(plot, "rule")[0]["x"] == TRAINED_LENGTH
    # ctx-alibi's loss at the trained length, worked out here: windows of 64 cut from the held-out sample
    text = bundled_corpus().text
    ids = torch.tensor(CharTokenizer.from_text(text).encode(held_out_text(text)[:SAMPLE_CHARS]))
    windows = ids[: len(ids) // TRAINED_LENGTH * TRAINED_LENGTH].view(-1, TRAINED_LENGTH)  # (W, 64)
    model = load_bundled("ctx-alibi").model.eval()
    with torch.no_grad():
        log_probs = torch.log_softmax(model(windows[:, :-1]).double(), dim=-1)  # (W, 63, V)
    expected = -log_probs.gather(-1, windows[:, 1:, None]).mean().item()
    shown = next(row["y"] for row in points if row["series"] == "ctx-alibi" and row["x"] == TRAINED_LENGTH)
    assert shown == pytest.approx(expected, rel=1e-4)  # float32 logits summed over 2,016 predictions
    quoted = re.search(rf"ctx-alibi (\d+\.\d{{3}}) at {TRAINED_LENGTH},", result.quotes["stretching_summary"])
    assert quoted and float(quoted.group(1)) == pytest.approx(expected, abs=6e-4)  # printed to three decimals


def test_the_ladder_shows_each_seed_and_the_mean_of_the_seeds():
    import json

    from resources import resource_path

    record = json.loads(resource_path("going_deeper", "ladder.json").read_text(encoding="utf-8"))
    result = view_figures(replace(default_view("Going deeper"), settings={"tab": "Ladder"}))
    plot = result.figures[0]
    seeds = _layer_data(plot, "point")
    means = _layer_data(plot, "tick")
    assert len(seeds) == sum(len(rung["seeds"]) for rung in record["rungs"])
    for index, rung in enumerate(record["rungs"]):
        losses = [seed["nats_per_char"] for seed in rung["seeds"]]
        shown = [row["y"] for row in seeds if round(row["rung"]) == index]
        assert shown == pytest.approx(losses, rel=FLOAT32_REL)
        assert means[index]["y"] == pytest.approx(sum(losses) / len(losses), rel=FLOAT32_REL)
        assert (means[index]["low"], means[index]["high"]) == pytest.approx((min(losses), max(losses)), rel=1e-6)
    assert f"{len(record['rungs'])} rungs" in result.quotes["ladder_summary"]


def test_the_feature_dashboard_pushes_up_the_tokens_of_its_decoder_direction():
    from safetensors.torch import load_file

    from core.checkpoints import load_bundled
    from core.features.library import bundled_sae_names, sae_path
    from core.features.sae import WEIGHTS_FILE

    feature = 100
    result = view_figures(replace(default_view("Features"), settings={"tab": "Feature", "feature": feature}))
    parts = [figure.part for figure in result.figures]
    assert parts[:3] == ["feature_contexts", "feature_histogram", "feature_logits"]
    head = load_bundled(PRESETS["tiny-gpt"].name).model.head.weight.detach().double()  # (V, d)
    direction = load_file(str(sae_path(bundled_sae_names()[0]) / WEIGHTS_FILE))["W_dec"][feature].double()  # (d,)
    effect = (head @ direction).numpy()  # (V,)
    shown = [row["v"] for row in result.figures[2].spec["data"]["values"]]
    count = len(shown) // 2
    assert shown[:count] == pytest.approx(np.sort(effect)[::-1][:count], rel=FLOAT32_REL, abs=1e-6)
    assert shown[count:] == pytest.approx(np.sort(effect)[:count], rel=FLOAT32_REL, abs=1e-6)
    fired = [row["v"] for row in result.figures[0].spec["data"]["values"] if row["fire"]]
    assert fired == sorted(fired, reverse=True) and len(fired) > 0  # strongest first, one firing token each
    assert f"largest activation {fired[0]:.3f}" in result.quotes["feature_summary"]
    assert sum(row["v"] for row in result.figures[1].spec["data"]["values"]) > 0


def test_steering_bars_without_the_edit_are_the_models_next_token_distribution():
    from core.checkpoints import load_bundled

    text = "ROMEO: I will go to the"
    request = ViewRequest("Features", PRESETS["tiny-gpt"], text=text,
                          settings={"tab": "Steer", "feature": 100, "alpha": 8.0})
    result = view_figures(request)
    bundled = load_bundled("tiny-gpt")
    with torch.no_grad():
        logits = bundled.model.eval()(torch.tensor([bundled.tokenizer.encode(text)]))[0, -1].double()  # (V,)
    probs = torch.softmax(logits, -1).numpy()  # (V,)
    data = result.figures[0].spec["data"]["values"]
    without = [row["p"] for row in data if row["edit"] == "without the edit"]
    assert without[:10] == pytest.approx(np.sort(probs)[::-1][:10], rel=1e-4, abs=1e-7)
    assert "moved by" in result.quotes["steer_summary"] and result.values["identical"] == "no"
    still = view_figures(replace(request, settings={"tab": "Steer", "feature": 100, "alpha": 0.0}))
    pairs = still.figures[0].spec["data"]["values"]
    half = len(pairs) // 2
    assert [row["p"] for row in pairs[:half]] == [row["p"] for row in pairs[half:]]  # the SAE's error term is kept
    assert "bit-identical" in still.quotes["steer_summary"]


def test_features_refuses_a_model_its_sae_does_not_read_and_train_says_it_happens_in_the_app():
    from core.lesson_runs import StepProblem

    with pytest.raises(StepProblem, match="this SAE reads tiny-gpt"):
        view_figures(ViewRequest("Features", PRESETS["tiny-llama"], settings={"tab": "Feature"}))
    train = view_figures(replace(default_view("Features"), settings={"tab": "Train"}))
    assert train.note == FEATURES_TRAIN_NOTE and not train.figures


def test_the_tuned_lens_column_is_drawn_beside_the_logit_lens():
    settings = {"follow_position": 23, "tuned_lens": True}
    request = ViewRequest("Architecture", PRESETS["tiny-llama"], text="ROMEO: to be or not to b", settings=settings)
    result = view_figures(request)
    header = result.figures[1].table[0]
    assert header[-1].startswith("tuned lens")
    assert result.values["tuned_kl_mean"] < result.values["logit_kl_mean"]  # the translators were trained for this
    plain = view_figures(replace(request, settings={**settings, "tuned_lens": False}))
    assert not plain.figures[1].table[0][-1].startswith("tuned lens")
