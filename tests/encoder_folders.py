"""Small random BERT, DistilBERT and Marian folders written by `transformers` itself (save_pretrained).

As in tests/hf_folders.py, weights are redrawn with a wide spread so that a wrong transpose,
permutation or missing bias moves the logits far beyond the 1e-4 tolerance; the reference is the
model `transformers` loads back from the folder.
"""

from __future__ import annotations

import functools
from pathlib import Path

import torch

from tests.hf_folders import _corpus, spread_weights

VOCAB = 200


@functools.cache
def wordpiece_vocab() -> dict[str, int]:
    """A lower-casing WordPiece vocabulary like BERT's, trained on the bundled corpus."""
    from tokenizers import BertWordPieceTokenizer

    tokenizer = BertWordPieceTokenizer(lowercase=True)
    tokenizer.train_from_iterator([_corpus()], vocab_size=VOCAB, show_progress=False,
                                  special_tokens=["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"])
    return tokenizer.get_vocab()


def _save(model: torch.nn.Module, folder: Path, seed: int) -> Path:
    model.eval()
    spread_weights(model, seed)
    with torch.no_grad():
        for name, buffer in model.named_buffers():
            if name == "final_logits_bias":  # zeros as initialised; a spread makes a missed bias visible
                buffer.copy_(torch.randn(buffer.shape, generator=torch.Generator().manual_seed(seed + 1)))
    model.save_pretrained(str(folder))
    return folder


def bert_folder(folder: Path, seed: int = 0, **overrides) -> Path:
    import transformers

    config = transformers.BertConfig(vocab_size=VOCAB, hidden_size=32, num_hidden_layers=2, num_attention_heads=4,
                                     intermediate_size=64, max_position_embeddings=64, **overrides)
    _save(transformers.BertForMaskedLM(config), folder, seed)
    transformers.BertTokenizer(vocab=wordpiece_vocab(), do_lower_case=True).save_pretrained(str(folder))
    return folder


def distilbert_folder(folder: Path, seed: int = 0) -> Path:
    import transformers

    config = transformers.DistilBertConfig(vocab_size=VOCAB, dim=32, n_layers=2, n_heads=4, hidden_dim=64,
                                           max_position_embeddings=64)
    return _save(transformers.DistilBertForMaskedLM(config), folder, seed)


def roberta_folder(folder: Path, seed: int = 0) -> Path:
    """RoBERTa numbers positions from pad_token_id + 1: 66 table rows hold 64 positions."""
    import transformers

    config = transformers.RobertaConfig(vocab_size=VOCAB, hidden_size=32, num_hidden_layers=2, num_attention_heads=4,
                                        intermediate_size=64, max_position_embeddings=66, pad_token_id=1,
                                        type_vocab_size=1)
    return _save(transformers.RobertaForMaskedLM(config), folder, seed)


def marian_folder(folder: Path, seed: int = 0, **overrides) -> Path:
    import transformers

    settings = {"vocab_size": VOCAB, "d_model": 32, "encoder_layers": 2, "decoder_layers": 3,
                "encoder_attention_heads": 4, "decoder_attention_heads": 4, "encoder_ffn_dim": 64, "decoder_ffn_dim": 64,
                "max_position_embeddings": 64, "pad_token_id": VOCAB - 1, "decoder_start_token_id": VOCAB - 1,
                "eos_token_id": 0, "activation_function": "swish", "scale_embedding": True}
    settings.update(overrides)
    return _save(transformers.MarianMTModel(transformers.MarianConfig(**settings)), folder, seed)


def reference_model(folder: Path, kind: str) -> torch.nn.Module:
    """The model transformers loads from `folder` (kind: 'masked' or 'seq2seq')."""
    import transformers

    auto = transformers.AutoModelForMaskedLM if kind == "masked" else transformers.AutoModelForSeq2SeqLM
    return auto.from_pretrained(str(folder)).eval()
