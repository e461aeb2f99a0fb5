"""The trainer's three objectives: what a batch holds, what a run minimises, and the held-out figures it reports,
each recomputed here with plain torch."""

from __future__ import annotations

import math

import pytest
import torch
import torch.nn.functional as F

from core.config import ModelConfig
from core.date_corpus import MONTHS, date_pairs
from core.hooks import capture
from core.model import Transformer
from core.objectives.batch import IGNORED
from core.objectives.masked_lm import HELD_OUT_SEED, MASK_CHAR, MaskedLmTask, MaskingError, mask_tokens
from core.objectives.seq2seq import END, START, PairsError, Seq2SeqTask, greedy_decode, parse_pairs
from core.training import TrainingError, check_run, objective_of, train, TrainSettings

TEXT = ("the quick brown fox jumps over the lazy dog. " * 60)
ENCODER = ModelConfig(name="enc", vocab_size=30, context_length=32, d_model=32, n_heads=2, n_layers=1, d_ff=64,
                      architecture="encoder", attention="bidirectional")
ENCODER_DECODER = ModelConfig(name="encdec", vocab_size=40, context_length=32, d_model=32, n_heads=2, n_layers=1,
                              d_ff=64, architecture="encoder-decoder", positional="sinusoidal")
MOE = ModelConfig(name="moe", vocab_size=30, context_length=32, d_model=32, n_heads=2, n_layers=2, d_ff=32,
                  n_experts=4, top_k=2)


def test_each_architecture_trains_its_own_objective():
    assert objective_of(ENCODER) == "masked-lm"
    assert objective_of(ENCODER_DECODER) == "seq2seq"
    assert objective_of(MOE) == "next-token"
    with pytest.raises(TrainingError, match="causal"):
        objective_of(MOE.replace(attention="bidirectional"))
    with pytest.raises(TrainingError, match="mask pitfalls"):
        check_run(ENCODER, TrainSettings(mask_mode="none", seq_len=16))
    with pytest.raises(TrainingError, match="character vocabulary"):
        check_run(ENCODER_DECODER, TrainSettings(tokenizer="bpe", seq_len=16))


# ---- sequence to sequence ---------------------------------------------------------------------------


def test_pairs_are_read_line_by_line_and_a_line_without_one_tab_is_named():
    pairs = parse_pairs("ab\tba\n\ncd\tdc\n")
    assert [(p.source, p.target) for p in pairs] == [("ab", "ba"), ("cd", "dc")]
    for bad, line in (("ab\tba\nno tab here\n", 2), ("a\tb\tc\n", 1), ("\tb\n", 1)):
        with pytest.raises(PairsError, match=f"line {line}"):
            parse_pairs(bad)


def test_the_dates_corpus_is_made_from_its_seed_and_its_targets_are_the_sources_dates():
    import datetime

    text = date_pairs(seed=3, count=500)
    assert text == date_pairs(seed=3, count=500) and text != date_pairs(seed=4, count=500)
    pairs = parse_pairs(text)
    assert len({p.target for p in pairs}) == 500  # every date once
    for pair in pairs:
        day = datetime.date.fromisoformat(pair.target)
        words = pair.source.replace(",", "").split()
        assert MONTHS[day.month - 1] in words and str(day.day) in words and str(day.year) == words[-1]


def test_a_seq2seq_batch_is_teacher_forcing_without_padding():
    task = Seq2SeqTask(date_pairs(seed=0, count=400))
    generator = torch.Generator().manual_seed(0)
    for _ in range(5):
        batch = task.batch(8, 0, generator)
        assert batch.source.shape[0] == batch.tokens.shape[0] == 8
        assert (batch.labels != IGNORED).all()  # every target position is scored, none is padding
        assert (batch.tokens[:, 0] == task.start_id).all() and (batch.labels[:, -1] == task.end_id).all()
        assert torch.equal(batch.tokens[:, 1:], batch.labels[:, :-1])  # the decoder reads what it had to predict
    held_out_targets = {p.target for p in task.val_pairs}
    assert not held_out_targets & {p.target for p in task.train_pairs}


def test_greedy_decoding_and_exact_match_agree_with_a_loop_written_here():
    task = Seq2SeqTask(date_pairs(seed=0, count=300))
    model = Transformer.from_seed(ENCODER_DECODER.replace(vocab_size=task.tokenizer.vocab_size), seed=1)
    pair = task.val_pairs[0]
    source = torch.tensor([task.tokenizer.encode(pair.source)])  # (1, S)
    tokens = [task.start_id]
    with torch.no_grad():
        for _ in range(len(pair.target) + 1):
            tokens.append(int(model(torch.tensor([tokens]), source=source)[0, -1].argmax()))
    assert greedy_decode(model, source, task.start_id, task.end_id, len(pair.target) + 1)[0].tolist() == tokens[1:]
    # Exact match is the share of held-out targets (and END) the greedy output reproduces: force it by hand.
    score = task.score(model, examples=1)
    assert score.pairs == len(task.val_pairs) and score.exact_match == 0.0  # random weights write no date
    with torch.no_grad():
        labels = torch.tensor([task.tokenizer.encode(pair.target + END)])  # (1, T)
        logits = model(torch.tensor([task.tokenizer.encode(START + pair.target)]), source=source)  # (1, T, V)
    assert score.examples[0][0] in {p.source for p in task.val_pairs}
    single = Seq2SeqTask("\n".join(f"{p.source}\t{p.target}" for p in task.train_pairs[:9] + [pair]),
                         task.tokenizer)
    assert single.score(model).loss == pytest.approx(float(F.cross_entropy(logits[0], labels[0])), rel=1e-5)


