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

import weakref
from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np
import torch

from core import kernels
from core.choices import MASK_MODES
from core.config import ModelConfig
from core.experiments.common import (
    ReadOnlyArrays,
    as_token_list,
    check_position,
    model_device,
    residual_row_labels,
    token_labels,
)
from core.experiments.textbook_table import TEXTBOOK_EDIT_POSITION, TEXTBOOK_PRESET
from core.hooks import HookPoint, capture
from core.model import Block, MaskMode, SequenceError, Transformer
from core.presets import get_preset


@dataclass(frozen=True)
class CausalDiffResult(ReadOnlyArrays):
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
    # The model attends both ways by design (an encoder, run with its own mask, none): every position
    # may read the edit, so a moving past is how it reads context from both sides, not a leak.
    bidirectional: bool = False
    # An encoder-decoder whose encoder read each run's own tokens: the edit reaches every decoder position
    # through cross-attention, which reads the whole source, so a moving past is expected there too.
    source_edited: bool = False
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
            "bidirectional": self.bidirectional,
            "source_edited": self.source_edited,
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
    bidirectional: bool = False,
    source_edited: bool = False,
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
    elif leaks and source_edited:
        parts.append(
            f"Positions before {position} move from {layer_labels[first_leaking_layer]} on although the decoder's "
            f"mask is {mask_mode!r}: each run's encoder read its own tokens, the edit included, and cross-attention "
            "reads the whole source. Expected: the causal mask governs only the decoder's self-attention."
        )
    elif leaks and bidirectional:
        parts.append(
            f"Positions before {position} move too, from {layer_labels[first_leaking_layer]} on: expected for a "
            "bidirectional model. It has no causal mask, so every token reads every other, the ones after it "
            "included; that is how an encoder takes context from both sides, not a leak."
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
    device = model_device(model)
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
    return list(ids) if source is None else as_token_list(source)


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
    token_ids = as_token_list(ids)
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
    ids = as_token_list(tokens)
    check_position(position, len(ids))
    config = model.config
    mode, n_run = _run_settings(model, mask_mode, n_blocks)
    edited = list(ids)
    edited[position] = int(new_token)
    extra = ""
    original_source = edited_source = None
    if config.architecture == "encoder-decoder":
        if edit_source:
            original_source, edited_source = ids, edited
            extra = "Rows are the decoder tower; each run's encoder read its own tokens."
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
    layers = residual_row_labels(n_run)
    bidirectional = not config.self_attention_causal and mode == "none"
    source_edited = original_source is not None and original_source != edited_source
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
        note=_describe(mode, position, leaks, first, past_exact, nan_entries, layers, ids == edited, extra, bidirectional,
                       source_edited=source_edited),
        reference_reused=reused,
        bidirectional=bidirectional,
        source_edited=source_edited,
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
    check_position(position, inputs.shape[0])
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
    layers = residual_row_labels(len(chain), first="input")
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


__all__ = ["CausalDiffResult", "ResidualRun", "block_edit_diff", "causal_edit_diff", "past_span", "random_block_edit_diff", "residual_run"]
