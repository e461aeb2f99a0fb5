"""The model library: bundled models, a Hugging Face cache laid out as the Hub lays it out, and the catalogue."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import torch
from safetensors.torch import save_file

from core.checkpoints import bundled_model_names, resolve_checkpoint
from core.model_library import CATALOGUE, cached_entries, catalogue_entries, find_catalogue, hub_cache_dir, library
from core.params import parameter_breakdown

COMMIT = "a" * 40
GPT2_CONFIG = {"model_type": "gpt2", "vocab_size": 11, "n_positions": 8, "n_embd": 8, "n_layer": 1, "n_head": 2}


def _gpt2_tensors(config: dict) -> dict[str, torch.Tensor]:
    d, v, t = config["n_embd"], config["vocab_size"], config["n_positions"]
    generator = torch.Generator().manual_seed(0)

    def rand(*shape):
        return torch.randn(*shape, generator=generator)

    tensors = {"transformer.wte.weight": rand(v, d), "transformer.wpe.weight": rand(t, d),
               "transformer.ln_f.weight": rand(d), "transformer.ln_f.bias": rand(d)}
    for i in range(config["n_layer"]):
        h = f"transformer.h.{i}."
        tensors.update({
            h + "ln_1.weight": rand(d), h + "ln_1.bias": rand(d), h + "ln_2.weight": rand(d), h + "ln_2.bias": rand(d),
            h + "attn.c_attn.weight": rand(d, 3 * d), h + "attn.c_attn.bias": rand(3 * d),
            h + "attn.c_proj.weight": rand(d, d), h + "attn.c_proj.bias": rand(d),
            h + "mlp.c_fc.weight": rand(d, 4 * d), h + "mlp.c_fc.bias": rand(4 * d),
            h + "mlp.c_proj.weight": rand(4 * d, d), h + "mlp.c_proj.bias": rand(d),
        })
    return tensors


def cache_repo(cache: Path, repo_id: str, files: dict[str, bytes], repo_type: str = "models") -> Path:
    """One repository in the Hub cache layout: blobs by hash, refs/main, a snapshot of symlinks to the blobs."""
    import hashlib

    repo = cache / f"{repo_type}--{repo_id.replace('/', '--')}"
    (repo / "blobs").mkdir(parents=True)
    (repo / "refs").mkdir()
    (repo / "refs" / "main").write_text(COMMIT)
    snapshot = repo / "snapshots" / COMMIT
    snapshot.mkdir(parents=True)
    for name, data in files.items():
        blob = repo / "blobs" / hashlib.sha256(data).hexdigest()
        blob.write_bytes(data)
        (snapshot / name).symlink_to(Path("../../blobs") / blob.name)
    return snapshot


def gpt2_files(tmp_path: Path) -> dict[str, bytes]:
    weights = tmp_path / "weights.safetensors"
    save_file(_gpt2_tensors(GPT2_CONFIG), str(weights))
    return {"config.json": json.dumps(GPT2_CONFIG).encode(), "model.safetensors": weights.read_bytes()}


@pytest.fixture
def cache(tmp_path, monkeypatch):
    root = tmp_path / "hub-cache"
    root.mkdir()
    monkeypatch.setenv("HF_HUB_CACHE", str(root))
    return root


def test_cache_location_follows_the_environment(tmp_path, monkeypatch):
    monkeypatch.delenv("HF_HUB_CACHE", raising=False)
    monkeypatch.setenv("HF_HOME", str(tmp_path / "home"))
    assert hub_cache_dir() == tmp_path / "home" / "hub"
    monkeypatch.setenv("HF_HUB_CACHE", str(tmp_path / "elsewhere"))
    assert hub_cache_dir() == tmp_path / "elsewhere"
    monkeypatch.delenv("HF_HUB_CACHE")
    monkeypatch.delenv("HF_HOME")
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    assert hub_cache_dir() == tmp_path / "xdg" / "huggingface" / "hub"


def test_cached_models_are_found_and_open(cache, tmp_path):
    snapshot = cache_repo(cache, "someone/tiny-gpt2", gpt2_files(tmp_path))
    cache_repo(cache, "someone/pickled", {"config.json": json.dumps(GPT2_CONFIG).encode(), "pytorch_model.bin": b"x"})
    cache_repo(cache, "someone/t5", {"config.json": b'{"model_type": "t5"}', "model.safetensors": b"x"})
    cache_repo(cache, "someone/corpus", {"data.txt": b"text"}, repo_type="datasets")
    entries = {entry.name: entry for entry in cached_entries()}
    assert sorted(entries) == ["someone/pickled", "someone/t5", "someone/tiny-gpt2"]  # datasets are not models
    gpt2 = entries["someone/tiny-gpt2"]
    assert gpt2.openable and gpt2.where == "cache" and gpt2.family == "gpt2"
    assert gpt2.path == snapshot
    assert gpt2.size_bytes == sum((snapshot / name).stat().st_size for name in ("config.json", "model.safetensors"))
    loaded = resolve_checkpoint(gpt2.path)
    assert gpt2.parameters == sum(p.numel() for p in loaded.model.parameters())
    assert "safetensors" in entries["someone/pickled"].problem and not entries["someone/pickled"].openable
    assert "'t5' is not one this app imports" in entries["someone/t5"].problem


def test_an_absent_cache_lists_nothing(tmp_path, monkeypatch):
    monkeypatch.setenv("HF_HUB_CACHE", str(tmp_path / "never-created"))
    assert cached_entries() == []


def test_catalogue_sizes_are_computed_from_configs():
    from core.hf_import import hf_to_model_config

    entries = catalogue_entries([])
    assert [entry.name for entry in entries] == [model.repo_id for model in CATALOGUE]
    for model, entry in zip(CATALOGUE, entries):
        config = hf_to_model_config(model.config, model.repo_id, model.repo_id)
        assert entry.parameters == parameter_breakdown(config).total
        assert entry.size_bytes is not None and entry.size_bytes >= entry.parameters * 2
        assert entry.path is None and not entry.openable
    by_name = {entry.name: entry.parameters for entry in entries}
    # GPT-2 small is the reading's 124,439,808; the others are the counts their model cards quote, rounded
    assert by_name["openai-community/gpt2"] == 124_439_808
    assert round(by_name["HuggingFaceTB/SmolLM2-135M"], -6) == 135_000_000
    assert round(by_name["Qwen/Qwen2.5-0.5B"], -7) == 490_000_000


def test_a_cached_catalogue_model_is_listed_once(cache, tmp_path):
    cache_repo(cache, "openai-community/gpt2", gpt2_files(tmp_path))
    names = [entry.name for entry in library()]
    assert names.count("openai-community/gpt2") == 1
    assert names[: len(bundled_model_names())] == bundled_model_names()
    cached = next(entry for entry in library() if entry.name == "openai-community/gpt2")
    assert cached.where == "cache" and "Transformer Explainer" in cached.about


@pytest.mark.parametrize("name", ["gpt2", "GPT-2 small", "openai-community/gpt2", "GPT2"])
def test_catalogue_names(name):
    assert find_catalogue(name).repo_id == "openai-community/gpt2"


def test_unknown_catalogue_name():
    assert find_catalogue("gpt5") is None