def test_scoring_runs_the_held_out_pairs_in_slices_and_sums_them_as_one_pass_would():
    from core.objectives.seq2seq import SCORE_ROWS

    import random

    draw = random.Random(0)
    words = ["".join(draw.choice("abcdefgh") for _ in range(5)) for _ in range(2000)]
    task = Seq2SeqTask("\n".join(f"{word}\t{word[::-1]}" for word in words))  # one length group: 200 held out
    model = Transformer.from_seed(ENCODER_DECODER.replace(vocab_size=task.tokenizer.vocab_size), seed=1).eval()
    assert max(len(group.sources) for group in task.val_groups) > SCORE_ROWS  # a group that must be sliced
    rows_seen = []
    hook = model.register_forward_pre_hook(lambda module, args: rows_seen.append(args[0].shape[0]))
    try:
        score = task.score(model)
    finally:
        hook.remove()
    # The logits of one pass hold at most SCORE_ROWS pairs: memory no longer grows with the held-out split.
    assert max(rows_seen) == SCORE_ROWS
    total, characters = 0.0, 0
    with torch.no_grad():
        for group in task.val_groups:  # every pair of a group at once, as a loop written here
            logits = model(group.inputs, source=group.sources)  # (n, T, V)
            total += float(F.cross_entropy(logits.flatten(0, 1), group.labels.flatten(), reduction="sum"))
            characters += group.labels.numel()
    assert score.pairs == len(task.val_pairs)
    assert score.loss == pytest.approx(total / characters, rel=1e-5)  # float32 sums in another order


def test_pairs_wider_than_the_character_vocabulary_bound_are_refused_before_any_tensor():
    from core.limits import MAX_CHARACTER_VOCAB

    characters = [chr(c) for c in range(0x4E00, 0x4E00 + 80_000 + 2048) if not 0xD800 <= c <= 0xDFFF][:80_000]
    text = "\n".join("".join(characters[i : i + 8]) + "\t" + "".join(characters[i + 8 : i + 16])
                     for i in range(0, len(characters), 16))
    with pytest.raises(PairsError, match=f"80,002 distinct characters; a character model trains on at most "
                                         f"{MAX_CHARACTER_VOCAB:,}"):  # with START and END
        Seq2SeqTask(text)
    with pytest.raises(MaskingError, match=f"at most {MAX_CHARACTER_VOCAB:,}"):
        MaskedLmTask("".join(characters))
    with pytest.raises(TrainingError, match=f"at most {MAX_CHARACTER_VOCAB:,}"):
        train(ENCODER_DECODER, text, steps=1, batch_size=2, seq_len=16)
    decoder = ModelConfig(vocab_size=64, d_model=16, n_heads=2, n_layers=1, d_ff=32, context_length=16)
    with pytest.raises(TrainingError, match=f"at most {MAX_CHARACTER_VOCAB:,}"):  # next-token, from Python too
        train(decoder, "".join(characters), steps=1, batch_size=2, seq_len=8)


def test_a_short_seq2seq_run_learns_and_reports_its_held_out_figures():
    run = train(ENCODER_DECODER, date_pairs(seed=0, count=600), steps=60, batch_size=16, seq_len=16, lr=3e-3,
                eval_every=30)
    assert run.objective == "seq2seq" and run.config.vocab_size == run.tokenizer.vocab_size
    assert run.loss_history[-1][1] < run.loss_history[0][1] - 0.5
    assert set(run.quality) == {"loss", "exact_match", "pairs", "examples"} and run.quality["pairs"] == 60
    assert run.final_val_loss == run.quality["loss"] and run.metadata()["objective"] == "seq2seq"


# ---- masked language modelling ----------------------------------------------------------------------


def test_the_masked_lm_vocabulary_holds_the_blank_and_a_corpus_with_it_is_refused():
    task = MaskedLmTask(TEXT)
    assert task.tokenizer.token_text(task.mask_id) == MASK_CHAR
    assert task.tokenizer.vocab_size == len(set(TEXT)) + 1
    with pytest.raises(MaskingError, match="contains '_'"):
        MaskedLmTask(TEXT + "_")


