"""Going deeper: trained length and accepted length, loss against input length, the ladder's recipe and record."""

from __future__ import annotations

import json

import pytest
import torch
import torch.nn.functional as F

from core.config import MAX_STRETCH_LENGTH, ModelConfig
from core.going_deeper import recipe as R
from core.going_deeper.extrapolation import cut_windows, extrapolate
from core.going_deeper.ladder import HELPS, HURTS, WITHIN, LadderError, read_record, verdict
from core.model import SequenceError, Transformer, count_parameters

TRAINED = 8


def small(positional: str) -> Transformer:
    config = ModelConfig(name=f"small-{positional}", vocab_size=11, context_length=TRAINED, d_model=16, n_heads=2,
                         n_layers=1, d_ff=32, positional=positional)
    return Transformer.from_seed(config, seed=0)


# ---- trained length and accepted length --------------------------------------------------------------------------
@pytest.mark.parametrize("positional", ["sinusoidal", "rope", "alibi", "none"])
def test_a_scheme_that_computes_positions_accepts_past_its_trained_length_up_to_the_bound(positional):
    model = small(positional)
    assert model.config.context_length == TRAINED and model.config.accepted_length == MAX_STRETCH_LENGTH
    assert model(torch.zeros(1, 5 * TRAINED, dtype=torch.long)).shape == (1, 5 * TRAINED, 11)
    with pytest.raises(SequenceError, match=f"exceed the 1,024 the app accepts for {positional} positions "
                                            f"\\(trained at {TRAINED}\\)"):
        model(torch.zeros(1, MAX_STRETCH_LENGTH + 1, dtype=torch.long))


def test_a_learned_table_accepts_its_rows_and_refuses_more_naming_its_size():
    model = small("learned")
    assert model.config.accepted_length == TRAINED
    assert model(torch.zeros(1, TRAINED, dtype=torch.long)).shape == (1, TRAINED, 11)
    with pytest.raises(SequenceError, match="its learned position table has 8 rows"):
        model(torch.zeros(1, TRAINED + 1, dtype=torch.long))


def test_an_old_checkpoint_keeps_its_context_length_as_its_trained_length():
    config = ModelConfig.from_dict({"positional": "rope", "context_length": 256})  # no new field to read
    assert config.context_length == 256 and config.accepted_length == MAX_STRETCH_LENGTH
    assert ModelConfig.from_dict({"positional": "rope", "context_length": 4096}).accepted_length == 4096


# ---- windows and loss against length ------------------------------------------------------------------------------
def test_windows_are_consecutive_and_a_short_tail_is_dropped():
    windows = cut_windows(torch.arange(11), 3)
    assert windows.tolist() == [[0, 1, 2], [3, 4, 5], [6, 7, 8]]
    assert cut_windows(torch.arange(2), 3).shape == (0, 3)


def _by_hand(model: Transformer, ids: torch.Tensor, length: int) -> tuple[float, float | None]:
    """Every window on its own, every prediction's loss kept: the mean, and the mean past TRAINED."""
    losses, beyond = [], []
    with torch.no_grad():
        for start in range(0, len(ids) - length + 1, length):
            window = ids[start : start + length]
            logits = model(window[:-1].unsqueeze(0))[0]  # (L-1, V)
            for position in range(length - 1):
                loss = float(F.cross_entropy(logits[position], window[position + 1]))
                losses.append(loss)
                if position >= TRAINED:
                    beyond.append(loss)
    return sum(losses) / len(losses), (sum(beyond) / len(beyond) if beyond else None)


@pytest.mark.parametrize("positional", ["rope", "alibi"])
def test_loss_against_length_is_every_prediction_of_every_window(positional):
    model = small(positional).eval()
    ids = torch.randint(0, 11, (101,), generator=torch.Generator().manual_seed(1))
    rows = extrapolate(model, ids, [TRAINED, 3 * TRAINED], TRAINED)
    for row, length in zip(rows, (TRAINED, 3 * TRAINED)):
        mean, beyond = _by_hand(model, ids, length)
        assert row.windows == 101 // length and row.refused == ""
        assert row.nats_per_char == pytest.approx(mean, rel=1e-5)
        if beyond is None:
            assert row.nats_per_char_beyond is None
        else:
            assert row.nats_per_char_beyond == pytest.approx(beyond, rel=1e-5)


