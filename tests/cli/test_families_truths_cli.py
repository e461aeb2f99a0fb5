"""The command line on an encoder, an encoder-decoder and a mixture: the same truths as the panels, and
one-line refusals where a command does not apply."""

from __future__ import annotations

import json

import pytest
import torch

from core.checkpoints import resolve_checkpoint
from core.model import Transformer
from core.model_saving import save_model
from core.presets import get_preset
from core.tokenizers import CharTokenizer
from resources import resource_path
from tests.cli.helpers import run
from tests.encoder_folders import bert_folder


@pytest.fixture(scope="module")
def pair_folder(tmp_path_factory):
    tokenizer = CharTokenizer.from_text(resource_path("tinyshakespeare.txt").read_text(encoding="utf-8"))
    folder = tmp_path_factory.mktemp("pair") / "tiny-encoder-decoder"
    save_model(Transformer.from_seed(get_preset("tiny-encoder-decoder").replace(vocab_size=tokenizer.vocab_size), 0),
               folder, tokenizer=tokenizer)
    return folder


def test_causal_on_an_encoder_calls_the_moving_past_expected(capsys):
    code, out, err = run(capsys, "causal", "--preset", "tiny-encoder", "--text", "abcdef", "--edit", "3=z")
    assert code == 0, err
    assert "positions 0-2 (before the edit): moved, from block 0 on, as a bidirectional model's must" in out
    assert "MOVED" not in out and "expected for a bidirectional model" in out and "not a leak" in out
    rows = [line.split() for line in out.splitlines() if line[:3].strip().isdigit()]
    assert [row[-1] for row in rows[:3]] == ["before"] * 3
    code, out, _ = run(capsys, "causal", "--preset", "tiny-encoder", "--text", "abcdef", "--edit", "3=z", "--json")
    data = json.loads(out)
    assert data["bidirectional"] is True and data["source_edited"] is False and data["leaks_into_past"] is True


def test_generate_and_evaluate_refuse_an_encoder_decoder_in_one_line(capsys, pair_folder, tmp_path):
    code, out, err = run(capsys, "generate", "--checkpoint", str(pair_folder), "--text", "to be", "--max-new", "3")
    assert code == 2 and out == "" and len(err.strip().splitlines()) == 1
    assert "is an encoder-decoder model: its decoder writes a target for a source" in err
    text = tmp_path / "text.txt"
    text.write_text("to be or not to be", encoding="utf-8")
    code, _, err = run(capsys, "evaluate", "--checkpoint", str(pair_folder), "--text-file", str(text))
    assert code == 2 and "no next-token prediction to score" in err


def test_head_names_the_decoder_block_of_an_encoder_decoder(capsys):
    code, out, err = run(capsys, "head", "--preset", "tiny-encoder-decoder", "--ids", "5,6,7,8", "--layer", "1")
    assert code == 0, err
    assert ": decoder block 1, head 0, query 3" in out


def test_shapes_with_a_source_length(capsys):
    code, out, err = run(capsys, "shapes", "--preset", "tiny-encoder-decoder", "-T", "6", "-S", "4", "--json")
    assert code == 0, err
    rows = {row["name"]: row for row in json.loads(out)["rows"]}
    assert rows["cross-attention weights"]["shape"] == [1, 4, 6, 4]
    assert rows["encoder: attention weights"]["shape"] == [1, 4, 4, 4]
    code, out, _ = run(capsys, "shapes", "--preset", "tiny-encoder-decoder", "-T", "6", "-S", "4")
    assert "T=6, S=4" in out
    code, _, err = run(capsys, "shapes", "--preset", "tiny-moe", "-S", "4")
    assert code == 2 and "--source-seq is the encoder input's length of an encoder-decoder" in err
    code, _, err = run(capsys, "shapes", "--preset", "tiny-encoder-decoder", "-S", "999")
    assert code == 2 and "a source of 999 tokens exceeds" in err


def test_patch_reads_an_encoders_metric_at_its_blank_and_attribute_refuses_berts_head(capsys, tmp_path):
    pytest.importorskip("transformers")
    folder = bert_folder(tmp_path / "bert")
    clean, corrupt, blank = "2,17,40,4,150,33,3", "2,17,90,4,150,33,3", 3
    code, out, err = run(capsys, "patch", "--checkpoint", str(folder), "--clean-ids", clean, "--corrupt-ids", corrupt,
                         "--answer-id", "61", "--position", str(blank), "--json")
    assert code == 0, err
    data = json.loads(out)
    assert data["position"] == blank
    model = resolve_checkpoint(folder).model
    with torch.no_grad():
        logits = model(torch.tensor([[int(i) for i in clean.split(",")]]))[0, blank]  # (V,)
    assert data["clean_metric"] == pytest.approx(float(logits[61]), abs=1e-5)
    code, out, _ = run(capsys, "patch", "--checkpoint", str(folder), "--clean-ids", clean, "--corrupt-ids", corrupt,
                       "--answer-id", "61", "--position", str(blank))
    assert f"at position {blank} (an encoder's logits there score the token at that position)" in out
    code, _, err = run(capsys, "patch", "--checkpoint", str(folder), "--clean-ids", clean, "--corrupt-ids", corrupt,
                       "--answer-id", "61", "--position", "7")
    assert code == 2 and "metric position 7 is outside the sequence" in err
    code, _, err = run(capsys, "attribute", "--checkpoint", str(folder), "--ids", clean, "--answer-id", "61")
    assert code == 2 and "head transform" in err and "not linear in the stream" in err
    assert len(err.strip().splitlines()) == 1
