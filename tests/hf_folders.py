"""Small random Hugging Face model folders, each with a real tokenizer trained on the bundled corpus.

Every folder is written by `transformers` itself (model and tokenizer save_pretrained), so it is
laid out exactly as a folder from the Hub, and `transformers` is the reference the tests compare to.
Weights are redrawn with a larger spread than Hugging Face's N(0, 0.02) initialisation, so that a
wrong permutation or transpose moves the logits by far more than the 1e-4 tolerance.
"""

from __future__ import annotations

import functools
import json
from pathlib import Path

import torch

from resources import resource_path

CORPUS_SLICE = 40_000  # characters of Shakespeare the test tokenizers are trained on (fast: ~0.1 s)
SAMPLE_TEXT = "ROMEO: To be, or not to be,\nthat is the question."


def _transformers():
    import transformers

    return transformers


@functools.cache
def _corpus() -> str:
    return resource_path("tinyshakespeare.txt").read_text(encoding="utf-8")[:CORPUS_SLICE]


@functools.cache
def byte_level_vocab(vocab_size: int = 400) -> tuple[dict[str, int], list[tuple[str, str]]]:
    """(vocab, merges) of a byte-level BPE like GPT-2's, with <|endoftext|> as id 0."""
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers

    tokenizer = Tokenizer(models.BPE())
    tokenizer.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tokenizer.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(
        vocab_size=vocab_size,
        special_tokens=["<|endoftext|>"],
        initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
        show_progress=False,
    )
    tokenizer.train_from_iterator([_corpus()], trainer)
    model = json.loads(tokenizer.to_str())["model"]
    return model["vocab"], [tuple(merge) for merge in model["merges"]]


@functools.cache
def sentencepiece_vocab(vocab_size: int = 300) -> tuple[dict[str, int], list[tuple[str, str]]]:
    """(vocab, merges) of a SentencePiece-style BPE (▁ for spaces) with <unk>, <s>, </s> as ids 0-2."""
    from tokenizers import SentencePieceBPETokenizer

    tokenizer = SentencePieceBPETokenizer()
    tokenizer.train_from_iterator(
        [_corpus()], vocab_size=vocab_size, special_tokens=["<unk>", "<s>", "</s>"], show_progress=False
    )
    model = json.loads(tokenizer._tokenizer.to_str())["model"]
    return model["vocab"], [tuple(merge) for merge in model["merges"]]


def spread_weights(model: torch.nn.Module, seed: int = 0) -> None:
    generator = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        for name, param in model.named_parameters():
            if "norm" in name or name.split(".")[-2].startswith("ln_"):
                param.copy_(1 + 0.1 * torch.randn(param.shape, generator=generator))
            else:
                param.copy_(0.3 * torch.randn(param.shape, generator=generator))


def _finish(model, folder: Path, seed: int) -> None:
    model.eval()
    spread_weights(model, seed)
    if model.config.tie_word_embeddings:
        model.tie_weights()
    model.save_pretrained(str(folder), safe_serialization=True)


def gpt2_folder(folder: Path, layout: str = "tokenizer.json", seed: int = 0) -> Path:
    """GPT-2 with its tokenizer as tokenizer.json, or in the original vocab.json + merges.txt layout."""
    transformers = _transformers()
    vocab, merges = byte_level_vocab()
    folder.mkdir(parents=True, exist_ok=True)
    torch.manual_seed(seed)
    config = transformers.GPT2Config(
        vocab_size=len(vocab), n_positions=64, n_embd=32, n_layer=2, n_head=4, bos_token_id=0, eos_token_id=0
    )
    _finish(transformers.GPT2LMHeadModel(config), folder, seed)
    if layout == "tokenizer.json":
        transformers.GPT2Tokenizer(vocab=vocab, merges=list(merges)).save_pretrained(str(folder))
    elif layout == "vocab+merges":
        (folder / "vocab.json").write_text(json.dumps(vocab, ensure_ascii=False), encoding="utf-8")
        lines = ["#version: 0.2", *(" ".join(pair) for pair in merges)]
        (folder / "merges.txt").write_text("\n".join(lines) + "\n", encoding="utf-8")
    else:
        raise ValueError(layout)
    return folder


def llama_folder(
    folder: Path, seed: int = 0, bos_in_post_processor: bool = True, add_bos_token: bool | None = None, **overrides
) -> Path:
    """Llama with a SentencePiece-style tokenizer whose post-processor adds <s> (unless told otherwise).

    add_bos_token, when given, is written into tokenizer_config.json afterwards.
    """
    transformers = _transformers()
    vocab, merges = sentencepiece_vocab()
    folder.mkdir(parents=True, exist_ok=True)
    settings = {
        "vocab_size": len(vocab),
        "hidden_size": 32,
        "intermediate_size": 48,
        "num_hidden_layers": 2,
        "num_attention_heads": 4,
        "num_key_value_heads": 2,
        "max_position_embeddings": 64,
        "rope_theta": 1000.0,
        "bos_token_id": 1,
        "eos_token_id": 2,
        "tie_word_embeddings": False,
    }
    settings.update(overrides)
    torch.manual_seed(seed)
    _finish(transformers.LlamaForCausalLM(transformers.LlamaConfig(**settings)), folder, seed)
    tokenizer = transformers.LlamaTokenizer(vocab=vocab, merges=list(merges), add_bos_token=bos_in_post_processor)
    tokenizer.save_pretrained(str(folder))
    if add_bos_token is not None:
        path = folder / "tokenizer_config.json"
        config = json.loads(path.read_text(encoding="utf-8"))
        config["add_bos_token"] = add_bos_token
        path.write_text(json.dumps(config), encoding="utf-8")
    return folder


def qwen2_folder(folder: Path, seed: int = 0, **overrides) -> Path:
    """Qwen2: Llama with q, k, v biases, and a byte-level BPE tokenizer."""
    transformers = _transformers()
    vocab, merges = byte_level_vocab()
    folder.mkdir(parents=True, exist_ok=True)
    settings = {
        "vocab_size": len(vocab),
        "hidden_size": 32,
        "intermediate_size": 48,
        "num_hidden_layers": 2,
        "num_attention_heads": 4,
        "num_key_value_heads": 2,
        "max_position_embeddings": 64,
        "rope_theta": 1000.0,
        "tie_word_embeddings": True,
    }
    settings.update(overrides)
    torch.manual_seed(seed)
    _finish(transformers.Qwen2ForCausalLM(transformers.Qwen2Config(**settings)), folder, seed)
    transformers.Qwen2Tokenizer(vocab=vocab, merges=list(merges)).save_pretrained(str(folder))
    return folder


def reference_logits(folder: Path, text: str) -> tuple[list[int], torch.Tensor]:
    """(ids, logits (T, V)) of `text` through transformers' own tokenizer and model for the folder."""
    transformers = _transformers()
    tokenizer = transformers.AutoTokenizer.from_pretrained(str(folder))
    ids = tokenizer(text)["input_ids"]
    model = transformers.AutoModelForCausalLM.from_pretrained(str(folder)).eval()
    with torch.no_grad():
        logits = model(torch.tensor([ids])).logits[0]  # (T, V)
    return list(ids), logits
