"""Sequence to sequence with teacher forcing, for encoder-decoder models.

A corpus is one pair per line, source and target separated by a tab. The encoder reads the source; the
decoder reads START followed by the target and is trained to predict the target followed by END, every
position at once (teacher forcing: the decoder sees the true previous characters, not its own guesses),
through causal self-attention and cross-attention to the encoder's output. START and END are the tab and
the newline that frame every target in the file, so a character vocabulary of the file holds both.

A batch takes pairs whose source lengths and target lengths are all equal: nothing is padded, so no
padding mask is needed and a batch computes exactly what one pair alone would.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch

from core.objectives.batch import IGNORED, Batch, scored_loss
from core.objectives.pairs import END, MAX_PAIRS, START, Pair, PairsError, decoder_input, decoder_labels, parse_pairs
from core.limits import character_vocabulary_problem
from core.tokenizers import CharTokenizer, UnknownTokenError

HELD_OUT_FRACTION = 0.1  # the last tenth of the pairs
SCORE_ROWS = 64  # held-out pairs per forward pass when scoring: a bundled batch


@dataclass(frozen=True)
class Seq2SeqScore:
    """An encoder-decoder on held-out pairs."""

    loss: float  # nats per target character (END included), teacher-forced
    exact_match: float  # share of held-out sources whose greedy output is the target, character for character
    pairs: int  # held-out pairs scored
    examples: tuple[tuple[str, str, str], ...]  # (source, target, greedy output) of the first few

    def to_dict(self) -> dict:
        return {"loss": self.loss, "exact_match": self.exact_match, "pairs": self.pairs,
                "examples": [list(example) for example in self.examples]}


class _Group:
    """Pairs whose sources have one length and whose targets have one length: they batch without padding."""

    def __init__(self, sources: list[list[int]], inputs: list[list[int]], labels: list[list[int]]) -> None:
        self.sources = torch.tensor(sources, dtype=torch.long)  # (n, S)
        self.inputs = torch.tensor(inputs, dtype=torch.long)  # (n, T)
        self.labels = torch.tensor(labels, dtype=torch.long)  # (n, T)


class Seq2SeqTask:
    """Tab-separated pairs, grouped by length, the last tenth held out."""

    objective = "seq2seq"

    def __init__(self, text: str, tokenizer: CharTokenizer | None = None) -> None:
        pairs = parse_pairs(text)
        if len(pairs) < 10:
            raise PairsError(f"{len(pairs)} pairs; a run needs at least 10 (a tenth is held out)")
        if tokenizer is None:
            tokenizer = CharTokenizer.from_text("".join(p.source + p.target for p in pairs) + START + END)
            too_many = character_vocabulary_problem("the corpus", tokenizer.vocab_size)
            if too_many:
                raise PairsError(too_many)
        try:
            self.start_id, self.end_id = tokenizer.id_of(START), tokenizer.id_of(END)
            encoded = [(tokenizer.encode(p.source), tokenizer.encode(decoder_input(p.target)),
                        tokenizer.encode(decoder_labels(p.target))) for p in pairs]
        except UnknownTokenError as error:
            raise PairsError(f"the pairs are not written in the model's vocabulary ({error})") from None
        self.tokenizer = tokenizer
        split = len(pairs) - max(1, int(len(pairs) * HELD_OUT_FRACTION))
        self.train_pairs, self.val_pairs = pairs[:split], pairs[split:]
        self.groups = _grouped(encoded[:split])
        self.val_groups = _grouped(encoded[split:])
        sizes = torch.tensor([len(group.sources) for group in self.groups], dtype=torch.double)  # (G,)
        self._group_weights = sizes / sizes.sum()  # (G,) a pair is drawn as often as in a shuffled pass
        self.longest_source = max(len(e[0]) for e in encoded)
        self.longest_target = max(len(e[1]) for e in encoded)

    def check(self, context_length: int) -> str:
        """Why a model of this context cannot read the pairs, or ""."""
        longest = max(self.longest_source, self.longest_target)
        if longest > context_length:
            return (f"the longest side of a pair is {longest} tokens (the target with its start token), "
                    f"beyond the model's context length of {context_length}")
        return ""

    def batch(self, batch_size: int, seq_len: int, generator: torch.Generator) -> Batch:
        """batch_size pairs of one length group; seq_len is not used (the pairs set their own lengths)."""
        group = self.groups[int(torch.multinomial(self._group_weights, 1, generator=generator))]
        rows = torch.randint(0, len(group.sources), (batch_size,), generator=generator)  # (B,)
        return Batch(group.inputs[rows], group.labels[rows], group.sources[rows])

    @torch.no_grad()
    def score(self, model: torch.nn.Module, max_pairs: int | None = None, examples: int = 3) -> Seq2SeqScore:
        """Teacher-forced loss and greedy exact match over the held-out pairs (the first max_pairs of them)."""
        device = next(model.parameters()).device
        was_training = model.training
        model.eval()
        total, characters, exact, seen = 0.0, 0, 0, 0
        shown: list[tuple[str, str, str]] = []
        for group in self.val_groups:
            take = len(group.sources) if max_pairs is None else min(len(group.sources), max_pairs - seen)
            if take <= 0:
                break
            # In slices of SCORE_ROWS pairs: a group's logits at once grow with the held-out split times the vocabulary.
            for first in range(0, take, SCORE_ROWS):
                rows = slice(first, min(take, first + SCORE_ROWS))
                sources = group.sources[rows].to(device)  # (b, S)
                labels = group.labels[rows]  # (b, T)
                logits = model(group.inputs[rows].to(device), source=sources)  # (b, T, V)
                total += float(scored_loss(logits, labels.to(device), reduction="sum"))
                characters += labels.numel()
                del logits
                outputs = greedy_decode(model, sources, self.start_id, self.end_id, labels.shape[1] + 1)  # (b, <=T+1)
                for row in range(len(labels)):
                    target = labels[row].tolist()  # the target and END
                    produced = outputs[row, : len(target)].tolist()
                    exact += produced == target
                    if len(shown) < examples:
                        shown.append((self.tokenizer.decode(sources[row].tolist()), self.tokenizer.decode(target[:-1]),
                                      _decoded(self.tokenizer, outputs[row], self.end_id)))
            seen += take
        model.train(was_training)
        return Seq2SeqScore(total / characters, exact / seen, seen, tuple(shown))

    @torch.no_grad()
    def sample(self, model: torch.nn.Module) -> str:
        """The first held-out source, its target and the model's greedy output."""
        pair = self.val_pairs[0]
        device = next(model.parameters()).device
        was_training = model.training
        model.eval()
        source = torch.tensor([self.tokenizer.encode(pair.source)], device=device)  # (1, S)
        output = greedy_decode(model, source, self.start_id, self.end_id, self.longest_target + 1)[0]  # (L,)
        model.train(was_training)
        return f"{pair.source} -> {_decoded(self.tokenizer, output, self.end_id)} (target {pair.target})"


