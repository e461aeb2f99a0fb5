"""The bundled tiny-induction model has real induction heads: strong at every sequence length it was trained on,
in its second layer (it composes with a previous-token head below), and in-context copying lowers the loss."""

from __future__ import annotations

import numpy as np
import pytest

from core.checkpoints import load_bundled
from core.experiments.induction import induction
from core.repeated_corpus import LETTERS, PERIODS, repeated_letters


@pytest.fixture(scope="module")
def model():
    return load_bundled("tiny-induction").model.eval()


@pytest.mark.parametrize("period", [8, 20, 25])
def test_a_second_layer_head_copies_from_the_previous_occurrence_at_every_trained_length(model, period):
    result = induction(model, period=period, seed=3)
    layer, head = result.best_head()
    assert result.induction_score[layer, head] >= 0.4 and layer >= 1  # an induction head needs a layer below it
    assert result.induction_score[0].max() < 0.1  # the first layer cannot copy by content alone
    assert np.mean(result.loss_second) <= 0.5 * np.mean(result.loss_first)


def test_the_head_lesson_13_switches_off_is_the_strongest_and_its_neighbour_is_not(model):
    """resources/lessons/13-induction-heads.json ablates L1H0, then L1H1 for contrast."""
    from core.experiments.ablation import ablate

    assert induction(model, period=20, seed=0).best_head() == (1, 0)
    sequence = "JmXqzRbTwKcLpVnYhDgA"
    ids = load_bundled("tiny-induction").tokenizer.encode(sequence + sequence[:-1])
    strongest, neighbour = ablate(model, ids, heads=[(1, 0)]), ablate(model, ids, heads=[(1, 1)])
    assert strongest.loss_after > 2 * strongest.loss_before
    assert neighbour.loss_after - neighbour.loss_before < 0.25 * (strongest.loss_after - strongest.loss_before)


def test_the_corpus_is_made_from_its_seed_with_lengths_in_range():
    text = repeated_letters(seed=0, blocks=200)
    assert text == repeated_letters(seed=0, blocks=200) and text != repeated_letters(seed=1, blocks=200)
    for block in text.split(" ")[:-1]:
        half = len(block) // 2
        assert block[:half] == block[half:] and PERIODS[0] <= half <= PERIODS[1]
        assert set(block) <= set(LETTERS)
