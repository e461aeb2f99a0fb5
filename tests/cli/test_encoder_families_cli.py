"""`logits` of encoder-only and encoder-decoder folders, and a Marian model through `download` and `models`."""

from __future__ import annotations

import json

import numpy as np
import pytest
import torch

from tests.cli.helpers import run
from tests.encoder_folders import bert_folder, marian_folder, reference_model
from tests.hf_folders import SAMPLE_TEXT
from tests.hub_server import repo_from_folder, start_hub, stop_hub

pytest.importorskip("transformers")

TOLERANCE = 1e-4
SOURCE, TARGET = [5, 17, 40, 99, 150, 0], [199, 12, 61, 7]


@pytest.fixture(scope="module")
def marian(tmp_path_factory):
    return marian_folder(tmp_path_factory.mktemp("marian") / "opus-mt-tiny")


def _marian_reference(folder) -> np.ndarray:
    with torch.no_grad():
        logits = reference_model(folder, "seq2seq")(input_ids=torch.tensor([SOURCE]),
                                                    decoder_input_ids=torch.tensor([TARGET])).logits[0]  # (T, V)
    return logits.numpy()


def _ids(values) -> str:
    return ",".join(str(v) for v in values)


def test_marian_logits_from_source_and_decoder_ids_match_transformers(capsys, marian, tmp_path):
    out = tmp_path / "logits.npy"
    code, stdout, err = run(capsys, "logits", "--checkpoint", str(marian), "--source-ids", _ids(SOURCE),
                            "--ids", _ids(TARGET), "--out", str(out))
    assert code == 0, err
    assert "logits of shape 4 x 200" in stdout
    np.testing.assert_allclose(np.load(out), _marian_reference(marian), atol=TOLERANCE, rtol=0)


@pytest.mark.parametrize(
    ("extra", "message"),
    [
        (["--ids", "1,2"], "encoder-decoder model: give the encoder's input with --source-ids"),
        (["--source-ids", "1,2", "--text", "Hallo"], "SentencePiece (source.spm, target.spm)"),
        (["--source", "Hello", "--ids", "1,2"], "pass token ids with --ids and --source-ids"),
        (["--source-ids", "1,x", "--ids", "1,2"], "argument --source-ids: expects comma-separated whole numbers"),
        (["--source-ids", "1,999", "--ids", "1,2"], "token id 999 is outside the vocabulary"),
    ],
)
def test_marian_input_mistakes_get_one_line(capsys, marian, tmp_path, extra, message):
    try:
        code, _, err = run(capsys, "logits", "--checkpoint", str(marian), *extra, "--out", str(tmp_path / "x.npy"))
    except SystemExit as exit_:  # argparse refuses a malformed id list while parsing
        code, err = exit_.code, capsys.readouterr().err
    assert code == 2
    assert message in err and len(err.strip().splitlines()) == 1
    assert not (tmp_path / "x.npy").exists()


def test_bert_logits_from_text_match_transformers_and_a_source_is_refused(capsys, tmp_path):
    import transformers

    folder = bert_folder(tmp_path / "bert")
    out = tmp_path / "logits.npy"
    code, _, err = run(capsys, "logits", "--checkpoint", str(folder), "--text", SAMPLE_TEXT, "--out", str(out))
    assert code == 0, err
    ids = transformers.AutoTokenizer.from_pretrained(str(folder))(SAMPLE_TEXT)["input_ids"]
    with torch.no_grad():
        expected = reference_model(folder, "masked")(input_ids=torch.tensor([ids])).logits[0].numpy()  # (T, V)
    np.testing.assert_allclose(np.load(out), expected, atol=TOLERANCE, rtol=0)

    code, _, err = run(capsys, "logits", "--checkpoint", str(folder), "--text", "to be", "--source-ids", "1,2",
                       "--out", str(out))
    assert code == 2 and "encoder input of an encoder-decoder model" in err and "is an encoder-only model" in err
    code, _, err = run(capsys, "generate", "--checkpoint", str(folder), "--text", "to be")
    assert code == 2 and "encoder-only model" in err and len(err.strip().splitlines()) == 1


def test_the_catalogues_opus_mt_downloads_lists_and_opens(capsys, marian, tmp_path, monkeypatch):
    repo = "Helsinki-NLP/opus-mt-en-de"
    server = start_hub([repo_from_folder(repo, marian)])
    try:
        monkeypatch.setenv("HF_ENDPOINT", server.url)
        monkeypatch.setenv("HF_HUB_CACHE", str(tmp_path / "cache"))
        code, listing, err = run(capsys, "models", "--json")
        assert code == 0, err
        before = {entry["name"]: entry for entry in json.loads(listing)["models"]}
        assert before[repo]["where"] == "hub" and before[repo]["family"] == "marian"
        assert before["google-bert/bert-base-uncased"]["family"] == "bert"
        code, out, err = run(capsys, "download", "opus-mt-en-de")
        assert code == 0, err
        assert "--source-ids 1,2,3 --ids 1,2,3" in out
    finally:
        stop_hub(server)
    code, listing, _ = run(capsys, "models", "--json")
    entry = {e["name"]: e for e in json.loads(listing)["models"]}[repo]
    assert entry["where"] == "cache" and entry["problem"] is None
    # transformers counts the fixed sinusoid tables as parameters and final_logits_bias (200) as a buffer
    reference = reference_model(marian, "seq2seq")
    learned = sum(p.numel() for name, p in reference.named_parameters() if "embed_positions" not in name)
    assert entry["parameters"] == learned + reference.final_logits_bias.numel()
    out = tmp_path / "logits.npy"
    code, _, err = run(capsys, "logits", "--checkpoint", entry["path"], "--source-ids", _ids(SOURCE),
                       "--ids", _ids(TARGET), "--out", str(out))
    assert code == 0, err
    np.testing.assert_allclose(np.load(out), _marian_reference(marian), atol=TOLERANCE, rtol=0)
