"""The induction score a training run tracks: its sequence, train()'s probe hook, and the training job's record.

Every score is checked against one computed here from attention weights written out by hand (q k^T, the
causal mask, the softmax) from the model's weights, not from the lab's hooks."""

from __future__ import annotations

import math

import pytest
import torch
import torch.nn.functional as F

from core.config import ModelConfig
from core.corpus import repeated_letters_corpus
from core.experiments.induction import InductionProbe, letter_probe
from core.repeated_corpus import LETTERS, repeated_letters
from core.tokenizers import CharTokenizer
from core.training import train
from core.training_job import TrainingControl, TrainRequest, run_training
from tests.core.test_training_job import RecordingToken

TEXT = repeated_letters(seed=0, blocks=600)
TOKENIZER = CharTokenizer.from_text(TEXT)
CONFIG = ModelConfig(name="probe-tiny", vocab_size=len(LETTERS) + 1, context_length=32, d_model=16, n_heads=2,
                     n_layers=2, d_ff=32).validated()


def hand_patterns(model, ids: list[int]) -> list[torch.Tensor]:
    """(H, T, T) attention weights of each layer of a pre-LayerNorm, learned-position GPT (GELU FFNs, or none),
    in float64 by hand."""
    c = model.config
    w = {name: t.detach().double() for name, t in model.state_dict().items()}
    seq, heads, d_head = len(ids), c.n_heads, c.d_head

    def ln(x, prefix):
        return F.layer_norm(x, (c.d_model,), w[prefix + ".weight"], w[prefix + ".bias"], c.norm_eps)

    x = w["tok_emb.weight"][ids] + w["pos_emb.weight"][:seq]  # (T, D)
    patterns = []
    for layer in range(c.n_layers):
        p = f"blocks.{layer}."
        qkv = ln(x, p + "norm1") @ w[p + "attn.qkv.weight"].T + w[p + "attn.qkv.bias"]  # (T, 3D)
        q, k, v = (t.reshape(seq, heads, d_head).transpose(0, 1) for t in qkv.split(c.d_model, dim=-1))  # (H, T, d)
        scores = (q @ k.transpose(-2, -1) / math.sqrt(d_head)).masked_fill(
            torch.ones(seq, seq, dtype=torch.bool).triu(1), float("-inf"))  # (H, T, T)
        weights = scores.softmax(dim=-1)  # (H, T, T)
        patterns.append(weights)
        x = x + (weights @ v).transpose(0, 1).reshape(seq, c.d_model) @ w[p + "attn.out_proj.weight"].T \
            + w[p + "attn.out_proj.bias"]  # (T, D)
        if c.attention_only:
            continue
        h = ln(x, p + "norm2")
        hidden = F.gelu(h @ w[p + "ffn.up.weight"].T + w[p + "ffn.up.bias"])  # (T, F)
        x = x + hidden @ w[p + "ffn.down.weight"].T + w[p + "ffn.down.bias"]  # (T, D)
    return patterns


def hand_score(model, probe: InductionProbe) -> float:
    """The best mean weight from query q of the second copy to key q - N + 1, over the heads of layer 1."""
    n = probe.period
    pattern = hand_patterns(model, list(probe.ids))[1]  # (H, 2N, 2N)
    queries = torch.arange(n, 2 * n)
    return float(pattern[:, queries, queries - n + 1].mean(dim=-1).max())


