"""core.choices: the names the GUI thread reads are torch-free and agree with what the model runs."""

import subprocess
import sys
from pathlib import Path
from typing import get_args

import pytest
import torch

import core.choices as choices
import core.experiments.mask_grids as mask_grids
import core.experiments.positions as positions
import core.model as model_module
from core.config import ModelConfig, Positional
from core.model import Transformer
from core.presets import get_preset

ROOT = Path(__file__).resolve().parents[2]


def test_importing_the_choices_loads_neither_torch_nor_numpy():
    script = (
        "import sys\n"
        "import core.choices\n"
        "print(sorted(m for m in sys.modules if m.split('.')[0] in ('torch', 'numpy')))\n"
    )
    result = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, cwd=ROOT, check=True)
    assert result.stdout.strip() == "[]"


def test_the_subprocess_check_would_see_torch():
    # The check above is only worth something if the same probe reports torch when it is loaded.
    script = "import sys\nimport core.model\nprint('torch' in sys.modules)\n"
    result = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, cwd=ROOT, check=True)
    assert result.stdout.strip() == "True"


def test_mask_modes_are_the_models_and_every_one_has_a_label_and_a_description():
    assert model_module.MASK_MODES is choices.MASK_MODES and model_module.MaskMode is choices.MaskMode
    assert choices.MASK_MODES == get_args(choices.MaskMode) == ("causal", "none", "off-by-one", "after-softmax")
    assert tuple(choices.MASK_MODE_LABELS) == choices.MASK_MODES
    assert tuple(choices.MASK_MODE_DESCRIPTIONS) == choices.MASK_MODES
    assert mask_grids.MASK_MODE_DESCRIPTIONS is choices.MASK_MODE_DESCRIPTIONS
    assert choices.MASK_MODE_LABELS["none"] == "none (bidirectional)"
    assert len(set(choices.MASK_MODE_LABELS.values())) == len(choices.MASK_MODES)


@pytest.mark.parametrize("mode", choices.MASK_MODES)
def test_the_model_runs_every_mask_mode_the_choices_name(mode):
    model = Transformer.from_seed(get_preset("tiny-gpt"), 0)
    with torch.inference_mode():
        logits = model(torch.tensor([[1, 2, 3]]), mask_mode=mode)  # (1, 3, V)
    assert logits.shape == (1, 3, model.config.vocab_size)


def test_positional_encodings_are_the_configs_and_every_one_has_a_display_name():
    assert choices.POSITIONAL_ENCODINGS == get_args(Positional)
    assert set(choices.POSITIONAL_DISPLAY_NAMES) == set(choices.POSITIONAL_ENCODINGS)
    assert choices.POSITIONAL_DISPLAY_NAMES["rope"] == "RoPE" and choices.POSITIONAL_DISPLAY_NAMES["none"] == "no"
    for encoding in choices.POSITIONAL_ENCODINGS:
        ModelConfig(positional=encoding).validated()  # the config accepts every name the GUI offers


def test_permutation_encodings_are_what_the_experiment_returns_in_that_order():
    assert positions.PERMUTATION_ENCODINGS is choices.PERMUTATION_ENCODINGS
    assert set(choices.PERMUTATION_ENCODINGS) <= set(choices.POSITIONAL_ENCODINGS)
    assert tuple(choices.PERMUTATION_ENCODING_CAPTIONS) == choices.PERMUTATION_ENCODINGS
    assert positions.permutation_equivariance().encodings == choices.PERMUTATION_ENCODINGS
    with_alibi = positions.permutation_equivariance(get_preset("tiny-gpt").replace(positional="alibi"))
    assert with_alibi.encodings == (*choices.PERMUTATION_ENCODINGS, "alibi")
