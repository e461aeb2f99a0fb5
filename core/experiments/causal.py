"""Tokens and masks: edit one token and measure, layer by layer, which positions moved.

The reading's hard claim is that under a causal mask an edit at position t leaves every position
before t *bit-for-bit* unchanged, in every layer. The functions here measure that claim instead of
asserting it: the original and the edited sequence run through the same model as two batches of one
(same kernels, same shapes, each row at the same place in every matrix product), the residual stream is
captured after the embedding and after every block, and "unchanged" means `torch.equal`, never "smaller
than a threshold".

Never as one batch of two: a BLAS kernel may compute the rows of a product in blocks whose size follows
its SIMD width, and the last, partial block with another micro-kernel. The same row then rounds
differently at offset t than at offset T + t (MKL's AVX2 path does, so an AMD EPYC showed a causal
model's past moving by 1e-7 where this machine's AVX-512 path did not).

Everything returns frozen dataclasses of numpy arrays plus labels, so a panel only indexes them.
Nothing here imports Qt.
"""

from __future__ import annotations

import math
import weakref
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Literal, get_args

import numpy as np
import torch
import torch.nn.functional as F

from core import kernels
from core.choices import MASK_MODE_DESCRIPTIONS, MASK_MODES
from core.config import ConfigError, ModelConfig
from core.display import display_token
from core.hooks import HookPoint, capture
from core.model import (
    Attention,
    Block,
    MaskMode,
    SequenceError,
    Transformer,
    count_parameters,
    future_mask,
)
from core.presets import get_preset

TEXTBOOK_PRESET = "textbook-block"
TEXTBOOK_SEED = 0
TEXTBOOK_BATCH = 2
TEXTBOOK_EDIT_POSITION = 5

MaskGridKind = Literal["decoder-self", "encoder-self", "cross"]
MASK_GRID_KINDS: tuple[str, ...] = get_args(MaskGridKind)


class _ReadOnlyArrays:
    """Results cross from the compute worker to the GUI thread: make their arrays read-only too."""

    def __post_init__(self) -> None:
        for value in vars(self).values():
            if isinstance(value, np.ndarray):
                value.flags.writeable = False


# ---- labels ------------------------------------------------------------------------------------
def token_labels(ids: Sequence[int], tokenizer_or_labels=None) -> tuple[str, ...]:
    """Labels for token ids from a tokenizer (anything with `token_text`), a list of labels, or the ids."""
    if tokenizer_or_labels is None:
        return tuple(str(int(i)) for i in ids)
    if hasattr(tokenizer_or_labels, "token_text"):
        # A model's vocabulary can be larger than the tokenizer beside it (a GPT-2 shape over the lab's
        # characters): an id the tokenizer lacks is labelled by its number, never an error.
        size = getattr(tokenizer_or_labels, "vocab_size", None)
        return tuple(display_token(tokenizer_or_labels.token_text(int(i))) if size is None or 0 <= int(i) < size
                     else f"#{int(i)}" for i in ids)
    labels = list(tokenizer_or_labels)
    for i in ids:
        if not 0 <= int(i) < len(labels):
            raise SequenceError(f"token id {int(i)} has no label (the label list has {len(labels)} entries)")
    return tuple(str(labels[int(i)]) for i in ids)


def _layer_labels(n_blocks: int, first: str = "embedding") -> tuple[str, ...]:
    return (first,) + tuple(f"block {i}" for i in range(n_blocks))


def _model_device(model: torch.nn.Module) -> torch.device:
    return next(model.parameters()).device


def _as_token_list(tokens) -> list[int]:
    if isinstance(tokens, torch.Tensor):
        if tokens.is_floating_point():
            raise SequenceError("token ids must be whole numbers")
        tokens = tokens.reshape(-1).tolist()
    ids = [int(t) for t in tokens]
    if not ids:
        raise SequenceError("the sequence is empty; give at least one token")
    return ids


# ---- the reading's table -----------------------------------------------------------------------
@dataclass(frozen=True)
class TextbookCausalTable(_ReadOnlyArrays):
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


