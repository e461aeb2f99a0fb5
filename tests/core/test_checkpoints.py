"""Checkpoint folders: round trips, every way a folder can be wrong, and the bundled trained models."""

from __future__ import annotations

import json

import pytest
import torch
from safetensors import safe_open
from safetensors.torch import load_file, save_file

from core.checkpoints import (
    CONFIG_FILE,
    MODEL_FILE,
    TOKENIZER_FILE,
    CheckpointError,
    bundled_model_names,
    load_bundled,
    load_checkpoint,
    resolve_checkpoint,
    save_checkpoint,
)
from core.config import ModelConfig
from core.model import Transformer
from core.presets import get_preset
from core.tokenizers import CharTokenizer
from core.training import BUNDLED_RECIPES, CHECK_PREDICTIONS, evaluate_loss, split_corpus
from resources import resource_path

SMALL = {"vocab_size": 20, "context_length": 16, "d_model": 16, "n_heads": 2, "n_layers": 2, "d_ff": 32}


def small(preset: str) -> ModelConfig:
    """The preset's architecture at a size that builds in milliseconds."""
    changes = dict(SMALL)
    if get_preset(preset).n_kv_heads is not None:
        changes["n_kv_heads"] = 1
    return get_preset(preset).replace(**changes)


def tokens(config: ModelConfig, length: int = 10) -> torch.Tensor:
    return torch.randint(0, config.vocab_size, (2, length), generator=torch.Generator().manual_seed(1))  # (2, T)


@pytest.mark.parametrize(
    "preset", ["tiny-gpt", "tiny-llama", "textbook-block", "tiny-encoder", "tiny-encoder-decoder", "tiny-moe"]
)
def test_round_trip_gives_identical_logits(tmp_path, preset):
    config = small(preset)
    model = Transformer.from_seed(config, seed=3)
    tokenizer = CharTokenizer([chr(ord("a") + i) for i in range(config.vocab_size)])
    save_checkpoint(model, tmp_path / "ckpt", tokenizer=tokenizer, metadata={"note": "test"})

    loaded = load_checkpoint(tmp_path / "ckpt")

    assert loaded.config == config
    assert loaded.tokenizer is not None and loaded.tokenizer.to_json() == tokenizer.to_json()
    assert loaded.metadata == {"note": "test"}
    assert not loaded.model.training
    ids = tokens(config)
    with torch.no_grad():
        assert torch.equal(loaded.model(ids), model(ids))


def test_tied_head_is_stored_once_and_stays_tied(tmp_path):
    config = small("tiny-gpt")
    assert config.tie_embeddings
    save_checkpoint(Transformer.from_seed(config), tmp_path)
    with safe_open(str(tmp_path / MODEL_FILE), "pt") as handle:
        names = set(handle.keys())
    assert "tok_emb.weight" in names and "head.weight" not in names
    loaded = load_checkpoint(tmp_path)
    assert loaded.model.head.weight is loaded.model.tok_emb.weight


def test_untied_head_is_stored(tmp_path):
    save_checkpoint(Transformer.from_seed(small("tiny-llama")), tmp_path)
    with safe_open(str(tmp_path / MODEL_FILE), "pt") as handle:
        assert "head.weight" in set(handle.keys())


def test_checkpoint_without_tokenizer_loads_with_none(tmp_path):
    save_checkpoint(Transformer.from_seed(small("tiny-gpt")), tmp_path)
    assert not (tmp_path / TOKENIZER_FILE).exists()
    assert load_checkpoint(tmp_path).tokenizer is None


# ---- broken folders ---------------------------------------------------------------------------


@pytest.fixture
def saved(tmp_path):
    config = small("tiny-llama")
    tokenizer = CharTokenizer([chr(ord("a") + i) for i in range(config.vocab_size)])
    return save_checkpoint(Transformer.from_seed(config), tmp_path / "ckpt", tokenizer=tokenizer)


def _edit_config(folder, **changes):
    header = json.loads((folder / CONFIG_FILE).read_text())
    header["config"].update(changes)
    (folder / CONFIG_FILE).write_text(json.dumps(header))


def _edit_tensors(folder, edit):
    tensors = load_file(str(folder / MODEL_FILE))
    edit(tensors)
    save_file(tensors, str(folder / MODEL_FILE))


def test_missing_folder(tmp_path):
    with pytest.raises(CheckpointError, match="no checkpoint folder"):
        load_checkpoint(tmp_path / "absent")


@pytest.mark.parametrize("name", [MODEL_FILE, CONFIG_FILE, TOKENIZER_FILE])
def test_missing_file_is_named(saved, name):
    (saved / name).unlink()
    with pytest.raises(CheckpointError, match=f"missing {name}"):
        load_checkpoint(saved)


def test_corrupt_config_json(saved):
    (saved / CONFIG_FILE).write_text('{"format": ')
    with pytest.raises(CheckpointError, match="config.json is not valid JSON"):
        load_checkpoint(saved)


def test_corrupt_tokenizer_json(saved):
    (saved / TOKENIZER_FILE).write_text('{"kind": "char", "vocab": "abc"}')
    with pytest.raises(CheckpointError, match="tokenizer.json.*vocab"):
        load_checkpoint(saved)


