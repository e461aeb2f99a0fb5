"""Positions: why attention needs an encoding, and how RoPE makes scores depend on offsets only.

Everything here backs the "Positions" panel and the `rope` / `permutation` commands. Results are
frozen dataclasses of numpy arrays. The RoPE scrubber functions (`rope_score`, `rope_score_grid`,
`rope_score_row`, `rotation_arrows`, ...) work on one q/k pair and take well under a millisecond
(bench/rope_drag.py), so a drag can recompute them on every mouse move. They take cos/sin and dot
products in NumPy rather than torch for that reason (see `rope_cos_sin`); the textbook table and
the model paths use core.positional's torch functions directly.

Scores are raw dot products q . k, as in the reading's script (no 1/sqrt(d) factor): the point
is the dependence on position, and scaling would only change the y axis.

RoPE layout: core.positional rotates interleaved (even, odd) pairs (dims 0-1, 2-3, ...) by
pos / scale * base^(-2i/d), which is exactly the reading's `x.reshape(d // 2, 2)` layout and
frequency, so the textbook figures come out of core.positional unchanged.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import torch
import torch.nn.functional as F
from torch import nn

from core.choices import PERMUTATION_ENCODINGS
from core.config import ModelConfig
from core.hooks import capture
from core.model import Attention, Transformer
from core.positional import (
    alibi_bias,
    alibi_slopes,
    apply_rope,
    rope_angles,
    rope_frequencies,
    rope_rotate,
    sinusoidal_table,
    sinusoidal_wavelengths,
)

# The reading's RoPE script: np.random.seed(0), d = 8, default base.
TEXTBOOK_ROPE_SEED = 0
TEXTBOOK_ROPE_DIM = 8
TEXTBOOK_ROPE_PAIRS = ((3, 1), (13, 11), (103, 101), (5, 1), (54, 50), (9, 1))
TEXTBOOK_ADDITIVE_PAIRS = ((3, 1), (13, 11), (103, 101))
DEFAULT_BASE = 10000.0

# The reading's permutation script.
TEXTBOOK_PERMUTATION_SEED = 0
TEXTBOOK_PERMUTATION_D_MODEL = 32
TEXTBOOK_PERMUTATION_T = 6
TEXTBOOK_PERMUTATION = (3, 1, 5, 0, 2, 4)
TEXTBOOK_PE_ROWS = (0, 3)
TEXTBOOK_PE_DIMS = 6

KNOWN_PERMUTATION_ENCODINGS = (*PERMUTATION_ENCODINGS, "alibi")

_F64 = torch.float64

Vector = np.ndarray | torch.Tensor | Sequence[float]  # one q or k: (d,), any float dtype, converted to float64


class PositionsError(ValueError):
    """An impossible request to a positions experiment (odd RoPE width, a model without RoPE, ...)."""


# ---- helpers -------------------------------------------------------------------------------------
def _as_f64(vector: Vector) -> torch.Tensor:
    return torch.as_tensor(np.asarray(vector, dtype=np.float64))


def _check_pair(q: torch.Tensor, k: torch.Tensor) -> None:
    if q.dim() != 1 or q.shape != k.shape:
        raise PositionsError(f"q and k must be vectors of one length, got shapes {tuple(q.shape)} and {tuple(k.shape)}")
    if q.shape[0] % 2:
        raise PositionsError(f"RoPE rotates (even, odd) pairs, so the vector length must be even (got {q.shape[0]})")


def _check_rope_settings(base: float, scale: float) -> None:
    if not (math.isfinite(base) and base > 1):
        raise PositionsError(f"the RoPE base must be a finite number above 1, got {base}")
    if not (math.isfinite(scale) and scale > 0):
        raise PositionsError(f"the RoPE scale must be a positive finite number, got {scale}")


# The scrubber takes cos and sin in NumPy, from the same angles core.positional.rope_angles forms
# (positions / scale * rope_frequencies): torch's vectorised cos/sin split a few thousand elements
# across threads and, on a busy machine, wait milliseconds for them; a drag has 33 ms in all.
# tests/core/test_positions.py checks both routes agree to rounding.
def rope_cos_sin(positions: torch.Tensor, d_head: int, base: float, scale: float) -> tuple[torch.Tensor, torch.Tensor]:
    """float64 cos and sin of every (position, pair) angle, (P, d/2) each, without thread hand-offs."""
    freqs = rope_frequencies(d_head, base, dtype=_F64).numpy()  # (d/2,)
    angles = (positions.to(_F64).numpy() / scale)[:, None] * freqs  # (P, d/2)
    return torch.from_numpy(np.cos(angles)), torch.from_numpy(np.sin(angles))


def sinusoid_rows(rows: np.ndarray, d_model: int, base: float = DEFAULT_BASE) -> torch.Tensor:
    """Rows of core.positional.sinusoidal_table (float64) for just the positions asked for, (R, d)."""
    pair_dims = torch.arange(0, d_model, 2, dtype=_F64)  # (d/2,)
    denominators = (base ** (pair_dims / d_model)).numpy()  # (d/2,) the table's own expression
    angles = np.asarray(rows, dtype=np.float64)[:, None] / denominators  # (R, d/2)
    table = np.empty((angles.shape[0], d_model))  # (R, d)
    table[:, 0::2] = np.sin(angles)
    table[:, 1::2] = np.cos(angles)
    return torch.from_numpy(table)


def _rotate_all(x: torch.Tensor, positions: torch.Tensor, base: float, scale: float) -> torch.Tensor:
    """One vector (d,) rotated to every position (P,), or P vectors (P, d) each to its own: (P, d)."""
    cos, sin = rope_cos_sin(positions, x.shape[-1], base, scale)  # (P, d/2) each
    return apply_rope(x.expand(positions.shape[0], -1), cos, sin)  # (P, d)


# Dot products go through np.einsum's plain C loops, not BLAS: a threaded BLAS call on a 64 x 128
# matrix can wait milliseconds for its worker threads on a busy machine, and a drag has a 33 ms budget.
def _dot(a: torch.Tensor, b: torch.Tensor) -> np.ndarray:
    """Row-wise dot products over the last dimension, broadcasting: (..., d) x (..., d) -> (...)."""
    a_np, b_np = np.broadcast_arrays(a.numpy(), b.numpy())
    return np.einsum("...d,...d->...", a_np, b_np)


def _pairwise_dots(a: torch.Tensor, b: torch.Tensor) -> np.ndarray:
    """(P, d) x (S, d) -> (P, S): every row of a against every row of b."""
    return np.einsum("pd,sd->ps", a.numpy(), b.numpy())


def _positions(values: Sequence[float] | np.ndarray | torch.Tensor) -> torch.Tensor:
    return torch.as_tensor(np.asarray(values, dtype=np.float64).reshape(-1))  # (P,)


# ---- q/k sources -----------------------------------------------------------------------------------
@dataclass(frozen=True)
class QueryKeyPair:
    """The content vectors (before any rotation) that the scrubber rotates."""

    q: np.ndarray  # (d,) float64
    k: np.ndarray  # (d,) float64
    base: float  # RoPE base these vectors are meant to be rotated with
    scale: float  # RoPE position interpolation factor
    label: str  # where the vectors came from, for a title


def seeded_qk(
    seed: int = TEXTBOOK_ROPE_SEED, d: int = TEXTBOOK_ROPE_DIM, base: float = DEFAULT_BASE, scale: float = 1.0
) -> QueryKeyPair:
    """Two standard-normal vectors drawn as the reading draws them: q = randn(d), then k = randn(d).

    A private RandomState seeded like `np.random.seed(seed)` gives the same stream without
    touching NumPy's global generator, so seed 0 and d 8 are the reading's pair.
    """
    if d < 2 or d % 2:
        raise PositionsError(f"RoPE rotates (even, odd) pairs, so d must be a positive even number (got {d})")
    _check_rope_settings(base, scale)
    generator = np.random.RandomState(seed)
    q = generator.randn(d)  # (d,)
    k = generator.randn(d)  # (d,)
    return QueryKeyPair(q=q, k=k, base=float(base), scale=float(scale), label=f"random q, k (seed {seed}, d {d})")


def model_qk(
    model: Transformer,
    tokens: torch.Tensor,
    layer: int,
    head: int,
    query_pos: int,
    key_pos: int,
) -> QueryKeyPair:
    """The content q (at query_pos) and k (at key_pos) of one head of a RoPE model, before rotation.

    The model's hook_q / hook_k see q and k AFTER rotation. This function captures them there and
    un-rotates each by its own position (the inverse rotation R(-pos), i.e. sin -> -sin) in
    float64, so the result is exactly what the qkv projection produced, up to rounding. Un-rotating
    depends only on the RoPE formula, not on re-running the block's norm and projection, so it
    stays right for pre- and post-norm blocks alike. With grouped-query attention the key comes
    from the key/value head that serves the query head.
    """
    config = model.config
    if config.positional != "rope":
        raise PositionsError(f"{config.name} uses {config.positional!r} positions, not RoPE; pick a RoPE model")
    if tokens.dim() == 1:
        tokens = tokens.unsqueeze(0)  # (1, T)
    if not 0 <= layer < config.n_layers:
        raise PositionsError(f"layer must be between 0 and {config.n_layers - 1}, got {layer}")
    if not 0 <= head < config.n_heads:
        raise PositionsError(f"head must be between 0 and {config.n_heads - 1}, got {head}")
    seq = tokens.shape[1]
    for name, pos in (("query_pos", query_pos), ("key_pos", key_pos)):
        if not 0 <= pos < seq:
            raise PositionsError(f"{name} must be between 0 and {seq - 1}, got {pos}")
    kv_head = head // (config.n_heads // config.kv_heads)
    names = [f"blocks.{layer}.attn.hook_q", f"blocks.{layer}.attn.hook_k"]
    with torch.no_grad(), capture(model, names) as store:
        model(tokens)
    rotated_q = store[names[0]][0, head, query_pos].to(_F64)  # (d_head,)
    rotated_k = store[names[1]][0, kv_head, key_pos].to(_F64)  # (d_head,)
    q = _unrotate(rotated_q, query_pos, config.rope_base, config.rope_scale)  # (d_head,)
    k = _unrotate(rotated_k, key_pos, config.rope_base, config.rope_scale)  # (d_head,)
    return QueryKeyPair(
        q=q.numpy(),
        k=k.numpy(),
        base=config.rope_base,
        scale=config.rope_scale,
        label=f"{config.name}: layer {layer}, head {head}, q at {query_pos}, k at {key_pos}",
    )


def _unrotate(x: torch.Tensor, position: int, base: float, scale: float) -> torch.Tensor:
    cos, sin = rope_angles(torch.tensor([float(position)], dtype=_F64), x.shape[-1], base, scale)  # (1, d/2) each
    return apply_rope(x.unsqueeze(0), cos, -sin).squeeze(0)  # (d,)


# ---- RoPE scrubber ------------------------------------------------------------------------------------
def rope_score(q: Vector, k: Vector, m: float, n: float, base: float = DEFAULT_BASE, scale: float = 1.0) -> float:
    """R(m) q . R(n) k: the score of a query at position m against a key at position n."""
    q64, k64 = _as_f64(q), _as_f64(k)
    _check_pair(q64, k64)
    rotated = _rotate_all(torch.stack((q64, k64)), _positions([m, n]), base, scale)  # (2, d)
    return float(_dot(rotated[0], rotated[1]))


@dataclass(frozen=True)
class ScoreGrid:
    """scores[i, j] = score of a query at positions[i] against a key at positions[j]."""

    positions: np.ndarray  # (P,)
    scores: np.ndarray  # (P, P)
    label: str


def rope_score_grid(
    q: Vector, k: Vector, positions: Vector, base: float = DEFAULT_BASE, scale: float = 1.0
) -> ScoreGrid:
    """All query/key position pairs at once; constant along each diagonal (fixed offset)."""
    q64, k64 = _as_f64(q), _as_f64(k)
    _check_pair(q64, k64)
    _check_rope_settings(base, scale)
    pos = _positions(positions)  # (P,)
    rotated_q = _rotate_all(q64, pos, base, scale)  # (P, d)
    rotated_k = _rotate_all(k64, pos, base, scale)  # (P, d)
    scores = _pairwise_dots(rotated_q, rotated_k)  # (P, P)
    return ScoreGrid(positions=pos.numpy(), scores=scores, label=f"RoPE (base {base:g}, scale {scale:g})")


def rope_score_row(
    q: Vector, k: Vector, query_position: float, key_positions: Vector, base: float = DEFAULT_BASE, scale: float = 1.0
) -> np.ndarray:
    """One row of the grid: a query at query_position against keys at key_positions, (P,).

    What a drag of the query position changes; the full grid only changes with q, k, base or scale.
    """
    q64, k64 = _as_f64(q), _as_f64(k)
    _check_pair(q64, k64)
    _check_rope_settings(base, scale)
    rotated_q = _rotate_all(q64, _positions([query_position]), base, scale)[0]  # (d,)
    rotated_k = _rotate_all(k64, _positions(key_positions), base, scale)  # (P, d)
    return _dot(rotated_k, rotated_q)  # (P,)


def additive_score_grid(
    q: Vector, k: Vector, pe_table: Vector, positions: Vector | None = None, label: str = "additive"
) -> ScoreGrid:
    """(q + PE[i]) . (k + PE[j]) for an added table (sinusoidal or learned): not a function of i - j.

    positions index rows of pe_table (all rows when omitted).
    """
    q64, k64 = _as_f64(q), _as_f64(k)
    table = _as_f64(pe_table)  # (P_table, d)
    if table.dim() != 2 or table.shape[1] != q64.shape[0] or q64.shape != k64.shape:
        raise PositionsError(
            f"the table must be (positions, {q64.shape[0]}) to add to q and k, got {tuple(table.shape)}"
        )
    rows = torch.arange(table.shape[0]) if positions is None else torch.as_tensor(np.asarray(positions, dtype=np.int64))
    if rows.numel() and (int(rows.min()) < 0 or int(rows.max()) >= table.shape[0]):
        raise PositionsError(f"positions must lie in 0..{table.shape[0] - 1} for this table")
    encoded = table[rows]  # (P, d)
    scores = _pairwise_dots(q64 + encoded, k64 + encoded)  # (P, P)
    return ScoreGrid(positions=rows.to(_F64).numpy(), scores=scores, label=label)


def sinusoidal_pe_table(n_positions: int, d_model: int, base: float = DEFAULT_BASE) -> np.ndarray:
    """The 2017 table in float64 (rows = positions): the additive contrast to RoPE."""
    return sinusoidal_table(n_positions, d_model, base, dtype=_F64).numpy()  # (P, d)


def random_learned_table(n_positions: int, d_model: int, seed: int = 0, std: float = 1.0) -> np.ndarray:
    """An untrained learned position table: N(0, std^2) like a fresh nn.Embedding (std 1)."""
    generator = torch.Generator().manual_seed(seed)
    return (torch.randn(n_positions, d_model, generator=generator, dtype=_F64) * std).numpy()  # (P, d)


@dataclass(frozen=True)
class OffsetScores:
    """Score of a query at a fixed position against keys `offsets` behind it, per encoding."""

    query_position: int
    offsets: np.ndarray  # (O,) query - key
    key_positions: np.ndarray  # (O,)
    rope: np.ndarray  # (O,)
    sinusoidal: np.ndarray  # (O,)
    learned: np.ndarray  # (O,)


def score_vs_offset(
    q: Vector,
    k: Vector,
    query_position: int,
    offsets: Vector | None = None,
    base: float = DEFAULT_BASE,
    scale: float = 1.0,
    learned_table=None,
    learned_seed: int = 0,
) -> OffsetScores:
    """Score against the key `offset` positions behind a query at query_position (offsets 0..query_position by default).

    The sinusoidal table uses the same base as RoPE; the learned table is random (seeded) unless given.
    """
    q64, k64 = _as_f64(q), _as_f64(k)
    _check_pair(q64, k64)
    _check_rope_settings(base, scale)
    offs = np.arange(query_position + 1) if offsets is None else np.asarray(offsets, dtype=np.int64).reshape(-1)
    keys = query_position - offs  # (O,)
    if query_position < 0 or (keys < 0).any():
        raise PositionsError(f"keys must sit at positions >= 0: offsets may be at most {query_position}")
    d = q64.shape[0]
    n_rows = int(max(query_position, keys.max(initial=0))) + 1
    key_index = torch.as_tensor(keys)  # (O,)

    rotated_q = _rotate_all(q64, _positions([query_position]), base, scale)[0]  # (d,)
    rotated_k = _rotate_all(k64, key_index.to(_F64), base, scale)  # (O, d)
    rope = _dot(rotated_k, rotated_q)  # (O,)

    def additive(table: torch.Tensor) -> np.ndarray:
        return _dot(k64 + table[key_index], q64 + table[query_position])  # (O,)

    sinusoidal = additive(sinusoid_rows(np.arange(n_rows), d, base))  # (O,)
    if learned_table is None:
        learned_table = random_learned_table(n_rows, d, learned_seed)
    learned_rows = _as_f64(learned_table)  # (P, d)
    if learned_rows.dim() != 2 or learned_rows.shape[0] < n_rows or learned_rows.shape[1] != d:
        raise PositionsError(f"the learned table must have at least {n_rows} rows of width {d}")
    learned = additive(learned_rows)  # (O,)
    return OffsetScores(
        query_position=int(query_position),
        offsets=offs,
        key_positions=keys,
        rope=rope,
        sinusoidal=sinusoidal,
        learned=learned,
    )


@dataclass(frozen=True)
class LockedOffsetTrace:
    """Slide a (query, key) pair along the sequence with the offset held fixed."""

    offset: int
    query_positions: np.ndarray  # (M,)
    key_positions: np.ndarray  # (M,) query - offset
    rope: np.ndarray  # (M,) constant up to rounding
    sinusoidal: np.ndarray  # (M,) drifts with absolute position


def locked_offset_trace(
    q: Vector, k: Vector, offset: int, m_range: Vector, base: float = DEFAULT_BASE, scale: float = 1.0
) -> LockedOffsetTrace:
    """RoPE vs additive sinusoids for query positions m in m_range and keys at m - offset."""
    q64, k64 = _as_f64(q), _as_f64(k)
    _check_pair(q64, k64)
    _check_rope_settings(base, scale)
    queries = np.asarray(m_range, dtype=np.int64).reshape(-1)  # (M,)
    keys = queries - offset  # (M,)
    if queries.size == 0:
        raise PositionsError("give at least one query position")
    if (keys < 0).any():
        raise PositionsError(f"with offset {offset} the query positions must start at {offset} or later")
    rotated_q = _rotate_all(q64, torch.as_tensor(queries, dtype=_F64), base, scale)  # (M, d)
    rotated_k = _rotate_all(k64, torch.as_tensor(keys, dtype=_F64), base, scale)  # (M, d)
    rope = _dot(rotated_q, rotated_k)  # (M,)
    d = q64.shape[0]
    sinusoidal = _dot(q64 + sinusoid_rows(queries, d, base), k64 + sinusoid_rows(keys, d, base))  # (M,)
    return LockedOffsetTrace(
        offset=int(offset), query_positions=queries, key_positions=keys, rope=rope, sinusoidal=sinusoidal
    )


@dataclass(frozen=True)
class RotationArrows:
    """Each (even, odd) pair of a vector as a 2-D arrow, before and after rotation to `position`."""

    position: float
    original: np.ndarray  # (d/2, 2)
    rotated: np.ndarray  # (d/2, 2)
    frequencies: np.ndarray  # (d/2,) radians per position, interpolation included: base^(-2i/d) / scale
    angles: np.ndarray  # (d/2,) radians turned at this position: position * frequency
    wavelengths: np.ndarray  # (d/2,) positions per full turn: 2*pi / frequency


def rotation_arrows(q: Vector, m: float, base: float = DEFAULT_BASE, scale: float = 1.0) -> RotationArrows:
    q64 = _as_f64(q)
    _check_pair(q64, q64)
    _check_rope_settings(base, scale)
    d = q64.shape[0]
    frequencies = rope_frequencies(d, base, dtype=_F64) / scale  # (d/2,)
    rotated = _rotate_all(q64, _positions([m]), base, scale)[0]  # (d,)
    return RotationArrows(
        position=float(m),
        original=q64.reshape(d // 2, 2).numpy(),
        rotated=rotated.reshape(d // 2, 2).numpy(),
        frequencies=frequencies.numpy(),
        angles=(frequencies * m).numpy(),
        wavelengths=(2 * math.pi / frequencies).numpy(),
    )


@dataclass(frozen=True)
class RopeNorms:
    positions: np.ndarray  # (P,)
    norms: np.ndarray  # (P,) ||R(m) q||
    original_norm: float  # ||q||: rotations are orthogonal, so every entry of norms equals this


def rope_norms(q: Vector, positions: Vector, base: float = DEFAULT_BASE, scale: float = 1.0) -> RopeNorms:
    q64 = _as_f64(q)
    _check_pair(q64, q64)
    _check_rope_settings(base, scale)
    pos = _positions(positions)  # (P,)
    rotated = _rotate_all(q64, pos, base, scale)  # (P, d)
    return RopeNorms(positions=pos.numpy(), norms=rotated.norm(dim=-1).numpy(), original_norm=float(q64.norm()))


# ---- textbook tables ---------------------------------------------------------------------------------
@dataclass(frozen=True)
class TextbookRopeTable:
    """The reading's RoPE script: rotated scores at fixed offsets, then the additive contrast."""

    q: np.ndarray  # (8,)
    k: np.ndarray  # (8,)
    rope_queries: np.ndarray  # (6,) m
    rope_keys: np.ndarray  # (6,) n
    rope_scores: np.ndarray  # (6,) R(m)q . R(n)k
    additive_queries: np.ndarray  # (3,)
    additive_keys: np.ndarray  # (3,)
    additive_scores: np.ndarray  # (3,) (q + PE[m]) . (k + PE[n])


