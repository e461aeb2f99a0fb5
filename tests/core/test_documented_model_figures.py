"""The bundled models' figures the docs quote (weights file sizes, parameter counts, the MoE's active size, the
encoder's two accuracies) are the files' own: each is read from docs/models.md and README.md and recomputed here
from the safetensors files and the weights."""

from __future__ import annotations

import json
import re
import struct
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
MODELS = ROOT / "resources" / "models"
MODELS_DOC = (ROOT / "docs" / "models.md").read_text(encoding="utf-8")
README = (ROOT / "README.md").read_text(encoding="utf-8")


def _tensor_shapes(name: str) -> dict[str, list[int]]:
    """Every tensor's shape from the safetensors header (8 bytes of length, then JSON), read here by hand."""
    with (MODELS / name / "model.safetensors").open("rb") as handle:
        length = struct.unpack("<Q", handle.read(8))[0]
        header = json.loads(handle.read(length))
    return {key: value["shape"] for key, value in header.items() if key != "__metadata__"}


def _count(shapes: dict[str, list[int]], keep=lambda key: True) -> int:
    total = 0
    for key, shape in shapes.items():
        if keep(key):
            size = 1
            for side in shape:
                size *= side
            total += size
    return total


def _rows_of_tables_with(column: str) -> list[dict[str, str]]:
    """The rows of every docs/models.md table that has `column`, as {header: cell}."""
    rows, header = [], None
    for line in MODELS_DOC.splitlines():
        if not line.startswith("|"):
            header = None
            continue
        cells = [cell.strip() for cell in line.strip().strip("|").split("|")]
        if header is None:
            header = cells
        elif not set(line) <= set("|- "):
            rows.append(dict(zip(header, cells)))
    return [row for row in rows if column in row]


def _model_names(cell: str) -> list[str]:
    return re.findall(r"`((?:tiny|ctx|ladder)-[\w-]+)`", cell)


def _megabytes_agree(written: str, size_bytes: int) -> bool:
    """The file's size in MB (10^6 bytes) rounds to the figure as written, to its last printed digit."""
    decimals = len(written.split(".")[1]) if "." in written else 0
    return abs(size_bytes / 1e6 - float(written)) <= 0.5 * 10**-decimals + 1e-12


BUNDLED = sorted(folder.name for folder in MODELS.iterdir() if (folder / "model.safetensors").is_file())


def test_every_bundled_model_has_its_weights_file_size_in_the_docs_and_it_is_the_files():
    documented: dict[str, str] = {}
    for row in _rows_of_tables_with("weights file"):
        names = _model_names(row["model"])
        sizes = re.findall(r"([\d.]+) MB", row["weights file"])
        if len(names) == 1 and "tiny-moe" in names and len(sizes) == 2:  # "0.9 MB (0.5 MB)": tiny-moe-dense beside
            names = ["tiny-moe", "tiny-moe-dense"]
        assert len(sizes) == len(names), row
        documented.update(zip(names, sizes))
    assert sorted(documented) == BUNDLED
    wrong = {name: (written, (MODELS / name / "model.safetensors").stat().st_size)
             for name, written in documented.items()
             if not _megabytes_agree(written, (MODELS / name / "model.safetensors").stat().st_size)}
    assert wrong == {}


def test_the_documented_parameter_counts_are_the_tensors_in_the_files():
    documented: dict[str, int] = {}
    for row in _rows_of_tables_with("validation loss"):  # the first table: the Shakespeare and induction models
        (name,) = _model_names(row["model"])
        documented[name] = int(row["parameters"].replace(",", ""))
    for row in _rows_of_tables_with("weights file"):
        for name in _model_names(row["model"]):
            found = re.search(r"([\d,]+) parameters", row["shape"])
            if found:
                documented[name] = int(found.group(1).replace(",", ""))
    dense = re.search(r"`tiny-moe-dense` \(the same model with one FFN of width 256: ([\d,]+) parameters", MODELS_DOC)
    documented["tiny-moe-dense"] = int(dense.group(1).replace(",", ""))
    assert sorted(documented) == BUNDLED
    assert {name: _count(_tensor_shapes(name)) for name in documented} == documented


def test_the_dense_yardstick_is_the_moes_active_size_less_its_routers_as_documented():
    config = json.loads((MODELS / "tiny-moe" / "config.json").read_text(encoding="utf-8"))["config"]
    shapes = _tensor_shapes("tiny-moe")
    experts = _count(shapes, lambda key: ".experts." in key)
    routers = _count(shapes, lambda key: ".router." in key)
    active = _count(shapes) - experts + experts * config["top_k"] // config["n_experts"]  # top_k of n experts a token
    dense = _count(_tensor_shapes("tiny-moe-dense"))
    assert active - dense == routers == config["n_layers"] * config["d_model"] * config["n_experts"]
    moe_row = next(row for row in _rows_of_tables_with("weights file") if _model_names(row["model"]) == ["tiny-moe"])
    assert f"{active:,} active per token" in moe_row["shape"]
    assert f"the MoE's active size less its two routers' {routers} weights" in MODELS_DOC
    assert f"same active size but for the MoE's {routers} router weights" in README
    assert f"the MoE's active size less its routers' {routers} weights" in MODELS_DOC  # the presets table


@pytest.fixture(scope="module")
def encoder_score():
    from core.checkpoints import load_bundled
    from core.objectives.masked_lm import MaskedLmTask
    from resources import resource_path

    encoder = load_bundled("tiny-encoder")
    task = MaskedLmTask(resource_path("tinyshakespeare.txt").read_text(encoding="utf-8"), encoder.tokenizer)
    seq_len = json.loads((MODELS / "tiny-encoder" / "training.json").read_text(encoding="utf-8"))["settings"]["seq_len"]
    return task.score(encoder.model, seq_len)


def test_the_encoders_two_accuracies_are_documented_each_named_by_what_it_counts(encoder_score):
    masked = (f"{encoder_score.masked_accuracy:.1%} of the {encoder_score.masked:,} blanked held-out positions "
              "filled right")
    every = f"{encoder_score.accuracy:.1%} of all {encoder_score.scored:,} chosen positions"
    assert masked in MODELS_DOC and every in MODELS_DOC
    assert f"{encoder_score.masked_accuracy:.1%} of the held-out blanked positions filled right" in README
    assert f"{encoder_score.accuracy:.1%} of all chosen positions, kept and randomised ones included" in README