def _grouped(encoded: list[tuple[list[int], list[int], list[int]]]) -> list[_Group]:
    by_length: dict[tuple[int, int], list[tuple[list[int], list[int], list[int]]]] = {}
    for item in encoded:
        by_length.setdefault((len(item[0]), len(item[1])), []).append(item)
    return [_Group(*map(list, zip(*items))) for _, items in sorted(by_length.items())]


def _decoded(tokenizer: CharTokenizer, output: torch.Tensor, end_id: int) -> str:
    ids = output.tolist()
    return tokenizer.decode(ids[: ids.index(end_id)] if end_id in ids else ids)


@torch.no_grad()
def greedy_decode(model: torch.nn.Module, source: torch.Tensor, start_id: int, end_id: int, max_new: int) -> torch.Tensor:
    """The most likely token at each step, every row until all have produced END or max_new tokens.

    source (B, S) -> (B, n) the produced tokens (START not included); a row that has ended keeps going,
    and what it produces after END is not read. Each step re-runs the model, encoder included, on the tokens so
    far: for a tiny model a cache would save little. Batched, for scoring many pairs; the Cross-attention
    view's one-source decoder with its maps is core.experiments.cross_attention.greedy_decode.
    """
    tokens = torch.full((source.shape[0], 1), start_id, dtype=torch.long, device=source.device)  # (B, 1)
    limit = min(max_new, model.config.context_length - 1)
    for _ in range(limit):
        logits = model(tokens, source=source)[:, -1]  # (B, V)
        tokens = torch.cat([tokens, logits.argmax(-1, keepdim=True)], dim=1)  # (B, t+1)
        if bool((tokens[:, 1:] == end_id).any(dim=1).all()):
            break
    return tokens[:, 1:]  # (B, n)


__all__ = ["END", "HELD_OUT_FRACTION", "MAX_PAIRS", "Pair", "PairsError", "START", "Seq2SeqScore", "Seq2SeqTask",
           "decoder_input", "decoder_labels", "greedy_decode", "parse_pairs"]
