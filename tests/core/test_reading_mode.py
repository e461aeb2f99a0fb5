"""The reading's printouts: each figure is the reading's own script run here, in the reading's format."""

import numpy as np
import pytest
import torch

from core.experiments.reading import MAX_SEED, causal_printout, check_seed, permutation_printout, rope_printout
from tests.core.test_causal import _ReadingBlock, _run_reading_script
from tests.core.test_positions import reading_permutation_script, reading_rope_script
from tests.float32 import assert_printed_close, float32_tolerance, printed_tolerance
from tests.reading_figures import READING_LINES, READING_SCALE

READING_PERMUTATION = ("0.00000012", "0.14426041")  # what the reading prints for its permutation script
PERMUTATION_SCALE = 0.15  # the larger figure: float32 differences of this size


def _shown(line) -> float:
    """The figure as a student reads it off the screen."""
    return float(line.figure)


def test_the_causal_printout_is_the_readings_script_run_here():
    printout = causal_printout()
    diff, diff_nc = _run_reading_script()
    masked = [line for line in printout.lines if line.caption.startswith("position ")]
    assert len(masked) == len(diff)
    for t, (line, script) in enumerate(zip(masked, diff.tolist())):
        assert line.caption == f"position {t}: max |change|"
        if t < printout.edit_position:
            assert script == 0.0 and line.value == 0.0 and printout.exactly_unchanged[t]
            assert "torch.equal" in line.note
        else:
            # The printout shows the exact difference; the script rounds it to float32 first.
            assert abs(line.value - script) <= float32_tolerance(READING_SCALE, ulps=1)
            assert abs(_shown(line) - script) <= printed_tolerance(line.figure) + float32_tolerance(READING_SCALE)
    past = printout.lines[-1]
    assert past.caption == f"no mask, positions 0-{printout.edit_position - 1} max |change|"
    assert past.value == float(diff_nc[:printout.edit_position].max())
    n_parameters = sum(p.numel() for p in _ReadingBlock(64, 4, 256).parameters())
    assert printout.figure("parameters").value == n_parameters
    assert printout.figure("input shape").figure == str((2, 8, 64)) == printout.figure("output shape").figure


def test_the_causal_printout_shows_the_figures_the_reading_prints():
    printout = causal_printout()
    for line, expected in zip(printout.lines, READING_LINES, strict=True):
        words, _, figure = expected.rpartition(" = ")
        if words:
            assert line.caption == words
            assert_printed_close(line.figure, figure, READING_SCALE)
        else:  # "input shape  (2, 8, 64)", "parameters   49984": the words, spaces, then the figure
            assert expected.startswith(line.caption + " ")
            assert expected.removeprefix(line.caption).strip() == line.figure
    assert printout.readings_seed and "seed 0, as in the reading" in printout.setup
    assert "x ~ N(0,1)" in printout.setup


def test_a_script_float32_rounding_that_moves_a_printed_digit_is_noted_beside_it():
    printout = causal_printout()
    diff, _ = _run_reading_script()
    for t, line in enumerate(printout.lines[3:3 + len(diff)]):
        script = f"{float(diff[t]):.6f}"
        assert (script in line.note) == (script != line.figure and t >= printout.edit_position), (t, line)


@pytest.mark.parametrize("seed", [1, 7])
def test_another_seed_moves_the_block_figures_but_never_the_exact_past(seed):
    readings, other = causal_printout(), causal_printout(seed)
    assert not other.readings_seed and f"seed {seed} (the reading's is 0)" in other.setup
    assert other.masked_change[:other.edit_position].tolist() == [0.0] * other.edit_position
    assert other.exactly_unchanged[:other.edit_position].all()
    assert not np.array_equal(other.masked_change, readings.masked_change)
    assert other.figure("parameters").value == readings.figure("parameters").value


def test_the_rope_printout_is_the_readings_script_run_here():
    printout = rope_printout()
    rope_scores, additive = reading_rope_script()
    values = [line.value for line in printout.lines]
    np.testing.assert_allclose(values, [*rope_scores, *additive], rtol=0, atol=1e-12)
    for line, script in zip(printout.lines, [*rope_scores, *additive]):
        assert abs(_shown(line) - script) <= printed_tolerance(line.figure)
    assert printout.lines[0].caption == "RoPE: m =   3, n =   1  (m - n = 2):  score"
    assert printout.readings_seed and "np.random.seed(0)" in printout.setup


def test_the_permutation_printout_is_the_readings_script_run_here():
    printout = permutation_printout()
    no_pe, with_pe, pe = reading_permutation_script()
    assert printout.lines[0].value == no_pe and printout.lines[1].value == with_pe  # bitwise: the same script
    for line, reading in zip(printout.lines[:2], READING_PERMUTATION):
        assert_printed_close(line.figure, reading, PERMUTATION_SCALE)
    rows = [[float(v) for v in line.figure.strip("[]").replace("'", "").split(", ")] for line in printout.lines[2:]]
    np.testing.assert_allclose(rows, pe[[0, 3], :6].numpy(), atol=printed_tolerance("0.0000"))
    assert "x ~ N(0,1), seed 0, as in the reading" in printout.setup and "order 3 1 5 0 2 4" in printout.setup


def test_printouts_leave_the_global_random_generators_alone():
    torch.manual_seed(5)
    np.random.seed(5)
    expected_torch, expected_numpy = torch.rand(3), np.random.rand(3)
    torch.manual_seed(5)
    np.random.seed(5)
    causal_printout(3)
    rope_printout(3)
    permutation_printout(3)
    assert torch.equal(torch.rand(3), expected_torch)
    assert np.array_equal(np.random.rand(3), expected_numpy)


@pytest.mark.parametrize("seed", [-1, MAX_SEED + 1, 1.5, True, "0", None])
def test_bad_seeds_are_refused_in_one_sentence(seed):
    with pytest.raises(ValueError, match="the seed must be a whole number"):
        check_seed(seed)
    with pytest.raises(ValueError, match="the seed must be a whole number"):
        causal_printout(seed)