def textbook_rope_table(seed: int = TEXTBOOK_ROPE_SEED) -> TextbookRopeTable:
    """The reading's RoPE script (numpy seeded with 0 draws q, then k); another seed draws another pair."""
    pair = seeded_qk(seed, TEXTBOOK_ROPE_DIM)
    rope_m = np.array([m for m, _ in TEXTBOOK_ROPE_PAIRS])
    rope_n = np.array([n for _, n in TEXTBOOK_ROPE_PAIRS])
    q, k = torch.from_numpy(pair.q), torch.from_numpy(pair.k)  # (8,) float64 each
    rope_scores = np.array([float(rope_rotate(q, m) @ rope_rotate(k, n)) for m, n in TEXTBOOK_ROPE_PAIRS])
    add_m = np.array([m for m, _ in TEXTBOOK_ADDITIVE_PAIRS])
    add_n = np.array([n for _, n in TEXTBOOK_ADDITIVE_PAIRS])
    table = sinusoidal_pe_table(int(add_m.max()) + 1, TEXTBOOK_ROPE_DIM)  # (104, 8)
    additive = np.array([(pair.q + table[m]) @ (pair.k + table[n]) for m, n in TEXTBOOK_ADDITIVE_PAIRS])
    return TextbookRopeTable(
        q=pair.q,
        k=pair.k,
        rope_queries=rope_m,
        rope_keys=rope_n,
        rope_scores=rope_scores,
        additive_queries=add_m,
        additive_keys=add_n,
        additive_scores=additive,
    )


