"""A sparse autoencoder (or transcoder) and its files in SAELens's on-disk layout.

Encoding: pre = (x - b_dec) @ W_enc + b_enc (SAELens's apply_b_dec_to_input), then either TopK (the k
largest pre-activations of a token kept, through a ReLU, the rest zero) or a ReLU (trained with an L1
penalty). Decoding: f @ W_dec + b_dec. A transcoder reads one hook and predicts another: its decoder
writes the output hook's activation (W_dec is (d_sae, d_out)).

A folder holds `cfg.json` and `sae_weights.safetensors` (W_enc (d_in, d_sae), W_dec (d_sae, d_out),
b_enc, b_dec), the fields SAELens 6 reads, so that `sae_lens.SAE.load_from_disk(folder)` opens it
unchanged; the app opens SAELens folders of the same layout. Nothing is unpickled.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import torch
from safetensors.torch import save_file
from torch import nn

from core.checkpoint_files import CheckpointError, read_json_file, read_safetensors
from core.checkpoints import json_writer, write_checkpoint_folder

CFG_FILE = "cfg.json"
WEIGHTS_FILE = "sae_weights.safetensors"
SAE_LENS_LAYOUT = "6.0.0"  # the cfg.json layout written: SAELens reads older ones through a conversion
ARCHITECTURES = ("topk", "standard")  # SAELens's names: TopK, and a ReLU SAE trained with an L1 penalty
MAX_D_SAE = 1 << 17
MAX_D_IN = 1 << 15
DTYPES = {"float32": torch.float32, "torch.float32": torch.float32, "float64": torch.float64,
          "torch.float64": torch.float64, "float16": torch.float16, "torch.float16": torch.float16,
          "bfloat16": torch.bfloat16, "torch.bfloat16": torch.bfloat16}


class SAEFileError(CheckpointError):
    """An SAE folder that cannot be opened, or one that does not fit the model it is used with."""


@dataclass(frozen=True)
class SAEConfig:
    architecture: str  # "topk" or "standard"
    d_in: int
    d_sae: int
    hook_name: str  # TransformerLens name of the activation read
    model_name: str
    k: int = 0  # TopK's active features per token; 0 for "standard"
    l1_coefficient: float = 0.0  # what a ReLU SAE was trained with (a record, not used to encode)
    hook_name_out: str | None = None  # a transcoder's target hook; None for an SAE
    d_out: int | None = None  # a transcoder's output width
    context_size: int = 128
    dataset: str = "tinyshakespeare.txt"
    model_fingerprint: str = ""  # core.features.fingerprint of the weights it was trained on ("" if unknown)
    rescaled: bool = False  # SAELens's rescale_acts_by_decoder_norm: folded into the weights when a file is read

    @property
    def is_transcoder(self) -> bool:
        return self.hook_name_out is not None

    @property
    def width_out(self) -> int:
        return self.d_out if self.d_out is not None else self.d_in


class SparseAutoencoder(nn.Module):
    def __init__(self, config: SAEConfig) -> None:
        super().__init__()
        self.config = config
        self.W_enc = nn.Parameter(torch.zeros(config.d_in, config.d_sae))
        self.b_enc = nn.Parameter(torch.zeros(config.d_sae))
        self.W_dec = nn.Parameter(torch.zeros(config.d_sae, config.width_out))
        self.b_dec = nn.Parameter(torch.zeros(config.width_out))

    @classmethod
    def initialised(cls, config: SAEConfig, seed: int = 0, b_dec: torch.Tensor | None = None) -> SparseAutoencoder:
        """Decoder rows of unit norm, encoder their transpose (the usual start); b_dec the data's mean if given."""
        sae = cls(config)
        generator = torch.Generator().manual_seed(seed)
        with torch.no_grad():
            directions = torch.randn(config.d_sae, config.width_out, generator=generator)  # (F, D_out)
            directions /= directions.norm(dim=-1, keepdim=True)
            sae.W_dec.copy_(directions)
            if config.is_transcoder:
                sae.W_enc.copy_(torch.randn(config.d_in, config.d_sae, generator=generator) / math.sqrt(config.d_in))
            else:
                sae.W_enc.copy_(directions.T)
            if b_dec is not None and not config.is_transcoder:
                sae.b_dec.copy_(b_dec)
        return sae

    def pre_activations(self, x: torch.Tensor) -> torch.Tensor:
        """(..., d_sae) for activations (..., d_in)."""
        centred = x if self.config.is_transcoder else x - self.b_dec  # (..., d_in)
        return centred @ self.W_enc + self.b_enc  # (..., F)

    def activate(self, pre: torch.Tensor) -> torch.Tensor:
        if self.config.architecture == "standard":
            return torch.relu(pre)  # (..., F)
        top = pre.topk(self.config.k, dim=-1, sorted=False)  # (..., k) each; their order does not matter
        return torch.zeros_like(pre).scatter(-1, top.indices, torch.relu(top.values))  # (..., F)

    def encode(self, x: torch.Tensor) -> torch.Tensor:
        return self.activate(self.pre_activations(x))  # (..., F)

    def decode(self, features: torch.Tensor) -> torch.Tensor:
        return features @ self.W_dec + self.b_dec  # (..., d_out)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.decode(self.encode(x))

    @torch.no_grad()
    def normalise_decoder(self) -> None:
        """Unit-norm decoder rows, the encoder scaled to match, so that one feature's size is its activation."""
        norms = self.W_dec.norm(dim=-1).clamp_min(1e-8)  # (F,)
        self.W_dec /= norms[:, None]
        self.W_enc *= norms[None, :]
        self.b_enc *= norms


