"""The reading's scripts as printouts: each printed line's words, its figure and the number behind it.

The "Reading's script" mode of the Tokens & masks and Positions panels shows these. The figures
come from the textbook functions (core.experiments.textbook_table / positions), which run the reading's
scripts with its seeds, random inputs, shapes and order of random draws; here they are only put in
the reading's words and formats. A line keeps its float value beside the formatted figure so that
a check compares numbers, never strings.

The lab's own views differ from the scripts in their inputs, and each printout says how in one
line (`contrast`): the textbook-block preset feeds token embeddings of a GPT-2-initialised model
where the script draws x ~ N(0, 1) into PyTorch's default initialisation; the Permutation tab's
layer is the lab's attention (fused QKV and an output projection), which spends the same seed's
random stream differently from the script's three Linears.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from core.experiments.textbook_table import TEXTBOOK_EDIT_POSITION, TEXTBOOK_PRESET, TEXTBOOK_SEED, textbook_causal_table
from core.experiments.positions import (
    TEXTBOOK_PERMUTATION,
    TEXTBOOK_PERMUTATION_D_MODEL,
    TEXTBOOK_PERMUTATION_SEED,
    TEXTBOOK_PERMUTATION_T,
    TEXTBOOK_ROPE_DIM,
    TEXTBOOK_ROPE_SEED,
    textbook_permutation_table,
    textbook_rope_table,
)
from core.model import INIT_STD

MAX_SEED = 2**32 - 1  # NumPy's RandomState takes seeds below 2**32; torch takes these too


@dataclass(frozen=True)
class ScriptLine:
    """One printed line: the words before the figure, the figure as the script formats it, its value."""

    caption: str
    figure: str
    value: float | None = None  # None for lines that print no single number (a list of PE values)
    note: str = ""  # what the lab measured beside it (torch.equal, the script's own float32 rounding)


@dataclass(frozen=True)
class ScriptPrintout:
    """A script's output, with the one-line setup that produced it and what differs in the lab's views."""

    title: str
    setup: str  # "random inputs x ~ N(0,1), seed 0, as in the reading", then the order of the draws
    contrast: str  # why the lab's other views show other figures
    lines: tuple[ScriptLine, ...]
    seed: int
    readings_seed: bool  # the seed is the reading's: the figures are the ones it prints

    def figure(self, caption: str) -> ScriptLine:
        """The line with these words (tests and lessons look figures up by caption)."""
        return next(line for line in self.lines if line.caption == caption)


@dataclass(frozen=True)
class CausalPrintout(ScriptPrintout):
    masked_change: np.ndarray | None = None  # (T,) max |change| per position, causal mask (exact difference)
    unmasked_change: np.ndarray | None = None  # (T,) the same edit without a mask
    exactly_unchanged: np.ndarray | None = None  # (T,) bool, torch.equal per position under the mask
    edit_position: int = TEXTBOOK_EDIT_POSITION


def check_seed(seed: int) -> int:
    if isinstance(seed, bool) or not isinstance(seed, (int, np.integer)) or not 0 <= int(seed) <= MAX_SEED:
        raise ValueError(f"the seed must be a whole number from 0 to {MAX_SEED}, got {seed!r}")
    return int(seed)


def _seed_words(seed: int, readings: int) -> str:
    return f"seed {seed}, as in the reading" if seed == readings else f"seed {seed} (the reading's is {readings})"


def causal_printout(seed: int = TEXTBOOK_SEED) -> CausalPrintout:
    """The reading's "minimal block, verified" script: shapes, parameters, max |change| per position.

    The masked figures are the exact (float64) differences of the two float32 outputs. The script
    subtracts in float32, which rounds a difference to the float32 grid: where that rounding
    crosses a printed digit (position 5 on some CPUs: 3.357778 exact, 3.357779 in float32) the
    line's note gives the script's own float32 figure too, so both are on screen.
    """
    seed = check_seed(seed)
    table = textbook_causal_table(seed)
    batch, length, width = table.input_shape
    edit = table.edit_position
    lines = [
        ScriptLine("input shape", str(table.input_shape)),
        ScriptLine("output shape", str(table.output_shape)),
        ScriptLine("parameters", str(table.n_parameters), float(table.n_parameters)),
    ]
    for t in range(length):
        exact, script = float(table.max_change_exact[t]), float(table.max_change[t])
        if table.exactly_unchanged[t]:
            note = "bitwise unchanged (torch.equal)"
        elif f"{script:.6f}" != f"{exact:.6f}":
            note = f"the script's float32 subtraction prints {script:.6f} here"
        else:
            note = ""
        lines.append(ScriptLine(f"position {t}: max |change|", f"{exact:.6f}", exact, note))
    lines.append(ScriptLine(f"no mask, positions 0-{edit - 1} max |change|", f"{table.no_mask_past_max_change:.6f}",
                            table.no_mask_past_max_change, "the past moves without the mask"))
    setup = (f"Random inputs x ~ N(0,1), {_seed_words(seed, TEXTBOOK_SEED)}: torch.manual_seed({seed}), then the "
             f"block's LayerNorm, QKV, output projection, LayerNorm and FFN with PyTorch's default initialisation, "
             f"then x = randn{table.input_shape}, then randn({batch}, {width}) for position {edit}.")
    contrast = (f"The {TEXTBOOK_PRESET} preset on a text differs: its inputs are token embeddings of a model "
                f"initialised GPT-2's way (N(0, {INIT_STD:g}) weights, zero biases), and an edit swaps one token's "
                "embedding, where the script draws a fresh N(0,1) vector.")
    return CausalPrintout(
        title="The reading's script: a minimal block, verified",
        setup=setup,
        contrast=contrast,
        lines=tuple(lines),
        seed=seed,
        readings_seed=seed == TEXTBOOK_SEED,
        masked_change=table.max_change_exact,
        unmasked_change=table.max_change_no_mask,
        exactly_unchanged=table.exactly_unchanged,
        edit_position=edit,
    )


def rope_printout(seed: int = TEXTBOOK_ROPE_SEED) -> ScriptPrintout:
    """The reading's RoPE script: rotated scores at six (m, n) pairs, then the additive contrast."""
    seed = check_seed(seed)
    table = textbook_rope_table(seed)
    lines = []
    for m, n, score in zip(table.rope_queries, table.rope_keys, table.rope_scores):
        lines.append(ScriptLine(f"RoPE: m = {m:>3}, n = {n:>3}  (m - n = {m - n}):  score", f"{score:.10f}",
                                float(score)))
    for m, n, score in zip(table.additive_queries, table.additive_keys, table.additive_scores):
        lines.append(ScriptLine(f"(q + PE[m]).(k + PE[n]): m = {m:>3}, n = {n:>3}  (m - n = {m - n}):  score",
                                f"{score:.10f}", float(score)))
    d = TEXTBOOK_ROPE_DIM
    return ScriptPrintout(
        title="The reading's script: RoPE scores depend on m - n alone",
        setup=f"Random q, k ~ N(0,1), {_seed_words(seed, TEXTBOOK_ROPE_SEED)}: np.random.seed({seed}), then "
              f"q = randn({d}), then k = randn({d}); scores are raw dot products.",
        contrast=f"The RoPE scrubber draws this pair from its random source with seed {seed} and d {d}, where it "
                 "also reads its base and scale boxes; a model's q and k are its own.",
        lines=tuple(lines),
        seed=seed,
        readings_seed=seed == TEXTBOOK_ROPE_SEED,
    )


