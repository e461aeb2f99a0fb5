"""Positional encodings: additive sinusoids, rotary embeddings (RoPE) and ALiBi score penalties.

The formulas follow the reading: sinusoid pair i uses the angle pos / base^(2i/d); RoPE rotates the
(even, odd) dimension pairs of q and k by pos * base^(-2i/d). Position interpolation divides the
position by a scale factor before rotating, so a longer context maps into the trained angle range.
"""

from __future__ import annotations

import math

import torch


def sinusoidal_table(
    n_positions: int, d_model: int, base: float = 10000.0, dtype=torch.float32, device: torch.device | str | None = None,
    halves: bool = False,
) -> torch.Tensor:
    """The 2017 encoding: row pos holds sin/cos of pos at one geometric frequency per pair.

    Pairs are interleaved (sin in column 2i, cos in 2i + 1); with `halves`, all sines come first and
    the cosines after them (sin in column i, cos in d/2 + i), the layout of Marian and fairseq.
    Built on `device` directly: on the meta device it takes no memory at any length.
    """
    positions = torch.arange(n_positions, dtype=dtype, device=device).unsqueeze(1)  # (P, 1)
    pair_dims = torch.arange(0, d_model, 2, dtype=dtype, device=device)  # (d/2,)
    angles = positions / (base ** (pair_dims / d_model))  # (P, d/2)
    table = torch.zeros(n_positions, d_model, dtype=dtype, device=device)  # (P, d)
    if halves:
        table[:, : d_model // 2] = torch.sin(angles)
        table[:, d_model // 2 :] = torch.cos(angles)
        return table
    table[:, 0::2] = torch.sin(angles)
    table[:, 1::2] = torch.cos(angles)
    return table


def sinusoidal_wavelengths(d_model: int, base: float = 10000.0) -> torch.Tensor:
    """Wavelength in positions of each (sin, cos) pair: 2*pi * base^(2i/d)."""
    pair_dims = torch.arange(0, d_model, 2, dtype=torch.float64)  # (d/2,)
    return 2 * math.pi * base ** (pair_dims / d_model)  # (d/2,)


def rope_frequencies(d_head: int, base: float = 10000.0, dtype=torch.float32) -> torch.Tensor:
    """One angular frequency per (even, odd) pair: base^(-2i/d)."""
    pair_index = torch.arange(d_head // 2, dtype=dtype)  # (d/2,)
    return base ** (-2.0 * pair_index / d_head)  # (d/2,)


def rope_angles(
    positions: torch.Tensor, d_head: int, base: float = 10000.0, scale: float = 1.0
) -> tuple[torch.Tensor, torch.Tensor]:
    """cos and sin of the rotation angle of every (position, pair)."""
    dtype = positions.dtype if positions.is_floating_point() else torch.float32
    freqs = rope_frequencies(d_head, base, dtype=dtype).to(positions.device)  # (d/2,)
    angles = (positions.to(dtype) / scale).unsqueeze(-1) * freqs  # (..., T, d/2)
    return torch.cos(angles), torch.sin(angles)


def apply_rope(x: torch.Tensor, cos: torch.Tensor, sin: torch.Tensor) -> torch.Tensor:
    """Rotate each (even, odd) pair of the last dimension of x by the matching angle.

    x is (..., T, d_head); cos and sin are (T, d_head/2) and broadcast over the leading dimensions.
    """
    pairs = x.unflatten(-1, (-1, 2))  # (..., T, d/2, 2)
    even, odd = pairs[..., 0], pairs[..., 1]  # (..., T, d/2) each
    rotated_even = even * cos - odd * sin  # (..., T, d/2)
    rotated_odd = even * sin + odd * cos  # (..., T, d/2)
    return torch.stack((rotated_even, rotated_odd), dim=-1).flatten(-2)  # (..., T, d_head)


def rope_rotate(x: torch.Tensor, position: float | torch.Tensor, base: float = 10000.0, scale: float = 1.0) -> torch.Tensor:
    """Rotate one vector (or a batch of them, last dim d_head) to a single position."""
    pos = torch.as_tensor(position, dtype=x.dtype if x.is_floating_point() else torch.float32).reshape(1)  # (1,)
    cos, sin = rope_angles(pos, x.shape[-1], base, scale)  # (1, d/2) each
    return apply_rope(x.unsqueeze(-2), cos, sin).squeeze(-2)  # (..., d_head)


def alibi_slopes(n_heads: int) -> torch.Tensor:
    """Per-head ALiBi slopes: a geometric sequence starting at 2^(-8/n), as in Press et al.

    For a head count that is not a power of two, the paper's recipe takes the slopes of the
    closest smaller power of two and fills in with every other slope of the next power.
    """

    def power_of_two_slopes(n: int) -> list[float]:
        start = 2.0 ** (-8.0 / n)
        return [start ** (i + 1) for i in range(n)]

    if math.log2(n_heads).is_integer():
        slopes = power_of_two_slopes(n_heads)
    else:
        closest = 2 ** math.floor(math.log2(n_heads))
        slopes = power_of_two_slopes(closest) + power_of_two_slopes(2 * closest)[0::2][: n_heads - closest]
    return torch.tensor(slopes, dtype=torch.float32)  # (H,)


def alibi_bias(
    n_heads: int, n_queries: int, n_keys: int | None = None, causal: bool = True, device: torch.device | str | None = None
) -> torch.Tensor:
    """The penalty -slope * distance added to attention scores, one (T, S) matrix per head.

    A causal model only ever sees keys behind the query, so its distance is query - key; a
    bidirectional one penalises distance in either direction. Built on `device` directly: on the
    meta device the (H, T, S) matrix takes no memory.
    """
    n_keys = n_queries if n_keys is None else n_keys
    query_pos = torch.arange(n_queries, device=device).unsqueeze(1)  # (T, 1)
    key_pos = torch.arange(n_keys, device=device).unsqueeze(0)  # (1, S)
    if causal:
        distance = (query_pos - key_pos).clamp(min=0).float()  # (T, S)
    else:
        distance = (query_pos - key_pos).abs().float()  # (T, S)
    return -alibi_slopes(n_heads).to(distance.device).view(-1, 1, 1) * distance  # (H, T, S)