# ---- files ----------------------------------------------------------------------------------------


def sae_lens_cfg(config: SAEConfig) -> dict[str, Any]:
    """cfg.json as SAELens 6 writes it for this architecture."""
    cfg: dict[str, Any] = {
        "architecture": config.architecture,
        "d_in": config.d_in,
        "d_sae": config.d_sae,
        "dtype": "float32",
        "device": "cpu",
        "apply_b_dec_to_input": not config.is_transcoder,
        "normalize_activations": "none",
        "reshape_activations": "none",
        "metadata": {
            "model_name": config.model_name,
            "hook_name": config.hook_name,
            "hook_head_index": None,
            "prepend_bos": False,
            "dataset_path": config.dataset,
            "context_size": config.context_size,
            "model_class_name": "HookedTransformer",
            "sae_lens_version": SAE_LENS_LAYOUT,
            "model_fingerprint": config.model_fingerprint,
            "sae_lens_training_version": None,
        },
    }
    if config.architecture == "topk":
        cfg["k"] = config.k
        cfg["rescale_acts_by_decoder_norm"] = False
    if config.is_transcoder:
        cfg["architecture"] = "transcoder"
        cfg["d_out"] = config.width_out
        cfg["metadata"]["hook_name_out"] = config.hook_name_out
        cfg["metadata"]["hook_head_index_out"] = None
    else:
        cfg["l1_coefficient"] = config.l1_coefficient
    return cfg


def save_sae(sae: SparseAutoencoder, folder: str | Path) -> Path:
    """Write the folder whole or not at all (core.checkpoints.write_checkpoint_folder)."""
    tensors = {name: getattr(sae, name).detach().to(torch.float32).contiguous().cpu()
               for name in ("W_enc", "W_dec", "b_enc", "b_dec")}
    return write_checkpoint_folder(folder, {
        CFG_FILE: json_writer(sae_lens_cfg(sae.config)),
        WEIGHTS_FILE: lambda target: save_file(tensors, str(target)),
    })


def _whole(value: Any, name: str, where: Path, low: int, high: int) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or not low <= value <= high:
        raise SAEFileError(f"{where}: {name} must be a whole number in {low}..{high}, got {value!r}")
    return value


def config_from_cfg(cfg: Any, where: Path) -> SAEConfig:
    """An SAEConfig from a cfg.json of SAELens's layout (metadata nested as SAELens 6 writes it, or flat as 5 did)."""
    if not isinstance(cfg, dict):
        raise SAEFileError(f"{where} must hold a JSON object")
    metadata = cfg.get("metadata") if isinstance(cfg.get("metadata"), dict) else {}

    def field(name: str, default: Any = None) -> Any:
        return metadata.get(name, cfg.get(name, default))

    architecture = cfg.get("architecture", "standard")
    transcoder = architecture == "transcoder"  # SAELens's transcoders are ReLU ones
    base = "standard" if transcoder else architecture
    if base not in ARCHITECTURES:
        raise SAEFileError(f"{where}: architecture {architecture!r} is not one the app reads "
                           f"({', '.join(ARCHITECTURES)}, transcoder)")
    if str(cfg.get("normalize_activations", "none")) not in ("none", "None"):
        raise SAEFileError(f"{where}: normalize_activations {cfg.get('normalize_activations')!r} is not read by the "
                           "app (only 'none')")
    if cfg.get("apply_b_dec_to_input", not transcoder) is not (not transcoder):
        raise SAEFileError(f"{where}: apply_b_dec_to_input {cfg.get('apply_b_dec_to_input')!r} is not read by the app")
    hook_name = field("hook_name")
    if not isinstance(hook_name, str) or not hook_name:
        raise SAEFileError(f"{where}: no hook_name")
    d_in = _whole(cfg.get("d_in"), "d_in", where, 1, MAX_D_IN)
    d_sae = _whole(cfg.get("d_sae"), "d_sae", where, 1, MAX_D_SAE)
    k = _whole(cfg.get("k"), "k", where, 1, d_sae) if base == "topk" else 0
    hook_out = field("hook_name_out") if transcoder else None
    if transcoder and (not isinstance(hook_out, str) or not hook_out):
        raise SAEFileError(f"{where}: a transcoder needs hook_name_out")
    d_out = _whole(cfg.get("d_out"), "d_out", where, 1, MAX_D_IN) if transcoder else None
    model_name = field("model_name", "")
    context = field("context_size", 128)
    l1 = cfg.get("l1_coefficient", 0.0)
    rescaled = cfg.get("rescale_acts_by_decoder_norm") is True and base == "topk"
    fingerprint = field("model_fingerprint", "")
    return SAEConfig(rescaled=rescaled, model_fingerprint=fingerprint if isinstance(fingerprint, str) else "",
                     architecture=base, d_in=d_in, d_sae=d_sae, hook_name=hook_name,
                     model_name=model_name if isinstance(model_name, str) else "", k=k,
                     l1_coefficient=float(l1) if isinstance(l1, (int, float)) and not isinstance(l1, bool) else 0.0,
                     hook_name_out=hook_out, d_out=d_out,
                     context_size=context if isinstance(context, int) and not isinstance(context, bool) else 128)