def test_the_probe_is_distinct_letters_written_twice_that_fit_the_context():
    probe = letter_probe(TOKENIZER, context_length=32, n_layers=2, seed=3)
    assert isinstance(probe, InductionProbe)
    n = probe.period
    assert n == 16 and 2 * n <= 32  # half the context: 20 letters would not fit twice
    first = probe.text[:n]
    assert probe.text == first * 2 and len(set(first)) == n and set(first) <= set(LETTERS)
    assert list(probe.ids) == TOKENIZER.encode(probe.text)
    assert letter_probe(TOKENIZER, 32, 2, seed=3) == probe and letter_probe(TOKENIZER, 32, 2, seed=4) != probe
    assert probe.description() == "best induction score over layer-1 heads, on 16 random letters written twice (seed 3)"
    one_layer = letter_probe(TOKENIZER, 64, 1)
    assert one_layer.first_layer == 0 and one_layer.period == 20 and "one layer" in one_layer.description()
    assert "at least 2 distinct letters" in letter_probe(CharTokenizer.from_text("0123 ,.;"), 64, 2)
    # A head that reads every key alike: query q (0-based) spreads over q + 1 keys.
    assert probe.uniform_score == pytest.approx(sum(1 / q for q in range(17, 33)) / 16, rel=1e-12)


def test_train_probes_at_step_one_and_every_nth_step_in_eval_mode_without_gradients():
    probe = letter_probe(TOKENIZER, CONFIG.context_length, CONFIG.n_layers)
    seen = {}

    def record(step, model):
        seen[step] = (model.training, torch.is_grad_enabled())
        seen["model"] = model
        return {"lab": probe.score(model), "hand": hand_score(model, probe)}

    def after_step(step, *_):
        if step in seen:
            assert seen["model"].training, "train mode is back before the next step"

    result = train(CONFIG, TEXT, steps=12, batch_size=4, seq_len=32, lr=1e-2, seed=0, probe=record, probe_every=5,
                   on_progress=after_step)
    assert [step for step, _ in result.probes] == [1, 5, 10]
    assert all(seen[step] == (False, False) for step in (1, 5, 10))
    for _, figures in result.probes:
        assert figures["lab"] == pytest.approx(figures["hand"], abs=1e-6)  # float32 weights, a mean of N of them
    assert len({figures["lab"] for _, figures in result.probes}) == 3  # the weights moved between probes


def test_a_tracked_run_sends_the_scores_and_records_them():
    corpus = repeated_letters_corpus(0)
    request = TrainRequest(CONFIG, corpus, 30, batch_size=4, seq_len=32, lr=1e-2, seed=0, device="cpu", state_seed=0,
                           track_induction=True)
    token = RecordingToken()
    outcome = run_training(request, TrainingControl(), token)
    probe = letter_probe(CharTokenizer.from_text(corpus.text), CONFIG.context_length, CONFIG.n_layers)
    every = probe.every(30)
    assert [step for step, _ in outcome.probe_history] == sorted({1, *range(every, 31, every)})
    assert [entry for progress in token.partials for entry in progress.probes] == list(outcome.probe_history)
    assert {progress.probe for progress in token.partials} == {probe} == {outcome.probe}
    assert {progress.probe_note for progress in token.partials} == {""} == {outcome.probe_note}
    record = outcome.metadata["induction_probe"]
    assert record["history"] == [[step, value] for step, value in outcome.probe_history]
    assert record["text"] == probe.text and record["layers_scored"] == [1] and record["what"] == probe.description()
    # The last probe ran on the weights the run ended with.
    assert outcome.probe_history[-1][1] == pytest.approx(hand_score(outcome.loaded.model, probe), abs=1e-6)


def test_an_untracked_run_records_nothing_and_a_hopeless_one_says_why():
    corpus = repeated_letters_corpus(0)
    plain = run_training(TrainRequest(CONFIG, corpus, 3, 2, 16, 1e-2, 0, "cpu", 0), TrainingControl(), RecordingToken())
    assert plain.probe_history == () and plain.probe is None and plain.probe_note == ""
    assert "induction_probe" not in plain.metadata
    short = CONFIG.replace(context_length=3, name="short")
    request = TrainRequest(short, corpus, 3, 2, 3, 1e-2, 0, "cpu", 0, track_induction=True)
    outcome = run_training(request, TrainingControl(), RecordingToken())
    assert outcome.probe_history == () and outcome.probe is None and "induction_probe" not in outcome.metadata
    assert outcome.probe_note.startswith("No induction score: the induction score needs at least 2 distinct letters")
