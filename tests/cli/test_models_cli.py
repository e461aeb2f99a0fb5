"""`train`, `logits`, `generate`, `evaluate`: outputs, and one-line errors with exit code 2 for bad input."""

from __future__ import annotations

import errno
import json
import os

import numpy as np
import pytest
import torch

from core.checkpoints import resolve_checkpoint
from core.cli import main
from resources import resource_path

CORPUS_CHARS = 6000


@pytest.fixture(scope="module")
def corpus_file(tmp_path_factory):
    path = tmp_path_factory.mktemp("corpus") / "corpus.txt"
    path.write_text(resource_path("tinyshakespeare.txt").read_text(encoding="utf-8")[:CORPUS_CHARS], encoding="utf-8")
    return path


@pytest.fixture(scope="module")
def trained(tmp_path_factory, corpus_file):
    """A three-step tiny-gpt: enough to exercise every command on a checkpoint of our own."""
    out = tmp_path_factory.mktemp("run") / "ckpt"
    threads = torch.get_num_threads()
    code = main(
        ["train", "--preset", "tiny-gpt", "--out", str(out), "--steps", "3", "--batch", "2", "--seq", "32",
         "--seed", "5", "--corpus", str(corpus_file), "--threads", "1"]
    )  # fmt: skip
    assert code == 0
    assert torch.get_num_threads() == threads  # the command restores the caller's thread count
    return out


def _error_line(capsys, argv) -> str:
    try:
        code = main(argv)
    except SystemExit as exit_:  # an option out of its range is refused while parsing
        code = exit_.code
    assert code == 2
    captured = capsys.readouterr()
    lines = captured.err.strip().splitlines()
    assert len(lines) == 1, captured.err
    assert "Traceback" not in captured.err
    return lines[0]


def test_train_writes_a_checkpoint_with_its_record(trained, corpus_file, capsys):
    loaded = resolve_checkpoint(trained)
    record = loaded.metadata
    assert record["settings"]["steps"] == 3 and record["settings"]["seed"] == 5
    assert record["preset"] == "tiny-gpt" and record["corpus"] == "corpus.txt"
    assert record["corpus_characters"] == CORPUS_CHARS
    assert record["val_loss_nats_per_char"] > 0
    assert loaded.tokenizer is not None and loaded.tokenizer.kind == "char"


def test_train_progress_goes_to_stderr(tmp_path, corpus_file, capsys):
    argv = ["train", "--preset", "tiny-llama", "--out", str(tmp_path / "m"), "--steps", "2", "--batch", "1",
            "--seq", "16", "--corpus", str(corpus_file), "--threads", "1"]  # fmt: skip
    assert main(argv) == 0
    captured = capsys.readouterr()
    assert "step 2/2" in captured.err and "tok/s" in captured.err and "ETA" in captured.err
    assert "validation loss" in captured.out


def test_logits_from_text_and_ids_agree(trained, tmp_path, capsys):
    loaded = resolve_checkpoint(trained)
    ids = loaded.tokenizer.encode("ROMEO:")
    assert main(["logits", "--checkpoint", str(trained), "--text", "ROMEO:", "--out", str(tmp_path / "a.npy")]) == 0
    assert (
        main(
            ["logits", "--checkpoint", str(trained), "--ids", ",".join(map(str, ids)), "--out", str(tmp_path / "b.npy")]
        )
        == 0
    )
    from_text, from_ids = np.load(tmp_path / "a.npy"), np.load(tmp_path / "b.npy")
    assert from_text.dtype == np.float32 and from_text.shape == (6, loaded.config.vocab_size)
    np.testing.assert_array_equal(from_text, from_ids)
    with torch.no_grad():
        expected = loaded.model(torch.tensor([ids]))[0].numpy()  # (T, V)
    np.testing.assert_array_equal(from_text, expected)


def test_logits_of_a_bundled_model(tmp_path):
    assert main(["logits", "--checkpoint", "tiny-llama", "--text", "To be", "--out", str(tmp_path / "l.npy")]) == 0
    assert np.load(tmp_path / "l.npy").shape == (5, 65)


def test_generate_is_seeded(trained, capsys):
    argv = ["generate", "--checkpoint", str(trained), "--text", "Citizen", "--max-new", "20", "--seed", "3"]
    assert main(argv) == 0
    first = capsys.readouterr().out
    assert main(argv) == 0
    assert capsys.readouterr().out == first
    assert first.startswith("Citizen") and first.endswith("\n") and len(first) == len("Citizen") + 20 + 1