# ---- edit diffs ----------------------------------------------------------------------------------
@dataclass(frozen=True)
class CausalDiffResult(_ReadOnlyArrays):
    """Which (layer, position) of the residual stream moved when one token was edited.

    Row 0 of the (L+1, T) arrays is the stream after the embedding (and positions), row i the
    stream after block i-1. Entries that are NaN in either run (the off-by-one mask's fully masked
    row) have max_change NaN and are flagged in `nan_entries`; they are never "exactly unchanged",
    and they count as moved only where the NaN appears in one run and not the other.
    """

    max_change: np.ndarray  # (L+1, T) float64 max |edited - original| over d_model
    exactly_unchanged: np.ndarray  # (L+1, T) bool, torch.equal of the two runs' vectors
    nan_entries: np.ndarray  # (L+1, T) bool, a NaN in either run (the comparison is undefined there)
    logits_change: np.ndarray | None  # (T,) float64 max |change| of the logits; None for a bare block
    logits_exactly_unchanged: np.ndarray | None  # (T,) bool, torch.equal of the logits per position
    layer_labels: tuple[str, ...]  # L+1 row labels: "embedding", "block 0", ...
    token_labels: tuple[str, ...]  # T labels of the original sequence
    edited_token_labels: tuple[str, ...]  # T labels of the edited sequence
    edit_position: int  # the edited position t
    mask_mode: str  # the self-attention mask both runs used
    leaks_into_past: bool  # measured: some position < t changed in some layer (NaN in both runs is no change)
    past_moved_by_layer: np.ndarray  # (L+1,) bool, some position < t changed in that row
    first_leaking_layer: int | None  # the first row index where the past moved, None if never
    past_exactly_unchanged: bool  # every position < t in every row passed torch.equal (no NaN either)
    note: str  # what was measured, in words (the NaN pitfall, the encoder's fixed source, ...)
    reference_reused: bool = False  # the kept run of the original was compared, not recomputed
    # Worker-only (torch tensors, see ResidualRun): the two runs of the diff. Keep one as the next
    # edit's reference; drop them before the result leaves the worker.
    original_run: ResidualRun | None = field(default=None, repr=False, compare=False)
    edited_run: ResidualRun | None = field(default=None, repr=False, compare=False)

    @property
    def n_layers(self) -> int:
        return self.max_change.shape[0] - 1

    @property
    def n_tokens(self) -> int:
        return self.max_change.shape[1]

    def to_dict(self) -> dict:
        """JSON-safe: NaN becomes None."""

        def clean(array: np.ndarray | None):
            if array is None:
                return None
            return np.where(np.isnan(array), None, array.astype(object)).tolist()

        return {
            "mask_mode": self.mask_mode,
            "edit_position": self.edit_position,
            "layer_labels": list(self.layer_labels),
            "token_labels": list(self.token_labels),
            "edited_token_labels": list(self.edited_token_labels),
            "max_change": clean(self.max_change),
            "exactly_unchanged": self.exactly_unchanged.tolist(),
            "nan_entries": self.nan_entries.tolist(),
            "logits_change": clean(self.logits_change),
            "logits_exactly_unchanged": None if self.logits_exactly_unchanged is None else self.logits_exactly_unchanged.tolist(),
            "leaks_into_past": self.leaks_into_past,
            "past_moved_by_layer": self.past_moved_by_layer.tolist(),
            "first_leaking_layer": self.first_leaking_layer,
            "past_exactly_unchanged": self.past_exactly_unchanged,
            "note": self.note,
        }