def test_a_learned_table_refuses_a_length_past_its_rows_as_a_row():
    rows = extrapolate(small("learned").eval(), torch.zeros(100, dtype=torch.long), [TRAINED + 1, TRAINED + 2])
    assert rows[0].nats_per_char is not None  # 9 characters: 8 inputs, the last only a target
    assert rows[1].nats_per_char is None and "learned position table has 8 rows" in rows[1].refused
    assert rows[1].to_dict()["refused"] == rows[1].refused


# ---- the recipe ---------------------------------------------------------------------------------------------------
def _changed(before: ModelConfig, after: ModelConfig) -> set[str]:
    return {name for name in ModelConfig.field_names() if name != "name" and getattr(before, name) != getattr(after, name)}


def test_the_ladder_climbs_from_2017_to_today_one_part_at_a_time_at_one_size():
    configs = [config for _rung, config in R.rung_configs()]
    first, last = configs[0], configs[-1]
    assert len(configs) >= 6
    assert (first.norm_placement, first.norm, first.activation, first.positional, first.bias) == (
        "post", "layernorm", "relu", "sinusoidal", True)
    assert (last.norm_placement, last.norm, last.activation, last.positional, last.bias) == (
        "pre", "rmsnorm", "swiglu", "rope", False)
    assert last.kv_heads < last.n_heads
    for before, after in zip(configs, configs[1:]):
        assert 1 <= len(_changed(before, after)) <= 2, after.name
    counts = [count_parameters(Transformer.on_meta(config)) for config in configs]
    assert max(counts) <= 1.02 * min(counts)


def test_the_context_models_differ_only_in_positions_and_interpolation_divides_by_four():
    configs = R.context_configs()
    for config in configs[1:]:
        assert _changed(configs[0], config) == {"positional"}
    rope = next(config for config in configs if config.positional == "rope")
    assert _changed(rope, R.interpolation_config(rope)) == {"rope_scale", "context_length"}
    assert R.interpolation_config(rope).rope_scale * R.TRAINED_LENGTH == R.PI_LENGTH


# ---- the ladder's record ------------------------------------------------------------------------------------------
def test_a_rung_counts_only_outside_the_seeds_spread():
    assert verdict([2.0, 2.1], [1.8, 1.9]) == HELPS
    assert verdict([2.0, 2.1], [2.2, 2.3]) == HURTS
    assert verdict([2.0, 2.1], [1.9, 2.05]) == WITHIN


def test_a_hostile_record_is_refused_in_words(tmp_path):
    path = tmp_path / "ladder.json"
    path.write_text(json.dumps({"rungs": [{"name": "a", "change": "b", "model": "m", "parameters": 1,
                                           "seeds": [{"seed": 0, "nats_per_char": "low", "seconds": 1}]}]}))
    with pytest.raises(LadderError, match="rung 1 nats_per_char: expected a finite number"):
        read_record(path)
    path.write_text("[1, 2]")
    with pytest.raises(LadderError, match="non-empty list of rungs"):
        read_record(path)


def test_the_trainer_writes_the_record_and_the_bundled_seed(tmp_path):
    from core.corpus import bundled_corpus
    from core.going_deeper.trainer import train_ladder

    text = bundled_corpus().text[:20_000]
    record = train_ladder(tmp_path, seeds=(0, 1), rung_names=["2017", "pre-norm"], steps=1, text=text)
    assert json.loads((tmp_path / "ladder.json").read_text()) == json.loads(json.dumps(record))
    assert [rung["name"] for rung in record["rungs"]] == ["2017", "pre-norm"]
    for rung in record["rungs"]:
        assert [seed["seed"] for seed in rung["seeds"]] == [0, 1]
        assert rung["spread_nats_per_char"] >= 0 and (tmp_path / rung["model"] / "training.json").is_file()
        saved = json.loads((tmp_path / rung["model"] / "training.json").read_text())
        assert saved["val_loss_nats_per_char"] == rung["seeds"][0]["nats_per_char"] and saved["rung"] == rung["name"]
    assert record["rungs"][0]["against_previous"] is None and record["rungs"][1]["against_previous"] in (
        HELPS, HURTS, WITHIN)


def test_the_held_out_text_is_the_trainer_s_validation_split():
    from core.corpus import bundled_corpus
    from core.tokenizers import CharTokenizer
    from core.training import VALIDATION_FRACTION, split_corpus

    text = bundled_corpus().text
    tokenizer = CharTokenizer.from_text(text)
    assert R.HELD_OUT_FRACTION == VALIDATION_FRACTION
    assert tokenizer.encode(R.held_out_text(text)) == split_corpus(torch.tensor(tokenizer.encode(text)))[1].tolist()
