"""`patch`, `attribute`, `induction`: the JSON the issue names, equal to the experiments, and one-line refusals."""

from __future__ import annotations

import json

import numpy as np
import pytest

from core.checkpoints import load_bundled
from tests.cli.helpers import run
from tests.core import hf_reference_hooks as reference


def test_patch_json_has_the_metrics_and_a_layer_by_position_map(capsys):
    code, out, err = run(capsys, "patch", "--checkpoint", "tiny-gpt", "--clean", "ROMEO: to be or",
                         "--corrupt", "JULIE: to be or", "--answer", " ", "--foil", "e", "--site", "resid_pre", "--json")
    assert code == 0 and err == ""
    data = json.loads(out)
    loaded = load_bundled("tiny-gpt")
    assert data["clean"] == loaded.tokenizer.encode("ROMEO: to be or")
    values = np.array(data["values"])
    assert values.shape == (loaded.config.n_layers, len(data["clean"]))
    assert data["patch_all_equals_clean"] == [True] * loaded.config.n_layers and data["patch_none_equals_corrupt"]
    # Patching the whole edited prefix is not one cell, but an unedited position before block 0 changes nothing.
    assert values[0, -1] == pytest.approx(data["corrupt_metric"], abs=1e-4)
    assert data["clean_metric"] != data["corrupt_metric"]


def test_patch_heads_on_a_transformers_folder_match_plain_hooks(capsys, tmp_path):
    transformers = pytest.importorskip("transformers")
    from tests import hf_folders

    folder = hf_folders.llama_folder(tmp_path / "llama")
    code, out, _err = run(capsys, "patch", "--checkpoint", str(folder), "--clean-ids", "11,25,37,42,58",
                          "--corrupt-ids", "11,25,99,42,58", "--answer-id", "80", "--foil-id", "90", "--site", "head",
                          "--json")
    assert code == 0
    data = json.loads(out)
    hf_model = transformers.AutoModelForCausalLM.from_pretrained(str(folder)).eval()
    expected = reference.patching_map(hf_model, [11, 25, 37, 42, 58], [11, 25, 99, 42, 58], 80, 90, "head").numpy()
    assert np.allclose(data["values"], expected, atol=1e-4 * (1 + np.abs(expected).max()))


def test_attribute_json_components_sum_to_total(capsys):
    code, out, err = run(capsys, "attribute", "--checkpoint", "tiny-llama", "--text", "ROMEO: to be or no",
                         "--answer", "t", "--foil", "e", "--json")
    assert code == 0 and err == ""
    data = json.loads(out)
    assert {"name", "kind", "layer", "head", "value"} <= set(data["components"][0])
    heads = [c for c in data["components"] if c["kind"] == "head"]
    assert len(heads) == 4 * 4
    total = sum(c["value"] for c in data["components"])
    assert total == pytest.approx(data["total"], abs=data["tolerance"])
    assert data["position"] == len("ROMEO: to be or no") - 1


def test_induction_json_has_scores_per_layer_and_head(capsys):
    code, out, err = run(capsys, "induction", "--checkpoint", "tiny-gpt", "--length", "8", "--seed", "3", "--json")
    assert code == 0 and err == ""
    data = json.loads(out)
    assert data["period"] == 8 and data["repeat_start"] == 8
    assert data["tokens"][:8] == data["tokens"][8:]
    assert np.array(data["induction_score"]).shape == (4, 4)
    assert np.array(data["previous_token_score"]).shape == (4, 4)
    assert len(data["loss_first"]) == len(data["loss_second"]) == 7


@pytest.mark.parametrize("argv, message", [
    (["patch", "--checkpoint", "tiny-gpt", "--clean", "abc", "--corrupt", "abcd", "--answer", "a"], "without adding"),
    (["patch", "--checkpoint", "tiny-gpt", "--clean", "abc", "--corrupt", "abd", "--answer", "ab"], "is 2 tokens"),
    (["patch", "--checkpoint", "tiny-gpt", "--clean-ids", "1,2", "--corrupt-ids", "1,3", "--answer-id", "999"],
     "outside the vocabulary"),
    (["attribute", "--checkpoint", "tiny-gpt", "--text", "abc", "--answer", "a", "--position", "9"], "outside the sequence"),
    (["induction", "--checkpoint", "tiny-gpt", "--length", "200"], "context length"),
    (["induction", "--checkpoint", "no-such-model"], "neither a bundled model"),
])
def test_bad_input_is_one_line_and_exit_2(capsys, argv, message):
    code, out, err = run(capsys, *argv)
    assert code == 2 and out == ""
    assert len(err.strip().splitlines()) == 1 and message in err


def test_patching_the_ffn_of_an_attention_only_model_is_refused_in_one_line(capsys, tmp_path):
    from core.model import Transformer
    from core.model_saving import save_model
    from core.presets import get_preset

    folder = save_model(Transformer.from_seed(get_preset("tiny-induction-attn"), seed=0), tmp_path / "attn-only")
    argv = ["patch", "--checkpoint", str(folder), "--clean-ids", "1,2,3", "--corrupt-ids", "1,5,3", "--answer-id", "4"]
    code, out, err = run(capsys, *argv, "--site", "mlp_out")
    assert code == 2 and out == ""
    assert len(err.strip().splitlines()) == 1
    assert "attention-only tiny-induction-attn has no FFN in its blocks, so there is no mlp_out to patch" in err
    code, out, _err = run(capsys, *argv, "--site", "attn_out", "--json")
    assert code == 0 and np.array(json.loads(out)["values"]).shape == (2, 3)


def test_patch_says_undefined_where_clean_and_corrupted_agree_and_its_json_stays_json(capsys):
    """The corrupted token after the metric's position: both metrics are the same, so no cell has a normalised value;
    the table says so in words (never "nan") and the JSON holds null (never NaN, which is not JSON)."""
    argv = ("patch", "--checkpoint", "tiny-gpt", "--clean", "ROMEO: to be or", "--corrupt", "ROMEO: to be ox",
            "--answer", " ", "--position", "3")
    code, out, err = run(capsys, *argv)
    assert code == 0 and err == ""
    assert "normalised (0 = corrupted, 1 = clean): undefined: clean and corrupted agree" in out
    assert "nan" not in out.lower()
    code, out, err = run(capsys, *argv, "--json")
    assert code == 0

    def refuse(constant):
        raise AssertionError(f"{constant} is not JSON")

    data = json.loads(out, parse_constant=refuse)
    assert data["clean_metric"] == data["corrupt_metric"]
    assert data["normalised_undefined"] == "undefined: clean and corrupted agree"
    assert all(value is None for row in data["normalised"] for value in row)
    assert all(isinstance(value, float) for row in data["values"] for value in row)
