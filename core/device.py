"""Device choice (CUDA, then MPS, then CPU, overridable) and memory estimates that refuse runs
which will not fit before they are attempted."""

from __future__ import annotations

import os
from collections.abc import Callable
from dataclasses import dataclass
from typing import TypeVar

import torch

from core.config import ModelConfig
from core.display import format_bytes

DEVICE_ENV = "TRANSFORMER_EXPLORER_DEVICE"
KNOWN_DEVICES = ("cpu", "cuda", "mps")

T = TypeVar("T")


class DeviceError(ValueError):
    """A device name that is not cpu, cuda, cuda:N or mps."""


class MemoryBudgetError(MemoryError):
    """A run whose estimated memory exceeds what the device has; carries the estimate."""

    def __init__(self, estimate: MemoryEstimate, available: int, device: str) -> None:
        self.estimate = estimate
        self.available = available
        self.device = device
        super().__init__(
            f"this run needs about {format_bytes(estimate.total)} ({estimate.describe()}) but {device} has "
            f"about {format_bytes(available)} free; use a shorter sequence, a smaller batch or a smaller model"
        )


@dataclass(frozen=True)
class DeviceChoice:
    device: torch.device
    message: str | None = None  # set when the request could not be honoured, e.g. a fallback to the CPU


def available_devices() -> list[str]:
    """Devices this machine can run on, best first (always ends with cpu)."""
    names = []
    if torch.cuda.is_available():
        names.extend(f"cuda:{i}" if torch.cuda.device_count() > 1 else "cuda" for i in range(torch.cuda.device_count()))
    mps = getattr(torch.backends, "mps", None)
    if mps is not None and mps.is_available():
        names.append("mps")
    names.append("cpu")
    return names


def _parse(name: str) -> torch.device:
    name = name.strip().lower()
    kind = name.split(":", 1)[0]
    if kind not in KNOWN_DEVICES:
        raise DeviceError(f"unknown device {name!r}; use cpu, cuda, cuda:N or mps")
    try:
        return torch.device(name)
    except RuntimeError:
        raise DeviceError(f"cannot read device {name!r}; use cpu, cuda, cuda:N or mps") from None


def choose_device(requested: str | None = None) -> DeviceChoice:
    """The asked device (argument, then the environment variable), or the best one present.

    An asked device that is missing falls back to the CPU with a message instead of failing.
    """
    requested = requested or os.environ.get(DEVICE_ENV) or None
    if requested is None or requested.strip().lower() == "auto":
        return DeviceChoice(torch.device(available_devices()[0]))
    device = _parse(requested)
    if device.type == "cuda":
        if not torch.cuda.is_available():
            return DeviceChoice(torch.device("cpu"), "CUDA is not available on this machine; using the CPU")
        if device.index is not None and device.index >= torch.cuda.device_count():
            return DeviceChoice(
                torch.device("cpu"), f"there is no {device} (found {torch.cuda.device_count()} GPUs); using the CPU"
            )
    if device.type == "mps" and str(torch.device("mps")) not in available_devices():
        return DeviceChoice(torch.device("cpu"), "Apple MPS is not available on this machine; using the CPU")
    return DeviceChoice(device)


def is_out_of_memory(error: BaseException) -> bool:
    oom_type = getattr(torch, "OutOfMemoryError", None) or getattr(torch.cuda, "OutOfMemoryError", None)
    if oom_type is not None and isinstance(error, oom_type):
        return True
    return isinstance(error, RuntimeError) and "out of memory" in str(error).lower()


def run_with_cpu_fallback(run: Callable[[torch.device], T], device: torch.device) -> tuple[T, str | None]:
    """Run on the device; if an accelerator runs out of memory, free its cache and rerun on the CPU."""
    try:
        return run(device), None
    except Exception as error:
        if device.type == "cpu" or not is_out_of_memory(error):
            raise
    if device.type == "cuda":
        torch.cuda.empty_cache()
    return run(torch.device("cpu")), f"{device} ran out of memory; this result was computed on the CPU"


# ---- memory -----------------------------------------------------------------------------------------


@dataclass(frozen=True)
class MemoryEstimate:
    weights: int  # bytes of parameters
    activations: int  # bytes of the largest live activations of a forward pass without gradients
    attention_maps: int  # bytes of (B, H, T, T) score and weight tensors that are materialised or captured
    weight_copies: int = 0  # bytes of the linear layers' weights rounded to a reduced precision (bf16, fp16)

    @property
    def total(self) -> int:
        return self.weights + self.weight_copies + self.activations + self.attention_maps

    def describe(self) -> str:
        copies = f" and their {format_bytes(self.weight_copies)} reduced-precision copy" if self.weight_copies else ""
        return (
            f"weights {format_bytes(self.weights)}{copies}, activations {format_bytes(self.activations)}, "
            f"attention maps {format_bytes(self.attention_maps)}"
        )


# Mask modes that make attention take the explicit path (q @ k^T, mask, softmax), as core.model does.
EXPLICIT_MASK_MODES = ("off-by-one", "after-softmax")
REDUCED_PRECISION_BYTES = {"fp32": 0, "bf16": 2, "fp16": 2}  # 0: no reduced-precision products, no copies