def permutation_printout(seed: int = TEXTBOOK_PERMUTATION_SEED) -> ScriptPrintout:
    """The reading's permutation script: attention is order-blind until sinusoids are added."""
    seed = check_seed(seed)
    table = textbook_permutation_table(seed)
    lines = [
        ScriptLine("no PE:  max |attn(shuffled x) - shuffle(attn(x))|", f"{table.no_pe_max_diff:.8f}",
                   float(table.no_pe_max_diff), f"float noise: {table.no_pe_max_diff:.1e}"),
        ScriptLine("with PE: max |attn(shuffled x+PE) - shuffle(attn(x+PE))|", f"{table.with_pe_max_diff:.8f}",
                   float(table.with_pe_max_diff)),
    ]
    for row, values in zip(table.pe_rows, table.pe_values):
        lines.append(ScriptLine(f"PE row {row}, first {len(values)} dims", str([f"{v:.4f}" for v in values])))
    d, length = TEXTBOOK_PERMUTATION_D_MODEL, TEXTBOOK_PERMUTATION_T
    order = " ".join(map(str, TEXTBOOK_PERMUTATION))
    return ScriptPrintout(
        title="The reading's script: shuffle the tokens, shuffle the outputs",
        setup=f"Random inputs x ~ N(0,1), {_seed_words(seed, TEXTBOOK_PERMUTATION_SEED)}: torch.manual_seed({seed}), "
              f"then Linear q, k, v ({d} -> {d}), then x = randn(1, {length}, {d}); order {order}.",
        contrast="The Permutation tab's layer is the lab's attention (one fused QKV Linear and an output "
                 "projection), which spends the same seed's random draws on other weights and another x.",
        lines=tuple(lines),
        seed=seed,
        readings_seed=seed == TEXTBOOK_PERMUTATION_SEED,
    )