class _TextbookSelfAttention(nn.Module):
    """The reading's single-head attention, verbatim: q, k, v Linear layers created in that order."""

    def __init__(self, d: int) -> None:
        super().__init__()
        self.q = nn.Linear(d, d)
        self.k = nn.Linear(d, d)
        self.v = nn.Linear(d, d)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        s = self.q(x) @ self.k(x).transpose(-2, -1) / math.sqrt(x.shape[-1])  # (B, T, T)
        return F.softmax(s, dim=-1) @ self.v(x)  # (B, T, d)


@dataclass(frozen=True)
class TextbookPermutationTable:
    permutation: np.ndarray  # (6,)
    no_pe_max_diff: float  # max |attn(x[perm]) - attn(x)[perm]|: float noise
    with_pe_max_diff: float  # the same with sinusoids added: order now matters
    pe_rows: np.ndarray  # (2,) which rows of the table are shown
    pe_values: np.ndarray  # (2, 6) their first six dimensions


def textbook_permutation_table(seed: int = TEXTBOOK_PERMUTATION_SEED) -> TextbookPermutationTable:
    """The reading's permutation script, drawing from torch's RNG exactly as it does.

    fork_rng restores the caller's global RNG afterwards: the script seeds the global generator
    (nn.Linear initialises from it), and an experiment must not reseed someone else's stream.
    Another `seed` draws other weights and x (the reading's is 0).
    """
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(seed)
        attention = _TextbookSelfAttention(TEXTBOOK_PERMUTATION_D_MODEL)
        x = torch.randn(1, TEXTBOOK_PERMUTATION_T, TEXTBOOK_PERMUTATION_D_MODEL)  # (1, T, d)
    perm = torch.tensor(TEXTBOOK_PERMUTATION)  # (T,)
    pe = sinusoidal_table(TEXTBOOK_PERMUTATION_T, TEXTBOOK_PERMUTATION_D_MODEL)  # (T, d) float32 like the script
    with torch.no_grad():
        y = attention(x)  # (1, T, d)
        y_perm = attention(x[:, perm, :])  # (1, T, d)
        z = attention(x + pe)  # (1, T, d)
        z_perm = attention(x[:, perm, :] + pe)  # (1, T, d)
    rows = np.array(TEXTBOOK_PE_ROWS)
    return TextbookPermutationTable(
        permutation=perm.numpy(),
        no_pe_max_diff=(y_perm - y[:, perm, :]).abs().max().item(),
        with_pe_max_diff=(z_perm - z[:, perm, :]).abs().max().item(),
        pe_rows=rows,
        pe_values=pe[rows, :TEXTBOOK_PE_DIMS].numpy(),
    )


