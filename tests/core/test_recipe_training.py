"""A recipe trains what its preset's documentation says: the attention-only induction model's phase change.

The full recipe of tiny-induction-attn is 3,000 steps (about a minute on one thread); its induction heads form
between steps 700 and 1,000. The test runs the recipe as it is (the schedule of all 3,000 steps) and stops after
SHORT_STEPS. Measured on a 2-core x86_64 machine, one thread, seeds 0 to 4 (corpus made from the same seed): the
best layer-1 induction score first reached 0.4 at steps 750, 950, 850, 1,000 and 850, and stood at 0.904, 0.837,
0.860, 0.844 and 0.816 at step 1,200; at step 1 it is 0.034, the score of a head that reads every key alike. The
test takes the recipe's seed 0 and asserts at least HEADLINE_FLOOR, below the lowest of the five. The full run,
against the figures of docs/models.md, is in the benchmark (`python bench/recipe_training.py`).
"""

from __future__ import annotations

import torch

from core.experiments.induction import letter_probe
from core.presets import get_preset
from core.recipes import REPEATED_LETTERS, recipe_of
from core.repeated_corpus import repeated_letters
from core.tokenizers import CharTokenizer
from core.training import train
from tests.core.test_induction_probe import hand_score

SHORT_STEPS = 1200  # of the recipe's 3,000: past the phase change of every seed measured
HEADLINE_FLOOR = 0.6  # the best layer-1 induction score at SHORT_STEPS (measured 0.816 to 0.904 over five seeds)
BEFORE_CEILING = 0.1  # at step 1 (measured 0.034: attention spread evenly)


def test_the_attention_only_recipe_forms_its_induction_head_within_its_first_1200_steps():
    recipe = recipe_of("tiny-induction-attn")
    assert recipe.corpus == REPEATED_LETTERS and recipe.settings["steps"] > SHORT_STEPS
    config = get_preset("tiny-induction-attn")
    text = repeated_letters(seed=recipe.settings["seed"])
    probe = letter_probe(CharTokenizer.from_text(text), config.context_length, config.n_layers)
    done = [0]

    def on_progress(step: int, *_figures) -> None:
        done[0] = step

    threads = torch.get_num_threads()
    torch.set_num_threads(1)  # the recipe's thread count: the figures above were measured with it
    try:
        result = train(config, text, device="cpu", on_progress=on_progress, should_stop=lambda: done[0] >= SHORT_STEPS,
                       probe=lambda step, model: {"induction": probe.score(model)}, probe_every=SHORT_STEPS,
                       **{**recipe.settings, "eval_every": 0})
    finally:
        torch.set_num_threads(threads)
    assert result.steps_done == SHORT_STEPS and result.stopped
    assert result.settings.lr == recipe.settings["lr"] and result.settings.warmup_steps == recipe.warmup_steps
    scores = dict(result.probes)
    assert scores[1]["induction"] <= BEFORE_CEILING
    # Recomputed from the attention weights by the test's own hand, on the model the run returned.
    by_hand = hand_score(result.model, probe)
    assert by_hand >= HEADLINE_FLOOR
    assert abs(scores[SHORT_STEPS]["induction"] - by_hand) < 1e-5  # the run's own probe says the same
