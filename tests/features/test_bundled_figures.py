"""The bundled SAE and tuned lenses still reach their figures on held-out Shakespeare (the last tenth of the corpus,
4,096 tokens in windows of 128), as docs/features.md records them: one evaluation each."""

from __future__ import annotations

import pytest

from core.checkpoints import load_bundled
from core.corpus import bundled_corpus
from core.features.activations import consecutive_windows, split_ids, token_ids
from core.features.library import bundled_lens_for, open_sae
from core.features.sae_stats import sae_stats
from core.features.tuned_lens import lens_kl, load_lens

# docs/features.md, as `sae stats` printed them; a sum of 4,096 float32 rows in another order moves the 6th digit.
DOCUMENTED = {"variance_explained": 0.8987758462367886, "l0": 16.0, "dead_fraction": 0.0,
              "ce_recovered": 0.9710288725500174}


def _held_out(tokenizer):
    return consecutive_windows(split_ids(token_ids(tokenizer, bundled_corpus().text), "held-out"), 128, 4096)


def test_the_bundled_sae_meets_its_four_figures():
    loaded = load_bundled("tiny-gpt")
    stats = sae_stats(loaded.model, open_sae("tiny-gpt-resid-post-2"), _held_out(loaded.tokenizer)).as_dict()
    assert stats["tokens"] == 4096
    assert stats["variance_explained"] >= 0.85 and stats["l0"] <= 32
    assert stats["dead_fraction"] <= 0.15 and stats["ce_recovered"] >= 0.85
    for key, value in DOCUMENTED.items():
        assert stats[key] == pytest.approx(value, abs=1e-4), key


@pytest.mark.parametrize("name", ["tiny-gpt", "tiny-llama"])
def test_the_bundled_tuned_lens_is_below_the_logit_lens_at_every_block(name):
    loaded = load_bundled(name)
    report = lens_kl(loaded.model, load_lens(bundled_lens_for(name), loaded.model), _held_out(loaded.tokenizer))
    assert len(report["tuned_lens_kl"]) == loaded.config.n_layers
    assert all(tuned < logit for tuned, logit in zip(report["tuned_lens_kl"], report["logit_lens_kl"])), report
