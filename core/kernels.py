"""Which kernels compute the lab's linear layers on the CPU, and at which precision.

Two fp32 paths give every linear layer of the model its product:
- "default": `F.linear`, the BLAS that torch was built with (MKL on x86-64);
- "onednn": torch's oneDNN matmul primitive (`torch.ops.mkldnn._linear_pointwise`) on the dense
  weight, so no second copy of the weights is kept.
Which one is faster depends on the CPU: on some AMD CPUs MKL takes a generic path and oneDNN runs
the same products twice as fast; on recent Intel CPUs MKL is already at the machine's limit. So
`auto` measures both on the lab's own GEMM shapes, once per machine (CPU model, torch version and
thread count), and caches the verdict as JSON in the user's cache folder. oneDNN must win by a
margin (MARGIN) to be chosen, so a machine where the default path is the fastest stays on it. A
verdict measured while other work loaded the machine is measured again at a later, quieter start.

The choice is one setting of the process, like torch's thread count: every model and every layer
takes the same path, so both sides of any comparison the lab makes (an edit diff, a kept residual
run, a head check) go through the same kernels and compare bit for bit. The path is part of
`run_key()`, which the causal experiments add to the key of a kept run.

What stays as it was:
- the parameters: the layers remain `nn.Linear`s with the same weights, so state_dict, safetensors
  saves, hooks and `isinstance` checks see nothing new;
- autograd: a call that needs gradients (grad enabled and a weight or input that requires grad)
  takes the default fp32 path, so training computes exactly what it always did;
- CUDA, MPS and meta tensors: always the default path.

Reduced precision is opt-in (`fp32` unless asked): `bf16` on a CPU with native bf16 (detected with
oneDNN's own check, never assumed), `fp16` or `bf16` on CUDA. Only the linear layers' products run
in it (their inputs and weights rounded, the result returned in fp32); norms, softmax and the
residual stream stay fp32. Every value shown then differs from fp32 by that rounding, while
comparisons within one run remain exact: both sides are rounded alike.
"""

from __future__ import annotations

import functools
import os
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

import torch
import torch.nn.functional as F
from torch.utils.weak import WeakIdKeyDictionary

from core.kernel_cache import (
    KERNEL_OPTIONS,
    KERNEL_PATHS,
    KERNELS_ENV,
    PRECISIONS,
    cache_path,
    cpu_model,
    read_cache,
    write_cache,
)

MARGIN = 1.10  # oneDNN must be 10% faster than the default path to be chosen: timing noise never picks it
BUSY_LOAD = 1.0  # load average per CPU from which other work competes with the measurement

# GPT-2 small's linear layers for one 256-token sequence, (M, K, N): the fused QKV, the attention
# output, the FFN up and down projections. Lab-shaped, and short enough to time at start-up.
LAB_GEMM_SHAPES = ((256, 768, 2304), (256, 768, 768), (256, 768, 3072), (256, 3072, 768))

_DTYPES = {"bf16": torch.bfloat16, "fp16": torch.float16}


class KernelError(ValueError):
    """A kernel path or precision this machine cannot take, in one line."""


@dataclass(frozen=True)
class KernelChoice:
    """The path the linear layers take on the CPU, what was asked for, and why this path."""

    path: str  # "default" or "onednn"
    requested: str  # "auto", "default" or "onednn"
    reason: str  # one sentence: measured, asked for, unavailable, failed
    rates: dict[str, float] = field(default_factory=dict)  # GFLOP/s per path on LAB_GEMM_SHAPES, when measured
    threads: int | None = None  # the torch thread count the rates were measured with

    @property
    def label(self) -> str:
        name = "oneDNN" if self.path == "onednn" else "default"
        if self.rates and len(self.rates) == len(KERNEL_PATHS):
            speedup = self.rates["onednn"] / self.rates["default"]
            return f"{name} (measured: oneDNN {speedup:.2f}x the default)"
        return name


@dataclass(frozen=True)
class Precision:
    """The precision asked for and the one the linear layers use on a device type."""

    requested: str  # "fp32", "bf16" or "fp16"
    device_type: str  # the device type it was checked for
    message: str = ""  # set when the request could not be honoured (the GUI falls back to fp32)

    @property
    def active(self) -> bool:
        return self.requested != "fp32"

    @property
    def label(self) -> str:
        if not self.active:
            return "fp32"
        return f"{self.requested} matmuls (values differ from fp32; comparisons exact within {self.requested})"


# ---- the process's setting ---------------------------------------------------------------------------
_choice = KernelChoice("default", "default", "the default path (nothing else was asked for)")
_precision = Precision("fp32", "cpu")
_low_weights = WeakIdKeyDictionary()  # weight -> ((data_ptr, version, dtype), its rounded copy)


def current_choice() -> KernelChoice:
    return _choice


def current_precision() -> Precision:
    return _precision


def set_choice(choice: KernelChoice) -> None:
    global _choice
    if choice.path not in KERNEL_PATHS:
        raise KernelError(f"unknown kernel path {choice.path!r}; use {', '.join(KERNEL_PATHS)}")
    _choice = choice


