"""Greedy decoding of an encoder-decoder model, step by step, with each step's cross-attention.

The encoder reads the source once per step; the decoder reads START and what it has produced so far and
the most probable next token is appended (greedy: argmax, the first of equal maxima), until END or the step
budget. Each step records the row of the cross-attention its newest position computed (every layer and
head: which source positions the decoder read while choosing that token) and that position's top-k. A
causal decoder's earlier rows do not depend on later tokens, so the rows of the steps stack into the
decoder-position x source-position map of the whole output.

START and END are the characters core.objectives.seq2seq frames every target with; a model trained by
the lab's seq2seq objective has both in its vocabulary. Nothing here imports Qt.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
import torch
import torch.nn.functional as F

from core.config import ModelConfig
from core.experiments.common import ReadOnlyArrays, as_token_list, model_device, token_labels
from core.hooks import capture
from core.model import Transformer
from core.objectives.seq2seq import END, START

MAX_NEW_TOKENS = 256  # steps of one decode: a date's ISO form takes 11
MAX_TOP_K = 50
CROSS_PATTERN = "blocks.{layer}.cross_attn.hook_pattern"


class DecodeError(ValueError):
    """A decode that cannot run: not an encoder-decoder, no START or END token, a source the model cannot take."""


def seq2seq_problem(config: ModelConfig) -> str:
    """Why a model has no cross-attention to show ("" when it has)."""
    if config.architecture == "encoder-decoder":
        return ""
    kind = {"decoder": "a decoder only", "encoder": "an encoder only"}[config.architecture]
    return (f"the loaded model, {config.name}, is {kind}: it has no cross-attention from a decoder to an encoder; "
            "load an encoder-decoder (tiny-encoder-decoder)")


def special_ids(tokenizer) -> tuple[int, int]:
    """(START id, END id) of a tokenizer that holds the seq2seq objective's START and END characters."""
    found = []
    for name, char, what in (("START", START, "tab"), ("END", END, "newline")):
        try:
            found.append(int(tokenizer.id_of(char)))
        except Exception:  # noqa: BLE001 (each tokenizer raises its own unknown-token error); None has no id_of
            raise DecodeError(f"the vocabulary has no {name} token (the {what} character): this model was not "
                              "trained by the lab's seq2seq objective") from None
    return found[0], found[1]


@dataclass(frozen=True)
class GreedyDecode(ReadOnlyArrays):
    """A greedy decode: what the decoder read and produced at each step, and where it looked in the source.

    Step n's decoder position n reads decoder_input[n] (START at step 0) and produced generated[n].
    """

    source: tuple[int, ...]  # S source ids
    decoder_input: tuple[int, ...]  # N: START, then every generated token but the last
    generated: tuple[int, ...]  # N greedy choices, the last one END when `finished`
    finished: bool  # END was produced
    max_new: int  # the step budget
    start_id: int
    end_id: int
    cross_attention: np.ndarray  # (L, H, N, S) float32: each step's newest row of every layer's and head's weights
    top_ids: np.ndarray  # (N, K) int64 each step's most probable tokens, most probable first
    top_probabilities: np.ndarray  # (N, K) float64 softmax over the vocabulary
    source_labels: tuple[str, ...]
    input_labels: tuple[str, ...]  # N labels of decoder_input
    top_labels: tuple[tuple[str, ...], ...]  # N x K labels of top_ids

    @property
    def steps(self) -> int:
        return len(self.generated)

    @property
    def output(self) -> tuple[int, ...]:
        """The generated tokens without the final END."""
        return self.generated[:-1] if self.finished else self.generated

    def head_mean(self, layer: int) -> np.ndarray:
        """(N, S) the mean over heads of one layer's rows."""
        return self.cross_attention[layer].mean(axis=0)  # (N, S)

    def to_dict(self) -> dict:
        return {
            "source": list(self.source), "decoder_input": list(self.decoder_input), "generated": list(self.generated),
            "output": list(self.output), "finished": self.finished, "max_new": self.max_new,
            "start_id": self.start_id, "end_id": self.end_id,
            "steps": [{"reads": int(read), "produced": int(made),
                       "top": [{"id": int(i), "token": label, "probability": float(p)}
                               for i, label, p in zip(self.top_ids[n], self.top_labels[n], self.top_probabilities[n])]}
                      for n, (read, made) in enumerate(zip(self.decoder_input, self.generated))],
            "cross_attention_shape": ["layers", "heads", "steps", "source"],
            "cross_attention": self.cross_attention.tolist(),
            "cross_attention_mean": self.cross_attention.mean(axis=(0, 1)).tolist(),
        }


