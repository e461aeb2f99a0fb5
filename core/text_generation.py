"""Text from a model: encode a prompt, sample a continuation, decode it. Runs on the compute worker.

Nothing here imports Qt.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class GeneratedText:
    prompt: str
    continuation: str
    new_tokens: int


def run_generation(model, tokenizer, prompt: str, max_new: int, temperature: float, top_k: int | None, seed: int) -> GeneratedText:
    """Worker side: encode the prompt, sample max_new tokens, decode the continuation."""
    from core.training import generate

    ids = tokenizer.encode(prompt)
    out = generate(model, ids, max_new, temperature=temperature, top_k=top_k, seed=seed)
    return GeneratedText(prompt, tokenizer.decode(out[len(ids):]), len(out) - len(ids))


__all__ = ["GeneratedText", "run_generation"]