@pytest.mark.parametrize("damage", ["garbage", "truncated", "empty"])
def test_corrupt_safetensors(saved, damage):
    path = saved / MODEL_FILE
    data = path.read_bytes()
    path.write_bytes(
        {"garbage": b"\x00not safetensors at all" * 10, "truncated": data[: len(data) // 2], "empty": b""}[damage]
    )
    with pytest.raises(CheckpointError, match="model.safetensors is not a readable safetensors file"):
        load_checkpoint(saved)


def test_not_our_format(saved):
    (saved / CONFIG_FILE).write_text(json.dumps({"d_model": 16}))
    with pytest.raises(CheckpointError, match="not a Transformer Explorer checkpoint"):
        load_checkpoint(saved)


def test_unknown_format_version(saved):
    header = json.loads((saved / CONFIG_FILE).read_text())
    header["format_version"] = 99
    (saved / CONFIG_FILE).write_text(json.dumps(header))
    with pytest.raises(CheckpointError, match="format version 99"):
        load_checkpoint(saved)


def test_invalid_config_names_the_field(saved):
    _edit_config(saved, n_heads=3)
    with pytest.raises(CheckpointError, match="invalid config: n_heads"):
        load_checkpoint(saved)


def test_unknown_config_field(saved):
    _edit_config(saved, wings=2)
    with pytest.raises(CheckpointError, match="wings"):
        load_checkpoint(saved)


def test_shape_mismatch_names_tensor_and_shapes(saved):
    _edit_config(saved, d_ff=64)
    with pytest.raises(
        CheckpointError,
        match=r"tensor blocks\.0\.ffn\.(gate|up)\.weight has shape \[32, 16\] but the config needs \[64, 16\]",
    ):
        load_checkpoint(saved)


def test_missing_tensor_is_named(saved):
    _edit_tensors(saved, lambda t: t.pop("blocks.1.norm2.weight"))
    with pytest.raises(CheckpointError, match=r"missing tensor blocks\.1\.norm2\.weight"):
        load_checkpoint(saved)


def test_extra_tensor_is_named(saved):
    _edit_tensors(saved, lambda t: t.update({"blocks.7.attn.qkv.weight": torch.zeros(2, 2)}))
    with pytest.raises(CheckpointError, match=r"blocks\.7\.attn\.qkv\.weight not part of a model of this config"):
        load_checkpoint(saved)


def test_more_layers_in_config_than_in_weights(saved):
    _edit_config(saved, n_layers=3)
    with pytest.raises(CheckpointError, match=r"missing tensors blocks\.2\."):
        load_checkpoint(saved)


def test_non_finite_weights(saved):
    def poison(tensors):
        tensors["tok_emb.weight"][0, 0] = float("nan")

    _edit_tensors(saved, poison)
    with pytest.raises(CheckpointError, match="tok_emb.weight holds NaN"):
        load_checkpoint(saved)


def test_integer_weights(saved):
    _edit_tensors(saved, lambda t: t.update({"final_norm.weight": torch.ones(16, dtype=torch.int32)}))
    with pytest.raises(CheckpointError, match="final_norm.weight holds torch.int32"):
        load_checkpoint(saved)


def test_tokenizer_larger_than_vocabulary(saved):
    (saved / TOKENIZER_FILE).write_text(json.dumps({"kind": "char", "vocab": [chr(65 + i) for i in range(30)]}))
    with pytest.raises(CheckpointError, match="tokenizer has 30 tokens but the model's vocabulary holds 20"):
        load_checkpoint(saved)


def test_half_precision_weights_load_as_float32(saved):
    _edit_tensors(saved, lambda t: t.update({name: x.half() for name, x in t.items()}))
    loaded = load_checkpoint(saved)
    assert all(p.dtype == torch.float32 for p in loaded.model.parameters())


def test_resolve_rejects_unknown_names_and_files(tmp_path):
    with pytest.raises(CheckpointError, match="neither a bundled model"):
        resolve_checkpoint("no-such-model")
    (tmp_path / "file.txt").write_text("x")
    with pytest.raises(CheckpointError, match="not a folder"):
        resolve_checkpoint(tmp_path / "file.txt")
    (tmp_path / CONFIG_FILE).write_text("{}")
    with pytest.raises(CheckpointError, match="neither a Transformer Explorer checkpoint nor a Hugging Face config"):
        resolve_checkpoint(tmp_path)


def test_resolve_opens_our_folders(saved):
    assert resolve_checkpoint(saved).config == load_checkpoint(saved).config
    assert resolve_checkpoint(str(saved)).config.name == "tiny-llama"


def test_unknown_bundled_name():
    with pytest.raises(CheckpointError, match="no bundled model named 'nope'"):
        load_bundled("nope")


# ---- bundled models ---------------------------------------------------------------------------


def test_bundled_models_are_listed():
    assert {"tiny-gpt", "tiny-llama"} <= set(bundled_model_names())


@pytest.fixture(scope="module")
def validation_ids():
    text = resource_path("tinyshakespeare.txt").read_text(encoding="utf-8")
    tokenizer = CharTokenizer.from_text(text)
    return split_corpus(torch.tensor(tokenizer.encode(text)))[1]


@pytest.mark.parametrize("name", ["tiny-gpt", "tiny-llama"])
def test_bundled_model_loads_and_reaches_its_recorded_validation_loss(name, validation_ids):
    loaded = resolve_checkpoint(name)
    assert loaded.source == f"bundled {name}"
    assert loaded.config == get_preset(name)
    assert loaded.tokenizer is not None and loaded.tokenizer.vocab_size == 65
    folder = resource_path("models", name)
    assert sum(path.stat().st_size for path in folder.iterdir()) < 5_000_000
    record = loaded.metadata
    assert record["preset"] == name and record["corpus"] == "tinyshakespeare.txt"
    assert record["settings"] == {**record["settings"], **BUNDLED_RECIPES[name]}  # the CLI's default recipe
    assert record["val_loss_nats_per_char"] <= 1.9
    # Re-score the first 16,384 validation predictions (the whole split takes several seconds).
    check = record["check_loss"]
    assert check["predictions"] == CHECK_PREDICTIONS
    assert evaluate_loss(loaded.model, validation_ids[: CHECK_PREDICTIONS + 1]) == pytest.approx(
        check["loss"], abs=1e-3
    )