def _compare_runs(
    originals: Sequence[torch.Tensor], editeds: Sequence[torch.Tensor]
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Per (row, position) of the two runs: max |change|, torch.equal, NaN in either run, and
    equality that counts NaN == NaN (the past did not move even where both runs are NaN).
    Each row of either run: (T, D)."""
    n_tokens = originals[0].shape[0]
    max_change = np.empty((len(originals), n_tokens), dtype=np.float64)
    exactly = np.empty((len(originals), n_tokens), dtype=bool)
    nan_entries = np.empty((len(originals), n_tokens), dtype=bool)
    equal_nan = np.empty((len(originals), n_tokens), dtype=bool)
    for row, (original, edited) in enumerate(zip(originals, editeds, strict=True)):  # (T, D) each
        # float64 so that a difference of one float32 ulp is shown as such, never rounded to zero.
        max_change[row] = (edited.double() - original.double()).abs().amax(dim=-1).cpu().numpy()  # (T,)
        original_nan, edited_nan = original.isnan(), edited.isnan()  # (T, D) each
        nan_entries[row] = (original_nan | edited_nan).any(dim=-1).cpu().numpy()  # (T,)
        equal_nan[row] = ((original == edited) | (original_nan & edited_nan)).all(dim=-1).cpu().numpy()  # (T,)
        exactly[row] = _torch_equal_per_position(original, edited, max_change[row])
    return max_change, exactly, nan_entries, equal_nan


def _torch_equal_per_position(original: torch.Tensor, edited: torch.Tensor, max_change: np.ndarray) -> np.ndarray:
    """torch.equal(original[t], edited[t]) for every t; original, edited: (T, D).

    A position whose max |change| is already > 0 cannot be equal, so torch.equal is asked only
    where the difference is 0 or NaN: the same answer, without a call per changed position.
    """
    exactly = np.zeros(len(max_change), dtype=bool)
    for t in np.flatnonzero(~(max_change > 0)):
        exactly[t] = torch.equal(original[t], edited[t])
    return exactly


def _measure_past(
    exactly: np.ndarray, equal_nan: np.ndarray, position: int
) -> tuple[bool, np.ndarray, int | None, bool]:
    """A past entry moved unless it is bitwise equal, NaN == NaN included (a NaN in one run only moved)."""
    past_moved = (~equal_nan[:, :position]).any(axis=1)  # (L+1,)
    leaking_rows = np.flatnonzero(past_moved)
    first = int(leaking_rows[0]) if leaking_rows.size else None
    return bool(past_moved.any()), past_moved, first, bool(exactly[:, :position].all())


def _describe(
    mask_mode: str,
    position: int,
    leaks: bool,
    first_leaking_layer: int | None,
    past_exact: bool,
    nan_entries: np.ndarray,
    layer_labels: Sequence[str],
    identical_edit: bool,
    extra: str = "",
) -> str:
    parts = []
    if identical_edit:
        parts.append("The edit replaces a token by itself, so nothing can change.")
    if position == 0:
        parts.append("The edit is at position 0: there is no past to protect.")
    elif past_exact:
        verb = "is" if position == 1 else "are"
        unchanged = f"{past_span(position).capitalize()} {verb} bitwise unchanged (torch.equal) in every layer"
        if mask_mode in ("causal", "off-by-one") or identical_edit:
            parts.append(f"{unchanged} under the {mask_mode!r} mask: none of them can see position {position}.")
        else:
            # Possible with tiny weights: the leak exists but is smaller than float32 can register.
            parts.append(
                f"{unchanged}, although the {mask_mode!r} mask lets position {position} reach them: the change "
                "was below float32 resolution at these weights, not blocked."
            )
    elif leaks:
        parts.append(
            f"The past moves: positions before {position} change from {layer_labels[first_leaking_layer]} on "
            f"under the {mask_mode!r} mask."
        )
    if nan_entries.any():
        nan_rows = np.flatnonzero(nan_entries.any(axis=1))
        parts.append(
            f"NaN appears from {layer_labels[int(nan_rows[0])]} on, in both runs: a query whose keys are all "
            "masked gets softmax 0/0 (the reading's fully-masked-row pitfall; with diagonal=0 that is token 0, "
            "which sees nothing), and a NaN value vector poisons every later query that can see it. NaN entries "
            "are shown as NaN, never as unchanged; NaN in both runs at the same place does not count as a move."
        )
        if not leaks and position > 0:
            parts.append("Apart from NaN that both runs share, the past did not move.")
    if mask_mode == "off-by-one":
        parts.append(
            "Off-by-one hides each token from itself as well as from the future, so it cannot leak the "
            "future into the past; it breaks the model instead (no token's attention reads its own value)."
        )
    elif mask_mode == "after-softmax":
        parts.append(
            "After-softmax zeroes the future's weights only after the softmax, so the edited token's score "
            "still sat in every earlier row's denominator"
            + (": the past moves." if leaks else ", so the past can move.")
        )
    if extra:
        parts.append(extra)
    return " ".join(parts)


def past_span(position: int) -> str:
    """'position 0' or 'positions 0-4': the positions before an edit, in words."""
    return "position 0" if position == 1 else f"positions 0-{position - 1}"


def _check_position(position: int, n_tokens: int) -> None:
    if not 0 <= position < n_tokens:
        raise SequenceError(f"edit position {position} is outside the sequence (0..{n_tokens - 1})")


def _run_settings(model: Transformer, mask_mode: str | None, n_blocks: int | None) -> tuple[str, int]:
    """The mask mode and block count a run really uses, checked before any work."""
    if n_blocks is not None and not 0 <= n_blocks <= len(model.blocks):
        raise SequenceError(f"n_blocks must be between 0 and {len(model.blocks)}, got {n_blocks}")
    if mask_mode is not None and mask_mode not in MASK_MODES:
        raise SequenceError(f"unknown mask mode {mask_mode!r}; choose one of {', '.join(MASK_MODES)}")
    mode = mask_mode or ("causal" if model.config.self_attention_causal else "none")
    return mode, len(model.blocks) if n_blocks is None else n_blocks


def _run_key(model: Transformer) -> tuple:
    """Changes whenever a run of the same ids could give other numbers: any parameter stepped or
    loaded in place (its autograd version counter), replaced, or moved to another device or dtype;
    another intra-op thread count (a kernel may split its reductions by thread); another kernel path
    or precision of the linear layers (core.kernels); or a hook left on the model that sends
    attention down its explicit path instead of the fused kernel."""
    params = tuple((p.data_ptr(), p._version, p.dtype, str(p.device)) for p in model.parameters())
    points = model.named_modules()
    observed = tuple(name for name, point in points if isinstance(point, HookPoint) and point.is_observed)
    return params, torch.get_num_threads(), kernels.run_key(), observed


@dataclass(frozen=True, eq=False)
class ResidualRun:
    """The residual stream of ONE sequence after the embedding and after every block, as computed.

    Worker-only data: the tensors stay on the model's device for the compute worker to keep as the
    reference of the next edit diff (`causal_edit_diff(..., reference=run)`), so that only the edited
    sequence runs. It is not a result for the GUI thread and has no numpy view.

    Every run is a batch of one through `_forward_streams`, so a kept run and a fresh one take the
    same kernels with the same shapes and compare bitwise. It remembers what it was computed with,
    and `matches` refuses it for any other model, weights, ids, mask, depth or source.
    """

    streams: tuple[torch.Tensor, ...] = field(repr=False)  # L+1 tensors (1, T, D): the embedding, block 0, ...
    ids: tuple[int, ...]  # the T token ids
    mask_mode: str  # the self-attention mask the run used (resolved, never None)
    n_blocks: int  # how many blocks ran
    source_ids: tuple[int, ...] | None  # what an encoder-decoder's encoder read; None for one tower
    logits: torch.Tensor | None = field(repr=False)  # (1, T, V) when run with the vocabulary head, else None
    _model: weakref.ReferenceType = field(repr=False)  # a weak reference: id(model) may be reused after GC
    _key: tuple = field(repr=False)  # _run_key(model) at the time of the run

    @property
    def with_logits(self) -> bool:
        return self.logits is not None

    @property
    def model(self) -> Transformer | None:
        """The model of the run, or None once it has been garbage-collected."""
        return self._model()

    def matches(
        self,
        model: Transformer,
        ids: Sequence[int],
        mask_mode: str,
        n_blocks: int,
        source_ids: Sequence[int] | None,
        with_logits: bool = False,
    ) -> bool:
        """True if this run is what `model` computes now for these ids and settings (resolved values)."""
        return (
            self._model() is model
            and self.ids == tuple(ids)
            and self.mask_mode == mask_mode
            and self.n_blocks == n_blocks
            and self.source_ids == (None if source_ids is None else tuple(source_ids))
            and (self.with_logits or not with_logits)
            and self._key == _run_key(model)
        )


def _forward_streams(
    model: Transformer,
    batch: torch.Tensor,
    source_batch: torch.Tensor | None,
    mode: str,
    n_run: int,
    with_logits: bool,
) -> tuple[list[torch.Tensor], torch.Tensor | None]:
    """One forward pass that records the residual stream after the embedding and after each block.

    batch: (B, T) ids. Returns L+1 streams of shape (B, T, D) and the logits (B, T, V), or None when
    the pass stops at the final norm. The recording hooks do not observe attention, so every
    block keeps its fused kernel.
    """
    hooks = ["hook_embed"] + [f"blocks.{i}.hook_resid_post" for i in range(n_run)]
    with torch.inference_mode(), capture(model, hooks) as store:
        out = model(batch, source=source_batch, mask_mode=mode, n_blocks=n_run, head=with_logits)  # (B, T, V|D)
    return [store[name] for name in hooks], (out if with_logits else None)


def _residual_run(
    model: Transformer,
    ids: list[int],
    mode: str,
    n_run: int,
    source_ids: list[int] | None,
    with_logits: bool,
) -> ResidualRun:
    device = _model_device(model)
    batch = torch.tensor([ids], dtype=torch.long, device=device)  # (1, T)
    source_batch = None if source_ids is None else torch.tensor([source_ids], dtype=torch.long, device=device)  # (1, S)
    streams, logits = _forward_streams(model, batch, source_batch, mode, n_run, with_logits)  # (1, T, D) each
    return ResidualRun(
        streams=tuple(streams),
        ids=tuple(ids),
        mask_mode=mode,
        n_blocks=n_run,
        source_ids=None if source_ids is None else tuple(source_ids),
        logits=logits,
        _model=weakref.ref(model),
        _key=_run_key(model),
    )


def _run_source(config: ModelConfig, ids: list[int], source) -> list[int] | None:
    """What the encoder of an encoder-decoder reads: `source`, else the tokens themselves."""
    if config.architecture != "encoder-decoder":
        return None
    return list(ids) if source is None else _as_token_list(source)


def residual_run(
    model: Transformer,
    ids,
    mask_mode: MaskMode | None = None,
    n_blocks: int | None = None,
    source=None,
    with_logits: bool = False,
) -> ResidualRun:
    """Run one sequence (a batch of one) and keep its residual stream per row, for later edit diffs.

    mask_mode None is the model's own mask; n_blocks runs only the first blocks; an
    encoder-decoder's encoder reads `source` (default: the tokens). with_logits also runs the
    vocabulary head and keeps the logits; without it the pass stops at the final norm.
    """
    token_ids = _as_token_list(ids)
    mode, n_run = _run_settings(model, mask_mode, n_blocks)
    return _residual_run(model, token_ids, mode, n_run, _run_source(model.config, token_ids, source), with_logits)


def causal_edit_diff(
    model: Transformer,
    tokens,
    position: int,
    new_token: int,
    mask_mode: MaskMode | None = None,
    n_blocks: int | None = None,
    tokenizer_or_labels=None,
    source=None,
    edit_source: bool = False,
    reference: ResidualRun | None = None,
    with_logits: bool = True,
) -> CausalDiffResult:
    """Edit `tokens[position]` to `new_token` and measure the change at every (layer, position).

    tokens: a sequence of ids (or a 1-D / (1, T) tensor). mask_mode None means the model's own
    self-attention mask (causal for a decoder, none for an encoder). n_blocks runs only the first
    blocks. For an encoder-decoder the rows are the decoder tower; its encoder reads `source`
    (default: the original tokens) in both runs, so only the decoder input differs, unless
    edit_source is set, in which case each run's encoder reads its own tokens.

    The original and the edited sequence each run as a batch of one. With a reference (a
    `residual_run` of the original), only the edited sequence runs, and the result keeps both runs (`original_run`, `edited_run`) so that the
    caller can reuse either for the next edit. A reference computed for another model, weights,
    ids, mask, depth or source is never compared: the original is recomputed instead and
    `reference_reused` is False. with_logits=False stops both runs at the final norm and leaves the
    logits fields None.
    """
    ids = _as_token_list(tokens)
    _check_position(position, len(ids))
    config = model.config
    mode, n_run = _run_settings(model, mask_mode, n_blocks)
    edited = list(ids)
    edited[position] = int(new_token)
    extra = ""
    original_source = edited_source = None
    if config.architecture == "encoder-decoder":
        if edit_source:
            original_source, edited_source = ids, edited
            extra = "Each run's encoder read its own tokens, so cross-attention carries the edit to every position."
        else:
            original_source = edited_source = _run_source(config, ids, source)
            extra = "Rows are the decoder tower; its encoder read the same unedited source in both runs."
    # Both runs are batches of one through the same path (see the module's docstring), so a kept run
    # compares bitwise with a fresh one too.
    reused = reference is not None and reference.matches(model, ids, mode, n_run, original_source, with_logits)
    original_run = reference if reused else _residual_run(model, ids, mode, n_run, original_source, with_logits)
    edited_run = _residual_run(model, edited, mode, n_run, edited_source, with_logits)
    originals = [s[0] for s in original_run.streams]  # (T, D) each
    editeds = [s[0] for s in edited_run.streams]  # (T, D) each
    original_logits = edited_logits = None
    if with_logits:
        original_logits, edited_logits = original_run.logits[0], edited_run.logits[0]  # (T, V) each
    max_change, exactly, nan_entries, equal_nan = _compare_runs(originals, editeds)
    logits_change = logits_exact = None
    if original_logits is not None:
        logits_change = (edited_logits - original_logits).abs_().amax(dim=-1).double().cpu().numpy()  # (T,)
        logits_exact = _torch_equal_per_position(original_logits, edited_logits, logits_change)
    leaks, past_moved, first, past_exact = _measure_past(exactly, equal_nan, position)
    layers = _layer_labels(n_run)
    return CausalDiffResult(
        max_change=max_change,
        exactly_unchanged=exactly,
        nan_entries=nan_entries,
        logits_change=logits_change,
        logits_exactly_unchanged=logits_exact,
        layer_labels=layers,
        token_labels=token_labels(ids, tokenizer_or_labels),
        edited_token_labels=token_labels(edited, tokenizer_or_labels),
        edit_position=position,
        mask_mode=mode,
        leaks_into_past=leaks,
        past_moved_by_layer=past_moved,
        first_leaking_layer=first,
        past_exactly_unchanged=past_exact,
        note=_describe(mode, position, leaks, first, past_exact, nan_entries, layers, ids == edited, extra),
        reference_reused=reused,
        original_run=original_run,
        edited_run=edited_run,
    )


def block_edit_diff(
    blocks: Block | Sequence[Block],
    inputs: torch.Tensor,
    position: int,
    replacement: torch.Tensor,
    mask_mode: MaskMode = "causal",
) -> CausalDiffResult:
    """The same measurement on bare blocks fed raw vectors (the reading's setup: no embedding).

    inputs: (T, D) one sequence of input vectors; replacement: (D,) the new vector at `position`.
    Row 0 is the input itself, row i the output of block i-1. Each sequence runs as a batch of one.
    """
    chain = [blocks] if isinstance(blocks, Block) else list(blocks)
    if inputs.dim() != 2:
        raise SequenceError(f"inputs must be one (T, d_model) sequence, got shape {tuple(inputs.shape)}")
    _check_position(position, inputs.shape[0])
    if mask_mode not in MASK_MODES:
        raise SequenceError(f"unknown mask mode {mask_mode!r}; choose one of {', '.join(MASK_MODES)}")
    edited = inputs.clone()  # (T, D)
    edited[position] = replacement.to(inputs)  # (D,)
    runs = []
    for sequence in (inputs, edited):
        x = sequence.unsqueeze(0)  # (1, T, D)
        streams = [x[0]]
        with torch.inference_mode():
            for block in chain:
                x = block(x, mask_mode=mask_mode)  # (1, T, D)
                streams.append(x[0])  # (T, D)
        runs.append(streams)
    max_change, exactly, nan_entries, equal_nan = _compare_runs(*runs)
    leaks, past_moved, first, past_exact = _measure_past(exactly, equal_nan, position)
    layers = _layer_labels(len(chain), first="input")
    labels = tuple(f"x{t}" for t in range(inputs.shape[0]))
    edited_labels = tuple(f"x{t}'" if t == position else f"x{t}" for t in range(inputs.shape[0]))
    return CausalDiffResult(
        max_change=max_change,
        exactly_unchanged=exactly,
        nan_entries=nan_entries,
        logits_change=None,
        logits_exactly_unchanged=None,
        layer_labels=layers,
        token_labels=labels,
        edited_token_labels=edited_labels,
        edit_position=position,
        mask_mode=mask_mode,
        leaks_into_past=leaks,
        past_moved_by_layer=past_moved,
        first_leaking_layer=first,
        past_exactly_unchanged=past_exact,
        note=_describe(mask_mode, position, leaks, first, past_exact, nan_entries, layers, bool(torch.equal(inputs, edited))),
    )


def random_block_edit_diff(
    config: ModelConfig | None = None,
    seed: int = 0,
    n_tokens: int | None = None,
    position: int = TEXTBOOK_EDIT_POSITION,
    mask_mode: MaskMode = "causal",
    n_blocks: int = 1,
) -> CausalDiffResult:
    """Stacked bare blocks (default: the reading's textbook block) on random input vectors.

    Weights use PyTorch's default init and the inputs are standard normal, all drawn from `seed`
    without touching the caller's global RNG.
    """
    config = config or get_preset(TEXTBOOK_PRESET)
    n_tokens = n_tokens or config.context_length
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(seed)
        chain = [Block(config).eval() for _ in range(n_blocks)]
        inputs = torch.randn(n_tokens, config.d_model)  # (T, D)
        replacement = torch.randn(config.d_model)  # (D,)
    return block_edit_diff(chain, inputs, position, replacement, mask_mode)


# ---- mask grids ----------------------------------------------------------------------------------
@dataclass(frozen=True)
class MaskGrid(_ReadOnlyArrays):
    """Which key each query can read, as the model applies it (True = visible)."""

    visible: np.ndarray  # (T, S) bool, keys whose values can be mixed into the query's output
    in_denominator: np.ndarray  # (T, S) bool, keys whose scores enter the query's softmax
    query_labels: tuple[str, ...]  # T row labels
    key_labels: tuple[str, ...]  # S column labels
    kind: str  # decoder-self, encoder-self or cross
    mask_mode: str  # the mask the grid shows ("none" for cross-attention)
    title: str  # e.g. "decoder self-attention, causal mask"
    empty_rows: np.ndarray  # (T,) bool, queries that see no key at all (softmax 0/0 -> NaN)
    note: str  # what the grid means


def _self_attention_mode(config: ModelConfig, kind: str, mask_mode: str | None) -> str:
    if kind == "decoder-self":
        if config.decoder_layers == 0:
            raise ConfigError("architecture", "an encoder-only model has no decoder self-attention")
        return mask_mode or ("causal" if config.self_attention_causal else "none")
    if config.encoder_layers == 0:
        raise ConfigError("architecture", "a decoder-only model has no encoder self-attention")
    if config.architecture == "encoder-decoder" and mask_mode not in (None, "none"):
        raise ConfigError("architecture", "the encoder tower of an encoder-decoder always attends both ways")
    return mask_mode or "none"


def mask_grid(
    config: ModelConfig,
    n_tokens: int,
    kind: MaskGridKind = "decoder-self",
    mask_mode: MaskMode | None = None,
    n_source: int | None = None,
    query_labels: Sequence[str] | None = None,
    key_labels: Sequence[str] | None = None,
) -> MaskGrid:
    """The (T, S) visibility grid of one kind of attention under one mask mode.

    mask_mode None means what the model does by default. Cross-attention (an encoder-decoder's
    decoder reading the encoder output) has no mask: every query sees all n_source keys.
    """
    if kind not in MASK_GRID_KINDS:
        raise ValueError(f"unknown attention kind {kind!r}; choose one of {', '.join(MASK_GRID_KINDS)}")
    if mask_mode is not None and mask_mode not in MASK_MODES:
        raise ValueError(f"unknown mask mode {mask_mode!r}; choose one of {', '.join(MASK_MODES)}")
    if n_tokens < 1:
        raise SequenceError("a mask grid needs at least one token")
    if kind == "cross":
        if config.architecture != "encoder-decoder":
            raise ConfigError("architecture", "only an encoder-decoder model has cross-attention")
        if mask_mode not in (None, "none"):
            raise ConfigError("attention", "cross-attention is never masked: the decoder reads the whole source")
        n_keys = n_tokens if n_source is None else n_source
        visible = np.ones((n_tokens, n_keys), dtype=bool)  # (T, S)
        denominator = visible.copy()
        mode = "none"
        note = "Cross-attention: every decoder position reads every encoder position; the source is fully known."
    else:
        mode = _self_attention_mode(config, kind, mask_mode)
        n_keys = n_tokens
        # The same helper the model masks with, so the grid is the model's mask, not a redrawing of it.
        later = future_mask(n_tokens, n_keys, 1, torch.device("cpu")).numpy()  # (T, S) True = future
        self_and_later = future_mask(n_tokens, n_keys, 0, torch.device("cpu")).numpy()  # (T, S)
        everything = np.ones((n_tokens, n_keys), dtype=bool)
        if mode == "causal":
            visible, denominator = ~later, ~later
        elif mode == "off-by-one":
            visible, denominator = ~self_and_later, ~self_and_later
        elif mode == "after-softmax":
            visible, denominator = ~later, everything
        else:
            visible, denominator = everything, everything.copy()
        note = MASK_MODE_DESCRIPTIONS[mode]
    empty = ~visible.any(axis=1)  # (T,)
    where = {"decoder-self": "decoder self-attention", "encoder-self": "encoder self-attention", "cross": "cross-attention"}[kind]
    if kind == "decoder-self" and config.architecture == "decoder":
        where = "self-attention"
    rows = tuple(query_labels) if query_labels is not None else tuple(str(t) for t in range(n_tokens))
    cols = tuple(key_labels) if key_labels is not None else tuple(str(s) for s in range(n_keys))
    if len(rows) != n_tokens or len(cols) != n_keys:
        raise SequenceError(f"expected {n_tokens} query labels and {n_keys} key labels")
    return MaskGrid(
        visible=visible,
        in_denominator=denominator,
        query_labels=rows,
        key_labels=cols,
        kind=kind,
        mask_mode=mode,
        title=f"{where}, {'no' if mode == 'none' else mode} mask",
        empty_rows=empty,
        note=note,
    )


# ---- attention maps ------------------------------------------------------------------------------
@dataclass(frozen=True)
class AttentionMaps(_ReadOnlyArrays):
    weights: np.ndarray  # (L, H, T, S) float32 attention weights of the chosen layers (one sequence)
    layers: tuple[int, ...]  # block index of each of the L maps
    layer_labels: tuple[str, ...]  # "block 0", ...
    query_labels: tuple[str, ...]  # T labels
    key_labels: tuple[str, ...]  # S labels (the source for cross-attention)
    mask_mode: str  # the self-attention mask used
    attention: str  # "self" or "cross"
    has_nan: bool  # NaN in some weight (a fully masked row)


def _chosen_layers(layer: int | Sequence[int] | None, n_blocks: int) -> tuple[int, ...]:
    if layer is None:
        chosen = tuple(range(n_blocks))
    elif isinstance(layer, int):
        chosen = (layer,)
    else:
        chosen = tuple(int(i) for i in layer)
    if not chosen:
        raise SequenceError("choose at least one layer")
    for index in chosen:
        if not 0 <= index < n_blocks:
            raise SequenceError(f"layer {index} does not exist (the model has blocks 0..{n_blocks - 1})")
    return chosen


def attention_maps(
    model: Transformer,
    tokens,
    layer: int | Sequence[int] | None = None,
    mask_mode: MaskMode | None = None,
    tokenizer_or_labels=None,
    attention: Literal["self", "cross"] = "self",
    source=None,
) -> AttentionMaps:
    """Attention weights of the chosen blocks (all if layer is None) for one sequence.

    Only the chosen layers' hook_pattern is observed, so the other layers keep the fused kernel,
    and the pass stops after the last chosen block.
    """
    ids = _as_token_list(tokens)
    config = model.config
    if attention == "cross" and config.architecture != "encoder-decoder":
        raise ConfigError("architecture", "only an encoder-decoder model has cross-attention")
    chosen = _chosen_layers(layer, len(model.blocks))
    device = _model_device(model)
    batch = torch.tensor([ids], dtype=torch.long, device=device)  # (1, T)
    source_batch = None
    source_ids = ids
    if config.architecture == "encoder-decoder":
        source_ids = ids if source is None else _as_token_list(source)
        source_batch = torch.tensor([source_ids], dtype=torch.long, device=device)  # (1, S)
    module = "attn" if attention == "self" else "cross_attn"
    hooks = [f"blocks.{i}.{module}.hook_pattern" for i in chosen]
    mode = mask_mode or ("causal" if config.self_attention_causal else "none")
    # Each block's pattern is copied into one preallocated array as it is made and then freed, so the
    # maps are held once (capturing them all and stacking would hold them twice: 1.2 GB for GPT-2 at 1,024).
    slots = {name: index for index, name in enumerate(hooks)}
    weights_holder: list[np.ndarray] = []
    layer_has_nan: list[bool] = []  # checked per layer: a NaN test of the whole array would allocate its size again

    def copy_out(name: str, output: torch.Tensor) -> None:
        pattern = output[0]  # (H, T, S)
        if not weights_holder:
            weights_holder.append(np.empty((len(hooks), *pattern.shape), dtype=np.float32))  # (L, H, T, S)
        slot = weights_holder[0][slots[name]]  # (H, T, S)
        slot[...] = pattern.float().cpu().numpy()
        layer_has_nan.append(bool(np.isnan(slot).any()))

    # head=False: no logits are read, and at GPT-2's vocabulary they would be the pass's largest tensor.
    with torch.inference_mode(), capture(model, hooks, on_output=copy_out):
        model(batch, source=source_batch, mask_mode=mode, n_blocks=max(chosen) + 1, head=False)
    weights = weights_holder[0]  # (L, H, T, S)
    labels = token_labels(ids, tokenizer_or_labels)
    return AttentionMaps(
        weights=weights,
        layers=chosen,
        layer_labels=tuple(f"block {i}" for i in chosen),
        query_labels=labels,
        key_labels=labels if attention == "self" else token_labels(source_ids, tokenizer_or_labels),
        mask_mode=mode,
        attention=attention,
        has_nan=any(layer_has_nan),
    )


# ---- the head-split pitfall ------------------------------------------------------------------------
@dataclass(frozen=True)
class HeadSplitCheck(_ReadOnlyArrays):
    """Head 0 of a multi-head layer against one head run alone on its d_head slice of q, k, v."""

    single_head_weights: np.ndarray  # (T, T) the reference: one head on q, k, v[..., :d_head]
    multi_head_weights: np.ndarray  # (T, T) head 0 of the lab's Attention (view(B,T,H,d) then transpose)
    wrong_reshape_weights: np.ndarray  # (T, T) head 0 after a single view(B, H, T, d_head)
    correct_difference: float  # max |multi-head head 0 - single head| over weights and head outputs
    wrong_difference: float  # max |wrong-reshape head 0 - single head| over weights and head outputs
    d_model: int
    n_heads: int
    d_head: int
    n_tokens: int
    seed: int
    note: str


def _single_head(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, causal: bool) -> tuple[torch.Tensor, torch.Tensor]:
    """Scaled dot-product attention of one head; q, k, v: (T, d_head). Returns weights and output."""
    scores = q @ k.transpose(-2, -1) / math.sqrt(q.shape[-1])  # (T, T)
    if causal:
        blocked = torch.ones(scores.shape, dtype=torch.bool).triu(diagonal=1)  # (T, T)
        scores = scores.masked_fill(blocked, float("-inf"))  # (T, T)
    weights = F.softmax(scores, dim=-1)  # (T, T)
    return weights, weights @ v  # (T, T), (T, d_head)


def head_split_check(seed: int, d_model: int = 64, n_heads: int = 4, T: int = 8, causal: bool = True) -> HeadSplitCheck:
    """Run the reading's head-split unit test on the lab's Attention layer.

    The layer is built with PyTorch's default init from `seed` (without touching the global RNG);
    the input is standard normal. Head 0's pattern and output are compared with a single-head
    attention on the first d_head columns of the fused q, k and v projections; the wrong reshape
    (one .view(B, H, T, d_head) straight from (B, T, D)) is computed the same way for contrast.
    """
    if d_model % n_heads:
        raise ConfigError("n_heads", f"d_model {d_model} is not divisible by n_heads {n_heads}")
    config = ModelConfig(name="head-split", d_model=d_model, n_heads=n_heads, d_ff=4 * d_model, context_length=T, positional="none").validated()
    d_head = config.d_head
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(seed)
        layer = Attention(config).eval()
        x = torch.randn(1, T, d_model)  # (1, T, D)
    mode = "causal" if causal else "none"
    with torch.no_grad():
        with capture(layer, ["hook_pattern", "hook_v"]) as store:
            layer(x, mask_mode=mode)
        multi_weights = store["hook_pattern"][0, 0]  # (T, T)
        multi_out = multi_weights @ store["hook_v"][0, 0]  # (T, d_head)
        q, k, v = layer.qkv(x).split(d_model, dim=-1)  # (1, T, D) each
        single_weights, single_out = _single_head(q[0, :, :d_head], k[0, :, :d_head], v[0, :, :d_head], causal)
        # The pitfall: one view reinterprets the (T, D) memory as (H, T, d_head), mixing heads and time.
        # (.contiguous() stands for separate q/k/v projections; a view of a fused slice would refuse.)
        wrong_q, wrong_k, wrong_v = (t.contiguous().view(1, n_heads, T, d_head)[0, 0] for t in (q, k, v))  # (T, d_head) each
        wrong_weights, wrong_out = _single_head(wrong_q, wrong_k, wrong_v, causal)

    def difference(weights: torch.Tensor, out: torch.Tensor) -> float:
        return max(
            (weights - single_weights).abs().max().item(),
            (out - single_out).abs().max().item(),
        )

    correct = difference(multi_weights, multi_out)
    wrong = difference(wrong_weights, wrong_out)
    return HeadSplitCheck(
        single_head_weights=single_weights.numpy(),
        multi_head_weights=multi_weights.numpy(),
        wrong_reshape_weights=wrong_weights.numpy(),
        correct_difference=correct,
        wrong_difference=wrong,
        d_model=d_model,
        n_heads=n_heads,
        d_head=d_head,
        n_tokens=T,
        seed=seed,
        note=(
            f"view(B, T, H, d_head).transpose(1, 2): head 0 matches a lone head on its slice "
            f"(max difference {correct:.1e}). A single view(B, H, T, d_head) gives head 0 the rows of "
            f"other tokens' features: max difference {wrong:.3f}."
        ),
    )


# ---- next-token predictions ------------------------------------------------------------------------
@dataclass(frozen=True)
class NextTokenPredictions(_ReadOnlyArrays):
    ids: np.ndarray  # (k,) int64 the most probable next-token ids, most probable first
    labels: tuple[str, ...]  # k labels
    probabilities: np.ndarray  # (k,) float64 softmax(logits / temperature) of those ids
    position: int  # the position whose logits predict token position + 1
    temperature: float
    context_labels: tuple[str, ...]  # labels of tokens 0..position (what the prediction may see)


def next_token_predictions(
    model: Transformer,
    tokens,
    position: int,
    tokenizer_or_labels=None,
    k: int = 10,
    temperature: float = 1.0,
    mask_mode: MaskMode | None = None,
) -> NextTokenPredictions:
    """Top-k next-token distribution read off the logits at `position`.

    The whole sequence runs (an encoder's prediction may read later tokens; a causal model's does
    not, which the edit diff demonstrates).
    """
    ids = _as_token_list(tokens)
    _check_position(position, len(ids))
    if not (isinstance(temperature, (int, float)) and math.isfinite(temperature) and temperature > 0):
        raise SequenceError(f"temperature must be a positive number, got {temperature!r}")
    if k < 1:
        raise SequenceError(f"k must be at least 1, got {k}")
    config = model.config
    device = _model_device(model)
    batch = torch.tensor([ids], dtype=torch.long, device=device)  # (1, T)
    with torch.inference_mode():
        logits = model(batch, mask_mode=mask_mode)  # (1, T, V)
    probabilities = F.softmax(logits[0, position].double() / temperature, dim=-1)  # (V,)
    top = probabilities.topk(min(k, config.vocab_size))
    top_ids = top.indices.cpu().numpy().astype(np.int64)  # (k,)
    return NextTokenPredictions(
        ids=top_ids,
        labels=token_labels(top_ids.tolist(), tokenizer_or_labels),
        probabilities=top.values.cpu().numpy(),
        position=position,
        temperature=float(temperature),
        context_labels=token_labels(ids[: position + 1], tokenizer_or_labels),
    )


__all__ = [
    "MASK_GRID_KINDS",
    "MASK_MODE_DESCRIPTIONS",
    "AttentionMaps",
    "CausalDiffResult",
    "HeadSplitCheck",
    "MaskGrid",
    "NextTokenPredictions",
    "ResidualRun",
    "TextbookCausalTable",
    "attention_maps",
    "block_edit_diff",
    "causal_edit_diff",
    "display_token",
    "head_split_check",
    "mask_grid",
    "next_token_predictions",
    "past_span",
    "random_block_edit_diff",
    "residual_run",
    "textbook_causal_table",
    "token_labels",
]
