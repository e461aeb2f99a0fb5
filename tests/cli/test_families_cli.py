"""`fill-mask`, `translate`, `route` on checkpoint folders of random-weight family models: the JSON equals figures
computed here, the tables print, and mistakes are one line with exit 2."""

from __future__ import annotations

import json

import numpy as np
import pytest
import torch

from tests import family_models
from tests.cli.helpers import run

TEXT = "To be, or n_t to be"


@pytest.fixture(scope="module")
def folders(tmp_path_factory):
    root = tmp_path_factory.mktemp("families")
    return {
        "encoder": family_models.folder(family_models.encoder(seed=1), family_models.encoder_tokenizer(), root / "enc"),
        "seq2seq": family_models.folder(family_models.encoder_decoder(seed=2), family_models.date_tokenizer(),
                                        root / "seq2seq"),
        "moe": family_models.folder(family_models.moe(seed=3), family_models.shakespeare_tokenizer(), root / "moe"),
    }


def test_fill_mask_json_is_the_softmax_at_each_blank(capsys, folders):
    code, out, err = run(capsys, "fill-mask", "--checkpoint", str(folders["encoder"]), "--text", TEXT, "--top", "4",
                         "--json")
    assert code == 0, err
    data = json.loads(out)
    tokenizer = family_models.encoder_tokenizer()
    ids = tokenizer.encode(TEXT)
    assert data["tokens"] == ids and data["mask_id"] == tokenizer.id_of("_")
    model = family_models.encoder(seed=1)
    with torch.no_grad():
        probabilities = torch.softmax(model(torch.tensor([ids]))[0, TEXT.index("_")].double(), dim=-1)
    top = probabilities.topk(4)
    (blank,) = data["blanks"]
    assert blank["position"] == TEXT.index("_")
    assert [entry["id"] for entry in blank["top"]] == top.indices.tolist()
    np.testing.assert_allclose([entry["probability"] for entry in blank["top"]], top.values.numpy(), atol=1e-7)
    assert [entry["token"] for entry in blank["top"]] == [tokenizer.token_text(i) for i in top.indices.tolist()]


def test_fill_mask_table_and_ids(capsys, folders):
    ids = ",".join(map(str, family_models.encoder_tokenizer().encode("a_b_c")))
    code, out, err = run(capsys, "fill-mask", "--checkpoint", str(folders["encoder"]), "--ids", ids)
    assert code == 0, err
    assert "2 blanks" in out and "blank at position 1:" in out and "blank at position 3:" in out
    assert out.count("probability") == 2


def test_translate_json_matches_a_greedy_loop_and_has_every_step_s_cross_attention(capsys, folders):
    code, out, err = run(capsys, "translate", "--checkpoint", str(folders["seq2seq"]), "--source", "5 March 2021",
                         "--max-new", "6", "--json")
    assert code == 0, err
    data = json.loads(out)
    tokenizer = family_models.date_tokenizer()
    model = family_models.encoder_decoder(seed=2)
    source = tokenizer.encode("5 March 2021")
    decoder_input, produced = [tokenizer.id_of("\t")], []
    with torch.no_grad():
        for _ in range(6):
            choice = int(model(torch.tensor([decoder_input]), source=torch.tensor([source]))[0, -1].argmax())
            produced.append(choice)
            if choice == tokenizer.id_of("\n"):
                break
            decoder_input.append(choice)
    assert data["source"] == source and data["generated"] == produced
    cross = np.array(data["cross_attention"])
    assert data["cross_attention_shape"] == ["layers", "heads", "steps", "source"]
    assert cross.shape == (model.config.n_layers, model.config.n_heads, len(produced), len(source))
    np.testing.assert_allclose(np.array(data["cross_attention_mean"]), cross.mean(axis=(0, 1)), atol=1e-6)
    assert data["text"] == tokenizer.decode(data["output"]) and len(data["steps"]) == len(produced)


def test_translate_table_names_start(capsys, folders):
    code, out, err = run(capsys, "translate", "--checkpoint", str(folders["seq2seq"]), "--source", "May 1, 1999",
                         "--max-new", "3")
    assert code == 0, err
    assert "START" in out and "output: " in out and "most attended source" in out