# ---- other encodings -------------------------------------------------------------------------------
@dataclass(frozen=True)
class SinusoidalHeatmap:
    table: np.ndarray  # (P, d) rows = positions, columns = dimensions (sin at even, cos at odd)
    wavelengths: np.ndarray  # (d/2,) positions per cycle of each (sin, cos) pair
    pair_labels: tuple[str, ...]  # "dims 0-1", ...


def sinusoidal_heatmap(n_positions: int, d_model: int, base: float = DEFAULT_BASE) -> SinusoidalHeatmap:
    if n_positions < 1 or d_model < 2 or d_model % 2:
        raise PositionsError(f"need at least one position and an even d_model (got {n_positions}, {d_model})")
    table = sinusoidal_table(n_positions, d_model, base, dtype=_F64)  # (P, d)
    wavelengths = sinusoidal_wavelengths(d_model, base)  # (d/2,)
    labels = tuple(f"dims {2 * i}-{2 * i + 1}" for i in range(d_model // 2))
    return SinusoidalHeatmap(table=table.numpy(), wavelengths=wavelengths.numpy(), pair_labels=labels)


@dataclass(frozen=True)
class LearnedPositionTable:
    table: np.ndarray  # (P, d) the model's position embeddings
    row_norms: np.ndarray  # (P,)
    cosine_similarity: np.ndarray  # (S, S) between the first S rows: nearby rows alike only after training
    label: str


def learned_position_table(model: Transformer, max_similarity_rows: int = 256) -> LearnedPositionTable:
    config = model.config
    if config.positional != "learned":
        raise PositionsError(f"{config.name} uses {config.positional!r} positions, not a learned table")
    table = model.pos_emb.weight.detach().to(device="cpu", dtype=_F64)  # (P, d)
    shown = table[:max_similarity_rows]  # (S, d)
    unit = shown / shown.norm(dim=-1, keepdim=True).clamp_min(1e-300)  # (S, d)
    return LearnedPositionTable(
        table=table.numpy(),
        row_norms=table.norm(dim=-1).numpy(),
        cosine_similarity=(unit @ unit.T).numpy(),
        label=f"{config.name}: learned positions ({table.shape[0]} x {table.shape[1]})",
    )


@dataclass(frozen=True)
class AlibiMatrices:
    bias: np.ndarray  # (H, T, T) added to the scores: -slope * distance (-inf is NOT applied here)
    slopes: np.ndarray  # (H,)
    causal: bool
    head_labels: tuple[str, ...]


def alibi_matrix(n_heads: int, T: int, causal: bool = True) -> AlibiMatrices:
    if n_heads < 1 or T < 1:
        raise PositionsError(f"need at least one head and one position (got {n_heads}, {T})")
    slopes = alibi_slopes(n_heads)  # (H,)
    bias = alibi_bias(n_heads, T, causal=causal)  # (H, T, T)
    labels = tuple(f"head {h}: slope {float(s):.4g}" for h, s in enumerate(slopes))
    return AlibiMatrices(bias=bias.numpy(), slopes=slopes.numpy(), causal=causal, head_labels=labels)


# ---- permutation equivariance ------------------------------------------------------------------------
def default_permutation(T: int, seed: int = 0) -> list[int]:
    """The reading's shuffle for T = 6; otherwise a seeded random non-identity shuffle.

    Not simply reversed order: reversal keeps every |i - j|, so a bidirectional ALiBi layer would
    look order-blind under it (correctly, but uninformatively).
    """
    if T == TEXTBOOK_PERMUTATION_T:
        return list(TEXTBOOK_PERMUTATION)
    order = torch.randperm(T, generator=torch.Generator().manual_seed(seed)).tolist()
    return order if order != list(range(T)) else order[1:] + order[:1]


@dataclass(frozen=True)
class PermutationEquivariance:
    """Per encoding and position: max over features of |attn(shuffled x) - shuffle(attn(x))|."""

    encodings: tuple[str, ...]
    permutation: np.ndarray  # (T,)
    per_position: np.ndarray  # (E, T)
    max_diff: np.ndarray  # (E,)
    equivariant: np.ndarray  # (E,) bool: max_diff within noise_tolerance, i.e. the layer cannot see order
    noise_tolerance: float  # 100 float epsilons of the dtype: far above rounding, far below any real effect
    d_model: int
    n_heads: int
    seed: int
    dtype: str


def permutation_equivariance(
    config_or_kind: ModelConfig | str | None = None,
    seed: int = 0,
    T: int = 6,
    d_model: int = 32,
    perm: Sequence[int] | None = None,
    n_heads: int = 1,
    dtype: torch.dtype = torch.float32,
) -> PermutationEquivariance:
    """One attention layer (core.model.Attention, mask "none"), one random x, every encoding.

    config_or_kind: None runs none/sinusoidal/learned/rope; an encoding name runs that one; a
    ModelConfig takes its d_model, n_heads, bias and RoPE base/scale and runs all four (plus
    ALiBi when the config uses it). The weights, x and the learned table (untrained, N(0, 1)
    like a fresh nn.Embedding: the reading's exercise 4) come from `seed`, not the global RNG.
    Additive encodings are added to x; RoPE rotates q and k by position inside the layer; ALiBi
    adds its (bidirectional) distance penalty to the scores.
    """
    rope_base, rope_scale, bias = DEFAULT_BASE, 1.0, True
    if isinstance(config_or_kind, ModelConfig):
        d_model, n_heads = config_or_kind.d_model, config_or_kind.n_heads
        rope_base, rope_scale, bias = config_or_kind.rope_base, config_or_kind.rope_scale, config_or_kind.bias
        uses_alibi = config_or_kind.positional == "alibi"
        encodings: tuple[str, ...] = PERMUTATION_ENCODINGS + (("alibi",) if uses_alibi else ())
    elif config_or_kind is None:
        encodings = PERMUTATION_ENCODINGS
    elif config_or_kind in KNOWN_PERMUTATION_ENCODINGS:
        encodings = (config_or_kind,)
    else:
        known = ", ".join(KNOWN_PERMUTATION_ENCODINGS)
        raise PositionsError(f"unknown encoding {config_or_kind!r}; choose one of {known}")
    if T < 2:
        raise PositionsError(f"a permutation needs at least 2 positions, got T = {T}")
    order = default_permutation(T, seed) if perm is None else [int(p) for p in perm]
    if sorted(order) != list(range(T)):
        raise PositionsError(f"the permutation must reorder 0..{T - 1} exactly once each, got {order}")
    try:
        config = ModelConfig(
            name="permutation-probe", d_model=d_model, n_heads=n_heads, context_length=T, positional="none", bias=bias
        ).validated()
    except ValueError as error:
        raise PositionsError(str(error)) from None
    if "rope" in encodings and config.d_head % 2:
        raise PositionsError(f"RoPE needs an even head width, got d_head = {config.d_head}")
    if "sinusoidal" in encodings and d_model % 2:
        raise PositionsError(f"sinusoids pair sin and cos, so d_model must be even (got {d_model})")

    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(seed)
        attention = Attention(config).to(dtype).eval()
        x = torch.randn(1, T, d_model, dtype=dtype)  # (1, T, D)
        learned = torch.randn(T, d_model, dtype=dtype)  # (T, D)
    shuffle = torch.tensor(order)  # (T,)
    positions = torch.arange(T, dtype=_F64)  # (T,)
    cos, sin = rope_angles(positions, config.d_head, rope_base, rope_scale)  # (T, d/2) each
    rope = (cos.to(dtype), sin.to(dtype))
    additive = {"sinusoidal": sinusoidal_table(T, d_model, dtype=dtype), "learned": learned}

    rows = []
    with torch.no_grad():
        for encoding in encodings:
            kwargs: dict = {"mask_mode": "none"}
            if encoding == "rope":
                kwargs["rope"] = rope
            elif encoding == "alibi":
                kwargs["score_bias"] = alibi_bias(n_heads, T, causal=False).to(dtype)  # (H, T, T)
            table = additive.get(encoding)
            x_plain = x if table is None else x + table  # (1, T, D)
            x_shuffled = x[:, shuffle, :] if table is None else x[:, shuffle, :] + table  # (1, T, D)
            y = attention(x_plain, **kwargs)  # (1, T, D)
            y_shuffled = attention(x_shuffled, **kwargs)  # (1, T, D)
            rows.append((y_shuffled - y[:, shuffle, :]).abs().amax(dim=-1)[0].to(_F64))  # (T,)
    per_position = torch.stack(rows)  # (E, T)
    max_diff = per_position.amax(dim=-1)  # (E,)
    tolerance = 100 * torch.finfo(dtype).eps
    return PermutationEquivariance(
        encodings=encodings,
        permutation=np.array(order),
        per_position=per_position.numpy(),
        max_diff=max_diff.numpy(),
        equivariant=(max_diff <= tolerance).numpy(),
        noise_tolerance=tolerance,
        d_model=d_model,
        n_heads=n_heads,
        seed=seed,
        dtype=str(dtype).removeprefix("torch."),
    )
