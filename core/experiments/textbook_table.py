"""The reading's "minimal block, verified" table: its verification script run on the lab's Block.

The same seed, the same order of module creation and random draws, and the explicit attention path
as the script, so every printed figure agrees with the reading's bit for bit. Nothing here imports Qt.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import torch

from core.experiments.common import ReadOnlyArrays
from core.hooks import capture
from core.model import Block, count_parameters
from core.presets import get_preset

TEXTBOOK_PRESET = "textbook-block"
TEXTBOOK_SEED = 0
TEXTBOOK_BATCH = 2
TEXTBOOK_EDIT_POSITION = 5


@dataclass(frozen=True)
class TextbookCausalTable(ReadOnlyArrays):
    """The reading's "minimal block, verified" run, reproduced from the same seed and RNG stream."""

    input_shape: tuple[int, ...]  # (B, T, d_model) = (2, 8, 64)
    output_shape: tuple[int, ...]  # the block preserves the shape
    n_parameters: int  # 49,984 for the reading's block
    edit_position: int  # the position whose input vector was replaced (5)
    max_change: np.ndarray  # (T,) max |change| per position, causal mask, float32 subtraction as the script does
    max_change_exact: np.ndarray  # (T,) float64 the same from the exact (float64) difference of the outputs
    exactly_unchanged: np.ndarray  # (T,) bool, torch.equal of the two outputs at each position
    max_change_no_mask: np.ndarray  # (T,) float64 the same edit without a mask
    no_mask_past_max_change: float  # max over positions before the edit, no mask

    def lines(self) -> list[str]:
        """The table exactly as the reading's script prints it."""
        out = [
            f"input shape  {self.input_shape}",
            f"output shape {self.output_shape}",
            f"parameters   {self.n_parameters}",
        ]
        out += [f"position {t}: max |change| = {float(v):.6f}" for t, v in enumerate(self.max_change)]
        last_past = self.edit_position - 1
        out.append(f"no mask, positions 0-{last_past} max |change| = {self.no_mask_past_max_change:.6f}")
        return out


def _script_max_change(a: torch.Tensor, b: torch.Tensor) -> np.ndarray:
    """max |b - a| over batch and features, per position, in the script's own float32 arithmetic."""
    return (b - a).abs().amax(dim=(0, 2)).double().numpy()  # (T,)


def textbook_causal_table(seed: int = TEXTBOOK_SEED) -> TextbookCausalTable:
    """Run the reading's verification script on the lab's Block and return its printed figures.

    The reading seeds the global RNG with 0, creates LayerNorm, the fused QKV Linear(64, 192), the
    output projection, LayerNorm and the two FFN Linears in that order with PyTorch's default
    initialisation, then draws x = randn(2, 8, 64) and the replacement vectors. core.model.Block
    creates the same modules in the same order, so building it right after the same seed draws
    the same weights. The reading computes attention explicitly (q @ k^T, mask, softmax);
    observing the attention pattern sends the Block down that explicit path too, so the figures
    agree with the reading's script bit for bit, not only to the printed six decimals. The global
    RNG state of the caller is restored afterwards. Another `seed` runs the same script on other
    weights and inputs (the reading's is 0).
    """
    config = get_preset(TEXTBOOK_PRESET)
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(seed)
        block = Block(config).eval()  # default PyTorch init, the reading's RNG order
        x = torch.randn(TEXTBOOK_BATCH, config.context_length, config.d_model)  # (B, T, D)
        with torch.no_grad(), capture(block, ["attn.hook_pattern"]):
            y = block(x, mask_mode="causal")  # (B, T, D)
            x_edited = x.clone()  # (B, T, D)
            x_edited[:, TEXTBOOK_EDIT_POSITION, :] = torch.randn(TEXTBOOK_BATCH, config.d_model)  # (B, D)
            y_edited = block(x_edited, mask_mode="causal")  # (B, T, D)
            y_open = block(x, mask_mode="none")  # (B, T, D)
            y_open_edited = block(x_edited, mask_mode="none")  # (B, T, D)
    exactly = np.array([torch.equal(y[:, t], y_edited[:, t]) for t in range(y.shape[1])])
    open_change = _script_max_change(y_open, y_open_edited)
    return TextbookCausalTable(
        input_shape=tuple(x.shape),
        output_shape=tuple(y.shape),
        n_parameters=count_parameters(block),
        edit_position=TEXTBOOK_EDIT_POSITION,
        max_change=_script_max_change(y, y_edited),
        max_change_exact=(y_edited.double() - y.double()).abs().amax(dim=(0, 2)).numpy(),
        exactly_unchanged=exactly,
        max_change_no_mask=open_change,
        no_mask_past_max_change=float(open_change[:TEXTBOOK_EDIT_POSITION].max()),
    )


__all__ = ["TEXTBOOK_EDIT_POSITION", "TEXTBOOK_PRESET", "TEXTBOOK_SEED", "TextbookCausalTable", "textbook_causal_table"]