def test_the_held_out_score_and_its_unigram_baseline_agree_with_a_count_made_here():
    task = MaskedLmTask(TEXT)
    model = Transformer.from_seed(ENCODER.replace(vocab_size=task.tokenizer.vocab_size), seed=2)
    score = task.score(model, seq_len=16)
    windows = task.val_ids[: len(task.val_ids) // 16 * 16].view(-1, 16)  # (W, 16)
    masked = mask_tokens(windows, task.mask_id, task.tokenizer.vocab_size, torch.Generator().manual_seed(HELD_OUT_SEED),
                         special_ids=(task.mask_id,))
    with torch.no_grad():
        logits = model(masked.inputs)  # (W, 16, V)
    chosen = masked.chosen
    assert score.scored == int(chosen.sum())
    assert score.loss == pytest.approx(float(F.cross_entropy(logits[chosen], windows[chosen])), rel=1e-5)
    assert score.accuracy == pytest.approx(float((logits[chosen].argmax(-1) == windows[chosen]).double().mean()))
    counts = {}
    for token in task.train_ids.tolist():
        counts[token] = counts.get(token, 0) + 1
    commonest = max(counts, key=counts.get)
    total = len(task.train_ids) + task.tokenizer.vocab_size  # add-one smoothing over the vocabulary
    expected = -sum(math.log((counts.get(t, 0) + 1) / total) for t in windows[chosen].tolist()) / score.scored
    assert score.unigram_loss == pytest.approx(expected, rel=1e-9)
    assert score.unigram_accuracy == pytest.approx(float((windows[chosen] == commonest).double().mean()))


def test_a_short_masked_lm_run_beats_its_first_steps_and_reports_blanks():
    run = train(ENCODER, TEXT, steps=150, batch_size=16, seq_len=16, lr=1e-2, eval_every=75)
    assert run.objective == "masked-lm" and run.tokenizer.vocab_size == len(set(TEXT)) + 1
    assert run.loss_history[-1][1] < run.loss_history[0][1] - 0.5
    # A repeated sentence: the neighbours on both sides already tell more than character frequencies.
    assert run.quality["loss"] < run.quality["unigram_loss"] - 0.2


def test_a_masked_lm_run_never_sees_the_future_as_a_decoder_would_not():
    """The run's forward is bidirectional: the config's mask_mode default (causal) is not applied to an encoder."""
    run = train(ENCODER, TEXT, steps=2, batch_size=2, seq_len=16, eval_every=0)
    ids = torch.tensor([run.tokenizer.encode(TEXT[:16])])  # (1, 16)
    later = ids.clone()
    later[0, -1] = (later[0, -1] + 1) % run.tokenizer.vocab_size
    with torch.no_grad():
        assert not torch.equal(run.model(ids)[0, 0], run.model(later)[0, 0])  # position 0 reads the last token


# ---- mixture of experts -----------------------------------------------------------------------------


def test_the_balance_loss_is_added_for_experts_and_their_load_is_recorded():
    loads = []
    run = train(MOE, TEXT, steps=6, batch_size=4, seq_len=16, eval_every=3, on_expert_load=lambda s, sh: loads.append((s, sh)))
    assert [step for step, _ in run.expert_load] == [3, 6] and loads == run.expert_load[:1]
    for _, shares in run.expert_load:
        assert len(shares) == 2 and all(len(row) == 4 and sum(row) == pytest.approx(1.0) for row in shares)
    plain = train(MOE, TEXT, steps=1, batch_size=4, seq_len=16, eval_every=0, balance_coef=0.0)
    balanced = train(MOE, TEXT, steps=1, batch_size=4, seq_len=16, eval_every=0, balance_coef=1.0)
    # Same batch, same objective loss; only the router's gradient (and so its weights) differs.
    assert plain.loss_history == balanced.loss_history
    router = "blocks.0.ffn.router.weight"
    assert not torch.equal(plain.model.state_dict()[router], balanced.model.state_dict()[router])


def test_the_last_expert_load_counts_the_routers_top_k_over_the_steps_since_the_last_record():
    """One step with eval_every 1: the record is the first batch's routing, recomputed here from the same weights."""
    from core.training import random_windows
    from core.tokenizers import CharTokenizer

    run = train(MOE, TEXT, steps=1, batch_size=4, seq_len=16, eval_every=0, lr=1e-9, balance_coef=0.0)
    tokenizer = CharTokenizer.from_text(TEXT)
    ids = torch.tensor(tokenizer.encode(TEXT))
    train_ids = ids[: int(len(ids) * 0.9)]
    inputs, _ = random_windows(train_ids, 4, 16, torch.Generator().manual_seed(0))  # the run's first batch
    first = Transformer.from_seed(run.config, seed=0)  # the weights that routed it
    with torch.no_grad(), capture(first, ["blocks.*.ffn.hook_router_logits"]) as seen:
        first(inputs)
    for layer in range(2):
        chosen = seen[f"blocks.{layer}.ffn.hook_router_logits"].topk(2, dim=-1).indices.flatten()  # (B*T*k,)
        counts = torch.bincount(chosen, minlength=4).double()
        assert run.expert_load[-1][1][layer] == pytest.approx((counts / counts.sum()).tolist())