def linear_weight_values(config: ModelConfig) -> int:
    """Values of the weight matrices that go through core.kernels.linear: attention, FFN (every expert),
    routers and the vocabulary head (a tied head too: its product rounds the embedding matrix once)."""
    from core.params import parameter_breakdown

    groups = parameter_breakdown(config.replace(bias=False, qkv_bias=False)).groups  # matrices only
    return groups["attention"] + groups["ffn"] + groups["router"] + config.vocab_size * config.d_model


def estimate_memory(
    config: ModelConfig,
    batch: int,
    seq: int,
    bytes_per_value: int = 4,
    captured_attention_layers: int = 0,
    captured_residual_layers: int = 0,
    mask_mode: str | None = None,
    precision: str | None = None,
) -> MemoryEstimate:
    """Bytes a no-grad forward pass needs: weights, the largest transient activations, attention maps.

    The attention maps follow the path core.model takes. The fused kernel (no mask pitfall, no
    captured weights, no ALiBi) never builds a (B, H, T, T) map. The explicit path (a mask pitfall
    in `mask_mode`, or captured weights) holds two maps of a layer at once (scores and weights),
    three with masking after the softmax. ALiBi builds its (H, T, T) bias once per pass and a
    masked copy per layer, and then the kernel computes the full maps (three at once on the CPU).
    `captured_attention_layers` maps are copied into the result as each layer makes them (as
    causal.attention_maps does), so they are held once, beside one layer's transient maps. Transient activations are bounded by one block
    at a time: the residual stream, Q/K/V and their copies, the FFN hidden layer before and after
    its activation (every expert's, since the lab's MoE runs each expert densely) and the logits. Measured against the real peak in
    tests/core/test_memory_estimate.py.

    `precision` (the process's, core.kernels, when None): with bf16 or fp16 every linear layer's
    weight is rounded once and the copy is kept beside the fp32 weight (`weight_copies`), and each
    product's input and output exist in it beside their fp32 forms; the largest is the head's logits.
    """
    from core.params import parameter_breakdown

    if precision is None:
        from core.kernels import current_precision

        precision = current_precision().requested
    low_bytes = REDUCED_PRECISION_BYTES[precision]

    b = parameter_breakdown(config)
    heads, d, v = config.n_heads, config.d_model, config.vocab_size
    tokens = batch * seq
    ffn_hidden = 0 if config.attention_only else (
        tokens * config.d_ff * max(config.n_experts, 1) * (2 if config.activation == "swiglu" else 1))
    one_map = batch * heads * seq * seq  # (B, H, T, T) values
    bias = heads * seq * seq if config.positional == "alibi" else 0  # (H, T, T) values
    explicit = captured_attention_layers > 0 or mask_mode in EXPLICIT_MASK_MODES
    if explicit:
        transient_maps = (3 if mask_mode == "after-softmax" else 2) * one_map + bias
    elif bias:
        transient_maps = 3 * one_map + 2 * bias  # the bias, its masked copy, and the kernel's full maps
    else:
        transient_maps = 0
    held = captured_attention_layers * one_map  # the result's (L, B, H, T, T) array, filled layer by layer
    maps = transient_maps + held
    # A block holds the residual, its norm, Q/K/V and their head-major copies, the attention output and its
    # reshaped copy, the projection and the sum (12 of width d), and the FFN's hidden layer before and after
    # the activation; then the logits.
    per_pass = 12 * tokens * d + 2 * ffn_hidden + tokens * v
    captured_residual = captured_residual_layers * tokens * d
    rounded_head = tokens * (d + v) * low_bytes  # the head's input and logits in the reduced precision
    return MemoryEstimate(
        weights=b.total * bytes_per_value,
        activations=(per_pass + captured_residual) * bytes_per_value + rounded_head,
        attention_maps=maps * bytes_per_value,
        weight_copies=linear_weight_values(config) * low_bytes,
    )


def available_memory(device: torch.device) -> int:
    """Free bytes on the device (for the CPU: available physical memory)."""
    if device.type == "cuda":
        free, _total = torch.cuda.mem_get_info(device)
        return int(free)
    if device.type == "mps":
        recommended = getattr(torch.mps, "recommended_max_memory", None)
        if recommended is not None:
            return int(recommended() - torch.mps.current_allocated_memory())
    return _cpu_available_bytes()


def _cpu_available_bytes() -> int:
    try:
        with open("/proc/meminfo", encoding="ascii") as meminfo:
            for line in meminfo:
                if line.startswith("MemAvailable:"):
                    return int(line.split()[1]) * 1024
    except OSError:
        pass
    try:
        return os.sysconf("SC_AVPHYS_PAGES") * os.sysconf("SC_PAGE_SIZE")
    except (ValueError, OSError, AttributeError):
        return 8 << 30  # no way to ask (e.g. Windows without /proc): assume a modest laptop


def check_fits(estimate: MemoryEstimate, device: torch.device, headroom: float = 0.8) -> None:
    """Refuse a run whose estimate exceeds a safe fraction of the device's free memory."""
    available = available_memory(device)
    if estimate.total > headroom * available:
        raise MemoryBudgetError(estimate, available, str(device))