def test_generate_with_a_bundled_model_greedy(capsys):
    assert (
        main(
            [
                "generate",
                "--checkpoint",
                "tiny-gpt",
                "--text",
                "First Citizen:\n",
                "--max-new",
                "40",
                "--temperature",
                "0",
            ]
        )
        == 0
    )
    text = capsys.readouterr().out
    assert text.startswith("First Citizen:\n") and len(text) > 40


def test_evaluate_prints_nats_per_token(trained, corpus_file, capsys):
    assert main(["evaluate", "--checkpoint", str(trained), "--text-file", str(corpus_file), "--json"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert data["tokens"] == CORPUS_CHARS and 0 < data["loss_nats_per_token"] < 5
    assert main(["evaluate", "--checkpoint", str(trained), "--text-file", str(corpus_file)]) == 0
    assert "nats/token" in capsys.readouterr().out


def test_checkpoint_accepts_hugging_face_folders(tmp_path, capsys):
    transformers = pytest.importorskip("transformers")
    config = transformers.LlamaConfig(
        vocab_size=40, hidden_size=16, intermediate_size=32, num_hidden_layers=1, num_attention_heads=2,
        num_key_value_heads=1, max_position_embeddings=32, bos_token_id=0, eos_token_id=1,
    )  # fmt: skip
    transformers.LlamaForCausalLM(config).save_pretrained(str(tmp_path / "hf"), safe_serialization=True)
    capsys.readouterr()
    assert (
        main(["logits", "--checkpoint", str(tmp_path / "hf"), "--ids", "1,2,3", "--out", str(tmp_path / "l.npy")]) == 0
    )
    assert np.load(tmp_path / "l.npy").shape == (3, 40)
    assert "Hugging Face llama" in capsys.readouterr().out
    assert resolve_checkpoint(tmp_path / "hf").tokenizer is None
    line = _error_line(capsys, ["generate", "--checkpoint", str(tmp_path / "hf"), "--text", "hi"])
    assert "has no tokenizer; pass token ids with --ids" in line


@pytest.mark.parametrize(
    "argv, message",
    [
        (["logits", "--checkpoint", "no-such-model", "--text", "a", "--out", "x.npy"], "neither a bundled model"),
        (
            ["logits", "--checkpoint", "tiny-gpt", "--ids", "1,x", "--out", "x.npy"],
            "argument --ids: expects comma-separated whole numbers",
        ),
        (
            ["logits", "--checkpoint", "tiny-gpt", "--ids", "1,999", "--out", "x.npy"],
            "token id 999 is outside the vocabulary",
        ),
        (["logits", "--checkpoint", "tiny-gpt", "--text", "a", "--out", "x.txt"], "--out must name a .npy file"),
        (
            ["logits", "--checkpoint", "tiny-gpt", "--text", "€", "--out", "x.npy"],
            "is not in the model's 65-character vocabulary",
        ),
        (
            ["logits", "--checkpoint", "tiny-gpt", "--text", "a" * 300, "--out", "x.npy"],
            "exceed the model's context length of 256",
        ),
        (
            ["generate", "--checkpoint", "tiny-gpt", "--text", "a", "--temperature", "-1"],
            "argument --temperature: must be a number from 0 to 100, got '-1'",
        ),
        (["generate", "--checkpoint", "tiny-gpt", "--text", "", "--max-new", "3"], "the text gives no tokens"),
        (["evaluate", "--checkpoint", "tiny-gpt", "--text-file", "/no/such/file.txt"], "{ENOENT}"),
        (["train", "--preset", "no-such-preset", "--out", "x"], "unknown preset 'no-such-preset'"),
        (
            ["train", "--preset", "tiny-gpt", "--out", "x", "--seq", "512", "--steps", "1"],
            "exceeds the model's context length",
        ),
        (["train", "--preset", "tiny-gpt", "--out", "x", "--steps", "0"], "argument --steps: must be a whole number from 1 to 1,000,000, got '0'"),
    ],
)
def test_bad_input_is_one_line_and_exit_2(argv, message, capsys, tmp_path, monkeypatch):
    # The system words its errors in the language of the locale that Qt, once run, has set.
    message = message.replace("{ENOENT}", os.strerror(errno.ENOENT))
    monkeypatch.chdir(tmp_path)
    assert message in _error_line(capsys, argv)


def test_corrupt_checkpoint_folder_is_one_line(trained, tmp_path, capsys):
    broken = tmp_path / "broken"
    broken.mkdir()
    for name in ("config.json", "tokenizer.json"):
        (broken / name).write_bytes((trained / name).read_bytes())
    (broken / "model.safetensors").write_bytes(b"\x00" * 100)
    line = _error_line(capsys, ["generate", "--checkpoint", str(broken), "--text", "a"])
    assert "model.safetensors is not a readable safetensors file" in line


def test_evaluate_rejects_text_outside_the_vocabulary(tmp_path, capsys):
    (tmp_path / "t.txt").write_text("# heading\n", encoding="utf-8")
    assert "'#'" in _error_line(
        capsys, ["evaluate", "--checkpoint", "tiny-gpt", "--text-file", str(tmp_path / "t.txt")]
    )


def test_first_ctrl_c_requests_a_stop_and_the_second_aborts():
    import os
    import signal

    from core.cli.models import _stop_on_first_interrupt

    with _stop_on_first_interrupt() as stop_requested:
        assert not stop_requested()
        os.kill(os.getpid(), signal.SIGINT)
        assert stop_requested()
        with pytest.raises(KeyboardInterrupt):
            os.kill(os.getpid(), signal.SIGINT)
    assert signal.getsignal(signal.SIGINT) is signal.default_int_handler


def test_train_on_repeated_letters_records_the_induction_score(tmp_path, capsys):
    from core.experiments.induction import letter_probe
    from core.repeated_corpus import repeated_letters
    from core.tokenizers import CharTokenizer

    out = tmp_path / "attn"
    argv = ["train", "--preset", "tiny-induction-attn", "--out", str(out), "--steps", "4", "--batch", "2", "--quiet"]
    assert main(argv) == 0
    printed = capsys.readouterr().out
    record = resolve_checkpoint(out).metadata["induction_probe"]
    probe = letter_probe(CharTokenizer.from_text(repeated_letters(seed=0)), 64, 2)
    assert record["what"] == probe.description() and record["text"] == probe.text
    assert [step for step, _ in record["history"]] == [1, 2, 3, 4]  # every step of a run this short
    first, last = record["history"][0][1], record["history"][-1][1]
    assert f"{probe.description()}: {first:.3f} at step 1, {last:.3f} at step 4; never at or above 0.4" in printed


def test_export_refuses_an_attention_only_model_before_writing(tmp_path, capsys):
    from core.model import Transformer
    from core.model_saving import save_model
    from core.presets import get_preset

    folder = save_model(Transformer.from_seed(get_preset("tiny-induction-attn"), seed=0), tmp_path / "attn")
    out = tmp_path / "hf"
    line = _error_line(capsys, ["export", "--checkpoint", str(folder), "--out", str(out), "--quiet"])
    assert "tiny-induction-attn has no Hugging Face equivalent" in line and "an FFN in every block" in line
    assert not out.exists()


@pytest.mark.parametrize("preset", ["tiny-encoder-decoder", "tiny-gpt", "tiny-encoder"])
def test_a_corpus_of_80000_distinct_characters_is_refused_before_training(capsys, tmp_path, preset):
    from core.limits import MAX_CHARACTER_VOCAB

    characters = [chr(c) for c in range(0x4E00, 0x4E00 + 80_000 + 2048) if not 0xD800 <= c <= 0xDFFF][:80_000]
    corpus = tmp_path / "wide.txt"
    corpus.write_text("\n".join("".join(characters[i : i + 8]) + "\t" + "".join(characters[i + 8 : i + 16])
                                for i in range(0, len(characters), 16)) + "\n", encoding="utf-8")
    out = tmp_path / "model"
    line = _error_line(capsys, ["train", "--preset", preset, "--corpus", str(corpus), "--out", str(out), "--quiet"])
    assert "--corpus wide.txt has 80,002 distinct characters" in line, line
    assert f"a character model trains on at most {MAX_CHARACTER_VOCAB:,} tokens" in line
    assert not out.exists()


def test_a_masked_lm_run_prints_both_accuracies_each_named_by_what_it_counts():
    from core.cli.models import quality_lines

    quality = {"loss": 1.7, "accuracy": 0.5064, "unigram_loss": 3.35, "unigram_accuracy": 0.1514, "scored": 16_609,
               "masked_accuracy": 0.4664, "masked": 13_212}
    (line,) = quality_lines(quality, [])
    assert ("46.6% of 13,212 blanked positions filled right; 50.6% of all 16,609 chosen positions (blanked, "
            "randomised and kept as they were)") in line
    older = {key: value for key, value in quality.items() if not key.startswith("masked")}  # a record made before
    (line,) = quality_lines(older, [])
    assert "50.6% of all 16,609 chosen positions (blanked, randomised and kept as they were) predicted right" in line