def set_precision(precision: Precision) -> None:
    global _precision
    if precision.requested not in PRECISIONS:
        raise KernelError(f"unknown precision {precision.requested!r}; use {', '.join(PRECISIONS)}")
    _precision = precision
    _low_weights.clear()


def run_key() -> tuple[str, str]:
    """What a kept run must have been computed with to compare bit for bit with a new one."""
    return _choice.path, _precision.requested


# ---- the linear layers' product ----------------------------------------------------------------------
def linear(x: torch.Tensor, weight: torch.Tensor, bias: torch.Tensor | None = None) -> torch.Tensor:
    """x @ weight.T + bias through the process's path and precision; x: (..., in) -> (..., out)."""
    if torch.is_grad_enabled() and (weight.requires_grad or x.requires_grad):
        return F.linear(x, weight, bias)  # training: torch's own path and gradients, in fp32
    low = _low_dtype(x)
    if low is not None:
        out = F.linear(x.to(low), _rounded(weight, low), None if bias is None else bias.to(low))  # (..., out)
        return out.to(x.dtype)
    if _choice.path == "onednn" and x.device.type == "cpu" and x.dtype == torch.float32 == weight.dtype:
        try:
            return onednn_linear(x, weight, bias)
        except Exception as error:  # any failure: the default path from here on, with the reason kept
            _fall_back(f"oneDNN failed ({type(error).__name__}: {str(error).splitlines()[0][:120]})")
    return F.linear(x, weight, bias)


def onednn_linear(x: torch.Tensor, weight: torch.Tensor, bias: torch.Tensor | None) -> torch.Tensor:
    """The oneDNN product on dense fp32 tensors; x: (..., in) -> (..., out)."""
    rows = x.reshape(-1, x.shape[-1]).contiguous()  # (N, in)
    out = torch.ops.mkldnn._linear_pointwise(rows, weight, bias, "none", [], "")  # (N, out)
    return out.view(*x.shape[:-1], weight.shape[0])  # (..., out)


def _fall_back(why: str) -> None:
    set_choice(KernelChoice("default", _choice.requested, f"{why}; using the default path"))


def _low_dtype(x: torch.Tensor) -> torch.dtype | None:
    if not _precision.active or x.dtype != torch.float32:
        return None
    if x.device.type == "cpu" and _precision.requested == "bf16" and cpu_has_native_bf16():
        return torch.bfloat16
    if x.device.type == "cuda":
        return _DTYPES[_precision.requested]
    return None


def _rounded(weight: torch.Tensor, dtype: torch.dtype) -> torch.Tensor:
    """The weight in `dtype`, converted once and again only after the weight changes in place."""
    stamp = (weight.data_ptr(), weight._version, dtype)
    kept = _low_weights.get(weight)
    if kept is not None and kept[0] == stamp:
        return kept[1]
    rounded = weight.detach().to(dtype)
    _low_weights[weight] = (stamp, rounded)
    return rounded


# ---- what this machine has ---------------------------------------------------------------------------
def onednn_status() -> tuple[bool, str]:
    """Whether the oneDNN path runs here, and if not, why (one phrase)."""
    try:
        if not torch.backends.mkldnn.is_available():
            return False, "this torch build has no oneDNN"
        if not hasattr(torch.ops.mkldnn, "_linear_pointwise"):
            return False, "this torch build lacks oneDNN's linear operator"
        x, w, b = torch.ones(2, 8), torch.ones(4, 8), torch.zeros(4)
        if not torch.equal(onednn_linear(x, w, b), F.linear(x, w, b)):
            return False, "oneDNN's linear gave a wrong result on a test product"
    except Exception as error:
        return False, f"oneDNN's linear failed ({type(error).__name__}: {str(error).splitlines()[0][:120]})"
    return True, ""


@functools.cache
def cpu_has_native_bf16() -> bool:
    """oneDNN's own check (AVX-512 BF16, AMX or the ARM equivalents): bf16 in hardware, not emulated."""
    try:
        return bool(torch.ops.mkldnn._is_mkldnn_bf16_supported())
    except Exception:
        return False


def machine_key(threads: int | None = None, torch_version: str | None = None) -> str:
    threads = torch.get_num_threads() if threads is None else threads
    return f"{cpu_model()} | torch {torch_version or torch.__version__} | {threads} thread{'s' if threads != 1 else ''}"


# ---- measuring ---------------------------------------------------------------------------------------
def measure_rates(repeats: int = 5, shapes=LAB_GEMM_SHAPES) -> dict[str, float]:
    """GFLOP/s of each path over the lab's GEMM shapes: interleaved repetitions, the best of each.

    The best, not the median: other work on the machine only ever slows a repetition down, and the
    interleaving exposes both paths to it alike."""
    generator = torch.Generator().manual_seed(0)
    operands = [
        (torch.randn(m, k, generator=generator), torch.randn(n, k, generator=generator) * 0.02, torch.zeros(n))
        for m, k, n in shapes
    ]
    flops = sum(2 * m * k * n for m, k, n in shapes)
    paths: dict[str, Callable] = {"default": F.linear, "onednn": onednn_linear}
    seconds: dict[str, list[float]] = {name: [] for name in paths}
    with torch.inference_mode():
        for _ in range(repeats + 1):  # the first round warms the caches and the primitives up
            for name, product in paths.items():
                began = time.perf_counter()
                for x, w, b in operands:
                    product(x, w, b)  # (M, N)
                seconds[name].append(time.perf_counter() - began)
    return {name: flops / min(times[1:]) / 1e9 for name, times in seconds.items()}


