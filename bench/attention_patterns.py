"""Which heads of the bundled models do something recognisable? Weight on fixed targets, per head.

    .venv/bin/python bench/attention_patterns.py [--text "..."] [--top 3] [--models tiny-gpt tiny-llama]

For every layer and head of each bundled model (core.checkpoints.load_bundled) this measures, from
core.experiments.attention_maps.attention_maps, the mean attention weight a query puts on

    prev     the previous token (i - 1)
    first    the first token (position 0: a "sink")
    newline  the most recent newline before the query (queries whose newline is i - 1 or 0 are
             left out, so this does not just repeat prev or first)
    same     earlier occurrences of the query's own character (summed over them; queries with none left out)
    self     the query itself (the diagonal)

over queries i >= 2 (at i = 0 and 1 every causal head trivially sits on tokens 0 and 1). Each figure
is shown beside `chance`, the mean weight a uniform causal head would put there, and measured twice:
on --text and on a 256-character passage of the held-out split of the corpus (never trained on), so a
head that matches only one line of text stands out. Prints figures only; no asserts.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from core.checkpoints import load_bundled  # noqa: E402
from core.experiments.attention_maps import attention_maps  # noqa: E402
from core.training import VALIDATION_FRACTION  # noqa: E402
from resources import resource_path  # noqa: E402

DEFAULT_TEXT = "ROMEO:\nWhat say you, my lord?\n\nJULIET:\nI say"
PATTERNS = ("prev", "first", "newline", "same", "self")
FIRST_QUERY = 2


def target_masks(text: str) -> dict[str, np.ndarray]:
    """(T, T) boolean masks of the keys each pattern names for each query, and which queries count."""
    length = len(text)
    masks = {name: np.zeros((length, length), dtype=bool) for name in PATTERNS}
    for i in range(FIRST_QUERY, length):
        masks["prev"][i, i - 1] = True
        masks["first"][i, 0] = True
        masks["self"][i, i] = True
        newlines = [j for j in range(i) if text[j] == "\n"]
        if newlines and newlines[-1] not in (0, i - 1):
            masks["newline"][i, newlines[-1]] = True
        for j in range(i):
            if text[j] == text[i]:
                masks["same"][i, j] = True
    return masks


def pattern_scores(weights: np.ndarray, text: str) -> dict[str, np.ndarray]:
    """Mean summed weight on each pattern's keys, over the queries that have such keys: (L, H) per pattern.

    Also `chance:<name>`: the same figure for a uniform causal head (1 / (i + 1) on each allowed key).
    """
    masks = target_masks(text)
    length = len(text)
    uniform = np.tril(np.ones((length, length))) / np.arange(1, length + 1)[:, None]  # (T, T)
    scores = {}
    for name, mask in masks.items():
        rows = mask.any(axis=1)  # (T,) queries this pattern has a target for
        per_query = (weights * mask).sum(axis=-1)  # (L, H, T)
        scores[name] = per_query[..., rows].mean(axis=-1)  # (L, H)
        scores[f"chance:{name}"] = np.asarray((uniform * mask).sum(axis=-1)[rows].mean())
    return scores


def held_out_passage(length: int = 256) -> str:
    corpus = resource_path("tinyshakespeare.txt").read_text(encoding="utf-8")
    start = int(len(corpus) * (1 - VALIDATION_FRACTION)) + 1000
    return corpus[start : start + length]


def measure(name: str, texts: dict[str, str]) -> dict[str, dict[str, np.ndarray]]:
    loaded = load_bundled(name)
    results = {}
    for label, text in texts.items():
        maps = attention_maps(loaded.model, loaded.tokenizer.encode(text))
        results[label] = pattern_scores(maps.weights, text)  # weights: (L, H, T, T)
    return results


def print_report(name: str, results: dict[str, dict[str, np.ndarray]], top: int) -> None:
    labels = list(results)
    first = results[labels[0]]
    n_layers, n_heads = first["prev"].shape
    print(f"\n=== {name}: mean attention weight per head ({' | '.join(labels)}) ===")
    header = "head  " + "".join(f"{pattern:>16}" for pattern in PATTERNS)
    print(header)

    def row(values_of) -> str:
        return "".join(f"{' | '.join(f'{values_of(label, p):.2f}' for label in labels):>16}" for p in PATTERNS)

    print("chance" + row(lambda label, p: float(results[label]["chance:" + p])))
    for layer in range(n_layers):
        for head in range(n_heads):
            print(f"L{layer}H{head}  " + row(lambda label, p: float(results[label][p][layer, head])))
    print(f"--- top {top} heads per pattern (ranked on {labels[0]}) ---")
    for pattern in PATTERNS:
        scores = first[pattern]
        order = np.argsort(scores, axis=None)[::-1][:top]
        ranked = []
        for flat in order:
            layer, head = divmod(int(flat), n_heads)
            others = ", ".join(f"{label} {results[label][pattern][layer, head]:.2f}" for label in labels[1:])
            ranked.append(f"L{layer}H{head} {scores[layer, head]:.2f}" + (f" ({others})" if others else ""))
        print(f"{pattern:>8}: " + "; ".join(ranked) + f"   [chance {float(first[f'chance:{pattern}']):.2f}]")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--text", default=DEFAULT_TEXT)
    parser.add_argument("--top", type=int, default=3)
    parser.add_argument("--models", nargs="+", default=["tiny-gpt", "tiny-llama"])
    args = parser.parse_args()
    texts = {"text": args.text, "held-out": held_out_passage()}
    for name in args.models:
        print_report(name, measure(name, texts), args.top)


if __name__ == "__main__":
    main()