def test_route_json_chooses_the_top_k_and_counts_the_load(capsys, folders):
    code, out, err = run(capsys, "route", "--checkpoint", str(folders["moe"]), "--text", "To be, or not", "--json")
    assert code == 0, err
    data = json.loads(out)
    model = family_models.moe(seed=3)
    assert data["top_k"] == 2 and data["n_experts"] == 4 and len(data["layers"]) == model.config.n_layers
    for layer in data["layers"]:
        scores = np.array([token["router_logits"] for token in layer["tokens"]])  # (T, E)
        chosen = [token["chosen"] for token in layer["tokens"]]
        assert chosen == np.argsort(-scores, axis=-1, kind="stable")[:, :2].tolist()
        assert layer["load"] == np.bincount(np.array(chosen).ravel(), minlength=4).tolist()
    assert data["total_parameters"] == sum(p.numel() for p in model.parameters())
    assert data["active_parameters"] < data["total_parameters"]


def test_route_table(capsys, folders):
    code, out, err = run(capsys, "route", "--checkpoint", str(folders["moe"]), "--text", "abc")
    assert code == 0, err
    assert "layer 0:" in out and "load: E0" in out and "one token uses" in out and "the same as" in out


@pytest.mark.parametrize(
    ("command", "folder", "extra", "message"),
    [
        ("fill-mask", "tiny-gpt", ["--text", "a_b"], "cannot fill a blank from both sides"),
        ("fill-mask", "encoder", ["--text", "no blank"], "the text has no blank"),
        ("fill-mask", "encoder", ["--text", "a_b", "--top", "99"], "argument --top: must be a whole number from 1 to 50"),
        ("fill-mask", "encoder", ["--text", "caf\u00e9_"], "is not in the model's"),
        ("fill-mask", "seq2seq", ["--text", "1_2"], "is an encoder-decoder"),
        ("translate", "tiny-gpt", ["--source", "5 May"], "load an encoder-decoder"),
        ("translate", "seq2seq", ["--source", "5 May", "--max-new", "0"], "argument --max-new: must be a whole number"),
        ("translate", "seq2seq", ["--source", "5 Mai!"], "is not in the model's"),
        ("translate", "seq2seq", ["--source-ids", "1,x"], "expects comma-separated whole numbers"),
        ("route", "tiny-gpt", ["--text", "abc"], "there is no router"),
        ("route", "moe", ["--ids", "1,999"], "outside the vocabulary"),
    ],
)
def test_mistakes_are_one_line_and_exit_2(capsys, folders, command, folder, extra, message):
    checkpoint = str(folders[folder]) if folder in folders else folder
    try:
        code, _out, err = run(capsys, command, "--checkpoint", checkpoint, *extra)
    except SystemExit as exit_:  # argparse refuses while parsing
        code, err = exit_.code, capsys.readouterr().err
    assert code == 2
    assert message in err and len(err.strip().splitlines()) == 1, err


def test_a_tokenizer_without_start_is_refused(capsys, tmp_path):
    model = family_models.encoder_decoder(seed=0, vocab_size=family_models.shakespeare_tokenizer().vocab_size)
    folder = family_models.folder(model, family_models.shakespeare_tokenizer(), tmp_path / "no-start")
    code, _out, err = run(capsys, "translate", "--checkpoint", str(folder), "--source", "abc")
    assert code == 2 and "no START token" in err


def test_translate_warns_on_a_spelling_the_dates_translator_never_learned(capsys):
    import json

    from core.date_corpus import LEARNED_SPELLINGS

    code, out, err = run(capsys, "translate", "--checkpoint", "tiny-encoder-decoder", "--source", "5th March 2021")
    assert code == 0 and "output: '2021-03-05" in out
    (line,) = err.strip().splitlines()
    assert line.startswith("transformer-explorer translate: warning: the source is outside the spellings")
    assert "the day '5th' is an ordinal" in line and "1900 to 2099" in line
    code, out, err = run(capsys, "translate", "--checkpoint", "tiny-encoder-decoder", "--source", "5 March 1850",
                         "--json")
    data = json.loads(out)
    assert code == 0 and data["learned_spellings"] == list(LEARNED_SPELLINGS)
    assert "the year 1850 is outside 1900 to 2099" in data["spelling_warning"] and err == ""
    code, out, err = run(capsys, "translate", "--checkpoint", "tiny-encoder-decoder", "--source", "March 5, 2021",
                         "--json")
    assert code == 0 and json.loads(out)["spelling_warning"] is None and err == ""
    code, _out, err = run(capsys, "translate", "--checkpoint", "tiny-encoder-decoder", "--source", "March 5, 2021")
    assert code == 0 and err == ""