def load_per_cpu() -> float | None:
    """The one-minute load average per CPU, None where the platform has none (Windows)."""
    try:
        return os.getloadavg()[0] / (os.cpu_count() or 1)
    except (AttributeError, OSError):
        return None


def _measured_busier(entry: dict, now: float | None) -> bool:
    """A verdict measured while the machine was busier than it is now (and busy at all), or at a load that
    was not recorded, while the machine is quiet now: measure it again."""
    if now is None:
        return False
    then = entry.get("load_per_cpu")
    if then is None:
        return now < BUSY_LOAD
    return then >= BUSY_LOAD and now < then


def decide(rates: dict[str, float]) -> str:
    return "onednn" if rates["onednn"] >= MARGIN * rates["default"] else "default"


# ---- choosing ----------------------------------------------------------------------------------------
def requested_kernels(requested: str | None) -> str:
    """The asked path: the argument, then the environment variable, else auto; a bad name is a KernelError."""
    name = (requested or os.environ.get(KERNELS_ENV) or "auto").strip().lower()
    if name not in KERNEL_OPTIONS:
        source = "--kernels" if requested else KERNELS_ENV
        raise KernelError(f"{source} expects {', '.join(KERNEL_OPTIONS)} (got {name[:40]!r})")
    return name


def choose_kernels(
    requested: str | None = None,
    cache: Path | None = None,
    measure: Callable[[], dict[str, float]] | None = None,
) -> KernelChoice:
    """The path for this machine: as asked, or for auto the cached verdict, else measured now and cached."""
    name = requested_kernels(requested)
    if name == "default":
        return KernelChoice("default", name, "asked for")
    available, why = onednn_status()
    if not available:
        return KernelChoice("default", name, f"{why}; using the default path")
    if name == "onednn":
        return KernelChoice("onednn", name, "asked for")
    threads = torch.get_num_threads()
    key = machine_key(threads)
    cache = cache_path() if cache is None else cache
    entry = read_cache(cache).get(key)
    load = load_per_cpu()
    if entry is not None and not _measured_busier(entry, load):
        return KernelChoice(entry["path"], name, f"measured on this machine earlier ({key})", dict(entry["rates"]), threads)
    try:
        rates = (measure or measure_rates)()
        path = decide(rates)
    except Exception as error:
        return KernelChoice("default", name, f"measuring failed ({type(error).__name__}: {error}); using the default path")
    note = f"measured now ({key})"
    try:
        measured = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
        write_cache(cache, key, {"path": path, "rates": rates, "measured": measured, "load_per_cpu": load})
    except OSError as error:
        note += f"; not cached ({error.strerror or error})"
    return KernelChoice(path, name, note, rates, threads)


def check_precision(requested: str | None, device_type: str) -> Precision:
    """The precision asked for on this device type, or a KernelError saying why it cannot run here."""
    name = (requested or "fp32").strip().lower()
    if name not in PRECISIONS:
        raise KernelError(f"--precision expects {', '.join(PRECISIONS)} (got {name[:40]!r})")
    if name == "fp32":
        return Precision(name, device_type)
    if device_type == "cpu":
        if name == "fp16":
            raise KernelError("fp16 runs on CUDA only; on the CPU use --precision bf16 (where it has native bf16) or fp32")
        if not cpu_has_native_bf16():
            raise KernelError("this CPU has no native bf16 (AVX-512 BF16 or AMX), so bf16 would be emulated; use fp32")
    elif device_type == "cuda":
        if name == "bf16" and not torch.cuda.is_bf16_supported():
            raise KernelError("this GPU has no bf16; use --precision fp16 or fp32")
    else:
        raise KernelError(f"reduced precision runs on the CPU (bf16) and CUDA (fp16, bf16), not on {device_type}")
    return Precision(name, device_type)


def configure(
    kernels: str | None = None,
    precision: str | None = None,
    device_type: str = "cpu",
    strict: bool = True,
    cache: Path | None = None,
) -> tuple[KernelChoice, Precision]:
    """Choose and set the process's kernel path and precision.

    strict (the command line): a precision this device cannot run is a KernelError. Otherwise (the
    window) it falls back to fp32 and the Precision's message says why.
    """
    try:
        chosen_precision = check_precision(precision, device_type)
    except KernelError as error:
        if strict:
            raise
        chosen_precision = Precision("fp32", device_type, f"{error}; computing in fp32")
    choice = choose_kernels(kernels, cache)
    set_choice(choice)
    set_precision(chosen_precision)
    return choice, chosen_precision


def describe() -> str:
    """One line for --version, the status bar's tooltip and the bench: the path, why, and the precision."""
    return f"kernels: {_choice.label}, {_choice.reason}; precision: {_precision.label}"
