"""Where SAEs and tuned lenses are found: the bundled ones by name, or any folder or file the user gives.

Bundled SAEs are folders under resources/saes/ (SAELens's layout), bundled lenses safetensors files
under resources/lenses/; the model each was trained on is read from its own file.
"""

from __future__ import annotations

from pathlib import Path

from core.features.sae import CFG_FILE, SAEFileError, SparseAutoencoder, load_sae
from core.json_files import JsonFileError, read_regular_file
from core.text_files import decode_text
from resources import resource_path

SAE_DIR = ("saes",)
LENS_DIR = ("lenses",)
LENS_SUFFIX = ".safetensors"
MAX_TEXT_BYTES = 50_000_000


def bundled_sae_names() -> list[str]:
    root = resource_path(*SAE_DIR)
    if not root.is_dir():
        return []
    return sorted(child.name for child in root.iterdir() if (child / CFG_FILE).is_file())


def sae_path(name_or_path: str) -> Path:
    """A bundled SAE's folder by name, or the folder given."""
    if name_or_path in bundled_sae_names():
        return resource_path(*SAE_DIR, name_or_path)
    folder = Path(name_or_path)
    if not folder.is_dir():
        names = ", ".join(bundled_sae_names()) or "none"
        raise SAEFileError(f"{name_or_path!r} is neither a bundled SAE ({names}) nor an SAE folder")
    return folder


def open_sae(name_or_path: str) -> SparseAutoencoder:
    return load_sae(sae_path(name_or_path))


def bundled_saes() -> list[dict[str, object]]:
    rows = []
    for name in bundled_sae_names():
        sae = load_sae(resource_path(*SAE_DIR, name))
        rows.append({"name": name, "model": sae.config.model_name, "hook": sae.config.hook_name,
                     "path": str(resource_path(*SAE_DIR, name)), "d_sae": sae.config.d_sae})
    return rows


def bundled_lens_names() -> list[str]:
    root = resource_path(*LENS_DIR)
    if not root.is_dir():
        return []
    return sorted(child.name[: -len(LENS_SUFFIX)] for child in root.iterdir() if child.name.endswith(LENS_SUFFIX))


def lens_path(name_or_path: str) -> Path:
    if name_or_path in bundled_lens_names():
        return resource_path(*LENS_DIR, name_or_path + LENS_SUFFIX)
    return Path(name_or_path)


def bundled_lens_for(model_name: str) -> Path | None:
    """The bundled lens trained on a model of this name, if there is one."""
    from core.features.tuned_lens import read_lens_header

    for name in bundled_lens_names():
        path = resource_path(*LENS_DIR, name + LENS_SUFFIX)
        if read_lens_header(path).get("model") == model_name:
            return path
    return None


def bundled_lenses() -> list[dict[str, object]]:
    from core.features.tuned_lens import read_lens_header

    rows = []
    for name in bundled_lens_names():
        path = resource_path(*LENS_DIR, name + LENS_SUFFIX)
        rows.append({"name": name, "model": read_lens_header(path).get("model", ""), "path": str(path)})
    return rows


def read_text(path: str | Path) -> str:
    """A UTF-8 text file, bounded; every problem a ValueError in one line naming the file."""
    path = Path(path)
    if path.is_dir():
        raise SAEFileError(f"{path} is a folder; give a text file")
    try:
        return decode_text(read_regular_file(path, MAX_TEXT_BYTES, "a text file"))
    except UnicodeDecodeError:
        raise SAEFileError(f"{path} is not UTF-8 text") from None
    except JsonFileError as error:
        raise SAEFileError(str(error)) from None


def with_tuned_lens(result, model, tokens: list[int], tokenizer_or_labels, k: int):
    """A follow-a-token result with the bundled tuned lens of the model beside its logit lens (or a note why not)."""
    import dataclasses

    from core.experiments.common import token_labels
    from core.features.tuned_lens import LensFileError, follow_lenses, load_lens

    if result.tower != "decoder" or model.config.architecture != "decoder":
        return dataclasses.replace(result, tuned_note="a tuned lens reads a decoder's stream")
    path = bundled_lens_for(model.config.name)
    if path is None:
        return dataclasses.replace(result, tuned_note=f"no tuned lens is bundled for {model.config.name}")
    try:
        lens = load_lens(path, model)
    except LensFileError:
        return dataclasses.replace(result, tuned_note=f"the bundled tuned lens was trained on {model.config.name}'s "
                                   "bundled weights, not these")
    rows = follow_lenses(model, lens, tokens, result.position, result.stage_hooks, k)
    labels = tuple(tuple(token_labels([int(i) for i in row if i >= 0], tokenizer_or_labels)) for row in rows["ids"])
    return dataclasses.replace(result, tuned_top_labels=labels, tuned_top_probs=rows["probs"],
                               logit_kl=rows["logit_kl"], tuned_kl=rows["tuned_kl"])


__all__ = ["bundled_lens_for", "bundled_lens_names", "bundled_lenses", "bundled_sae_names", "bundled_saes",
           "lens_path", "open_sae", "read_text", "sae_path", "with_tuned_lens"]