def greedy_decode(model: Transformer, source, start_id: int, end_id: int, max_new: int, top_k: int = 5,
                  tokenizer=None, on_step: Callable[[int], None] | None = None) -> GreedyDecode:
    """Greedy decoding from START for at most `max_new` steps (stopping after END), with the cross-attention rows.

    on_step(n) is called before step n (progress, cancellation).
    """
    problem = seq2seq_problem(model.config)
    if problem:
        raise DecodeError(problem)
    if not 0 <= max_new <= MAX_NEW_TOKENS:
        raise DecodeError(f"the number of steps must be from 0 to {MAX_NEW_TOKENS}, got {max_new}")
    if not 1 <= top_k <= MAX_TOP_K:
        raise DecodeError(f"top k must be from 1 to {MAX_TOP_K}, got {top_k}")
    config = model.config
    source_ids = as_token_list(source)
    for name, token_id in (("START", start_id), ("END", end_id)):
        if not 0 <= token_id < config.vocab_size:
            raise DecodeError(f"the {name} id {token_id} is outside the vocabulary (0..{config.vocab_size - 1})")
    if max_new > config.context_length:
        raise DecodeError(f"{max_new} steps exceed the decoder's context of {config.context_length} positions")
    device = model_device(model)
    source_batch = torch.tensor([source_ids], dtype=torch.long, device=device)  # (1, S)
    model.check_tokens(source_batch)
    layers = config.n_layers
    decoder_input = [start_id]
    generated: list[int] = []
    rows: list[torch.Tensor] = []  # each step's (L, H, S)
    tops: list[tuple[np.ndarray, np.ndarray]] = []
    patterns = [CROSS_PATTERN.format(layer=layer) for layer in range(layers)]
    for step in range(max_new):
        if on_step is not None:
            on_step(step)
        batch = torch.tensor([decoder_input], dtype=torch.long, device=device)  # (1, n)
        with torch.inference_mode(), capture(model, patterns) as store:
            logits = model(batch, source=source_batch)[0, -1]  # (V,)
        rows.append(torch.stack([store[name][0, :, -1] for name in patterns]).float().cpu())  # (L, H, S)
        probabilities = F.softmax(logits.double(), dim=-1)  # (V,)
        top = probabilities.topk(min(top_k, config.vocab_size))
        tops.append((top.indices.cpu().numpy().astype(np.int64), top.values.cpu().numpy()))
        choice = int(torch.argmax(logits))
        generated.append(choice)
        if choice == end_id:
            break
        decoder_input.append(choice)
    decoder_input = decoder_input[: len(generated)]
    n_heads = config.n_heads
    cross = (torch.stack(rows, dim=2).numpy() if rows
             else np.zeros((layers, n_heads, 0, len(source_ids)), dtype=np.float32))  # (L, H, N, S)
    top_ids = np.stack([ids for ids, _ in tops]) if tops else np.zeros((0, top_k), dtype=np.int64)  # (N, K)
    top_probabilities = np.stack([p for _, p in tops]) if tops else np.zeros((0, top_k))  # (N, K)
    return GreedyDecode(
        source=tuple(source_ids), decoder_input=tuple(decoder_input), generated=tuple(generated),
        finished=bool(generated) and generated[-1] == end_id, max_new=max_new, start_id=start_id, end_id=end_id,
        cross_attention=cross, top_ids=top_ids, top_probabilities=top_probabilities,
        source_labels=token_labels(source_ids, tokenizer), input_labels=token_labels(decoder_input, tokenizer),
        top_labels=tuple(token_labels(row.tolist(), tokenizer) for row in top_ids),
    )


__all__ = [
    "CROSS_PATTERN",
    "MAX_NEW_TOKENS",
    "MAX_TOP_K",
    "DecodeError",
    "GreedyDecode",
    "greedy_decode",
    "seq2seq_problem",
    "special_ids",
]