def load_sae(folder: str | Path) -> SparseAutoencoder:
    """Open an SAE folder (the app's or SAELens's); every problem is an SAEFileError naming the file."""
    folder = Path(folder)
    if not folder.is_dir():
        raise SAEFileError(f"no SAE folder at {folder} (a folder with {CFG_FILE} and {WEIGHTS_FILE})")
    config = config_from_cfg(read_json_file(folder / CFG_FILE, "an SAE config"), folder / CFG_FILE)
    tensors = read_safetensors(folder / WEIGHTS_FILE)
    shapes = {"W_enc": (config.d_in, config.d_sae), "W_dec": (config.d_sae, config.width_out),
              "b_enc": (config.d_sae,), "b_dec": (config.width_out,)}
    sae = SparseAutoencoder(config)
    with torch.no_grad():
        for name, shape in shapes.items():
            tensor = tensors.get(name)
            if tensor is None:
                raise SAEFileError(f"{folder / WEIGHTS_FILE}: missing tensor {name}")
            if tuple(tensor.shape) != shape:
                raise SAEFileError(f"{folder / WEIGHTS_FILE}: {name} has shape {tuple(tensor.shape)}, "
                                   f"the config says {shape}")
            if not tensor.is_floating_point() or not bool(torch.isfinite(tensor).all()):
                raise SAEFileError(f"{folder / WEIGHTS_FILE}: {name} holds values that are not finite numbers")
            getattr(sae, name).copy_(tensor.to(torch.float32))
        if config.rescaled:  # pre-activations scaled by the decoder norms, activations divided by them: folded
            norms = sae.W_dec.norm(dim=-1).clamp_min(1e-12)  # (F,)
            sae.W_enc *= norms[None, :]
            sae.b_enc *= norms
            sae.W_dec /= norms[:, None]
    return sae.eval()


def check_fits(sae: SparseAutoencoder, model, model_name: str | None = None) -> str:
    """The app hook the SAE reads on `model`, or SAEFileError if it was made for another model or width."""
    from core.features.hook_names import app_hook, hook_width

    config = sae.config
    hook = app_hook(model, config.hook_name)
    width = hook_width(model, config.hook_name)
    if width != config.d_in:
        raise SAEFileError(f"this SAE reads {config.d_in} numbers at {config.hook_name}, but "
                           f"{model_name or model.config.name} has {width} there; it was made for another model")
    if config.is_transcoder:
        app_hook(model, config.hook_name_out)
        if hook_width(model, config.hook_name_out) != config.width_out:
            raise SAEFileError(f"this transcoder writes {config.width_out} numbers at {config.hook_name_out}, but "
                               f"the model has {hook_width(model, config.hook_name_out)} there")
    if model_name and config.model_name and config.model_name != model_name:
        raise SAEFileError(f"this SAE was trained on {config.model_name!r}, not {model_name!r}")
    if config.model_fingerprint:
        from core.features.fingerprint import weights_fingerprint

        if weights_fingerprint(model) != config.model_fingerprint:
            raise SAEFileError(f"this SAE was trained on other weights of {config.model_name or 'this model'} "
                               "(a fresh seed or a further trained copy reads differently); load the model it names")
    return hook


def check_feature(sae: SparseAutoencoder, index: int) -> int:
    if isinstance(index, bool) or not isinstance(index, int) or not 0 <= index < sae.config.d_sae:
        raise SAEFileError(f"feature {index} is out of range: this SAE has features 0..{sae.config.d_sae - 1}")
    return index


__all__ = ["ARCHITECTURES", "CFG_FILE", "SAEConfig", "SAEFileError", "SparseAutoencoder", "WEIGHTS_FILE",
           "check_feature", "check_fits", "config_from_cfg", "load_sae", "sae_lens_cfg", "save_sae"]
