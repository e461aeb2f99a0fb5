"""`train`, `logits`, `generate` and `evaluate`: trained models from the command line.

`--checkpoint` takes a bundled model name (tiny-gpt, tiny-llama), a checkpoint folder this app
saved, or a local Hugging Face folder of a family core.families.registry lists (safetensors weights).
"""

from __future__ import annotations

import argparse
import contextlib
import hashlib
import math
import os
import platform
import signal
import sys
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import numpy as np
import torch

from core.checkpoints import CheckpointError, LoadedModel, check_destination, resolve_checkpoint
from core.cli import CliError
from core.cli.bounds import MAX_TEXT_FILE_BYTES, bounded_text, real_number, seed, token_ids, whole_number
from core.cli.progress import Progress, ProgressBar, add_quiet_argument
from core.cli.progress import duration as _duration
from core.config import ModelConfig
from core.device import choose_device
from core.hf_import import FOLDER_KEYS
from core.limits import MAX_TEXT_CHARS, character_vocabulary_problem
from core.model_saving import save_model
from core.presets import get_preset
from core.date_corpus import date_pairs
from core.repeated_corpus import repeated_letters
from core.recipes import BUNDLED_CORPORA, BUNDLED_RECIPES, DEFAULT_RECIPE
from core.text_files import decode_text, is_link_loop, link_loop_message
from core.training import (
    TRAIN_MASK_MODES,
    TrainingError,
    TrainSettings,
    check_run,
    evaluate_loss,
    generate,
    objective_of,
    train,
    training_mask_mode,
)
from resources import resource_path

DEFAULT_CORPUS = ("tinyshakespeare.txt",)  # under resources/
REPEATED_LETTERS = "repeated-letters"  # --corpus's name for core.repeated_corpus's text
DATES = "dates"  # --corpus's name for core.date_corpus's pairs
# The bundled models were trained with one thread: bit-identical reruns need the same thread count
# (reductions split differently), and on a shared 2-core machine one thread per run wastes no time
# in barriers. Other runs take as many threads as torch picks.
BUNDLED_THREADS = 1
DEFAULT_TEMPERATURE = 0.8
PROBE_MARK = 0.4  # the induction score the summary line reports the first step of: a head that copies clearly


def register(subparsers: argparse._SubParsersAction) -> None:
    trainer = subparsers.add_parser(
        "train",
        help="train a character-level model on a text corpus and save it as a checkpoint folder",
        description="Train a preset as a character-level model: a decoder predicts the next character, an encoder "
        "fills blanks (masked LM), an encoder-decoder rewrites sources as targets (one source<TAB>target pair a "
        "line), a mixture of experts adds the router's load-balancing loss (AdamW, warm-up then cosine learning rate, "
        "gradient clipping; validation = the last 10% of the corpus). A preset with a recipe "
        f"({', '.join(BUNDLED_RECIPES)}) trains by it unless a flag says otherwise: the steps, batch, window, "
        "learning rate and warm-up, seed, tokenizer, precision, corpus and one thread that trained its bundled model "
        "(core/recipes.py; docs/models.md lists them), so the run reproduces it weight for weight on the same CPU "
        "type and torch version; each flag replaces that one setting. Other presets: "
        + ", ".join(f"{key} {value}" for key, value in DEFAULT_RECIPE.items())
        + ". Ctrl-C stops after the current step and still saves the model.",
    )
    trainer.add_argument("--preset", metavar="NAME", required=True, help="the model shape (see `presets`)")
    trainer.add_argument("--out", metavar="DIR", required=True, help="the checkpoint folder to write")
    trainer.add_argument("--steps", type=whole_number(1, 1_000_000), help="optimizer steps")
    trainer.add_argument("--batch", type=whole_number(1, 4096), help="windows per batch")
    trainer.add_argument("--seq", type=whole_number(2, 1_048_576), help="characters per window (at most the context length)")
    trainer.add_argument("--lr", type=real_number(1e-9, 10.0), help="peak learning rate")
    trainer.add_argument("--seed", type=seed(), help="seed of the weights and of the batch order")
    trainer.add_argument("--device", metavar="D", help="cpu, cuda, cuda:N or mps (default: the best present)")
    trainer.add_argument("--corpus", metavar="FILE", help="a UTF-8 text file (for an encoder-decoder: one source<TAB>target "
                         "pair per line), repeated-letters: random letter sequences each written twice, made from the seed, "
                         "for induction heads (a run on it records the induction score in training.json), or dates: dates "
                         "in words and their ISO form, made from the seed (default: the bundled Shakespeare; tiny-induction "
                         "and tiny-induction-attn: repeated-letters; tiny-encoder-decoder: dates)")
    trainer.add_argument(
        "--tokenizer",
        choices=("char", "bpe"),
        help="char: one token per character (default); bpe: a byte-level BPE learned from the training split",
    )
    trainer.add_argument("--bpe-vocab", type=whole_number(257, 65536), metavar="N", help="tokens of the BPE, 257 to 65536 (default: 1536)")
    trainer.add_argument(
        "--mask",
        choices=TRAIN_MASK_MODES,
        help="the self-attention mask of the training forward (default causal); after-softmax and none are the "
        "reading's leaky pitfalls (the validation loss is still scored causally). off-by-one cannot train: token 0 "
        "attends to nothing (NaN)",
    )
    trainer.add_argument(
        "--threads",
        type=whole_number(1, 1024),
        help=f"CPU threads (default: {BUNDLED_THREADS} for the bundled recipes, else torch's choice)",
    )
    trainer.add_argument("--quiet", action="store_true", help="no progress bar")
    trainer.set_defaults(run=run_train)

    logits = subparsers.add_parser("logits", help="write a model's logits for a text or id sequence as a .npy file")
    _add_checkpoint_argument(logits)
    source = logits.add_mutually_exclusive_group(required=True)
    source.add_argument("--text", type=bounded_text(MAX_TEXT_CHARS), help="text to tokenize with the model's tokenizer")
    source.add_argument("--ids", type=token_ids(), help="comma-separated token ids, e.g. 1,2,3")
    encoder_input = logits.add_mutually_exclusive_group()
    encoder_input.add_argument("--source", type=bounded_text(MAX_TEXT_CHARS),
                               help="an encoder-decoder model's encoder input as text (--text/--ids is the decoder's)")
    encoder_input.add_argument("--source-ids", type=token_ids(),
                               help="an encoder-decoder model's encoder input as comma-separated token ids")
    logits.add_argument("--out", metavar="FILE.npy", required=True, help="where to write the (T, V) float32 array")
    add_quiet_argument(logits)
    logits.set_defaults(run=run_logits)

    generator = subparsers.add_parser("generate", help="continue a text by sampling from a model")
    _add_checkpoint_argument(generator)
    generator.add_argument("--text", type=bounded_text(MAX_TEXT_CHARS), required=True, help="the prompt")
    generator.add_argument("--max-new", type=whole_number(1, 10_000), default=200, metavar="N", help="tokens to add (default: %(default)s)")
    generator.add_argument(
        "--temperature",
        type=real_number(0.0, 100.0),
        help=f"0 = greedy (default: the model's generation_config.json, else {DEFAULT_TEMPERATURE})",
    )
    generator.add_argument(
        "--top-k", type=whole_number(1, 10_000_000), metavar="K", help="sample only among the K most likely tokens (default: generation_config.json)"
    )
    generator.add_argument(
        "--top-p",
        type=_top_p,
        metavar="P",
        help="sample only among the most likely tokens whose probability reaches P, above 0 and at most 1 "
        "(nucleus sampling; default: generation_config.json, else 1 = no cut)",
    )
    generator.add_argument("--seed", type=seed(), default=0, help="sampling seed (default: %(default)s)")
    add_quiet_argument(generator)
    generator.set_defaults(run=run_generate)

    evaluator = subparsers.add_parser(
        "evaluate", help="mean next-token loss of a model on a text file",
        description="Mean next-token loss of a model on a text file, in nats per token and in nats and bits per "
        "character (the characters of every predicted token).")
    _add_checkpoint_argument(evaluator)
    evaluator.add_argument("--text-file", metavar="FILE", required=True, help="a UTF-8 text file")
    evaluator.add_argument("--window", type=whole_number(1, 1_048_576), metavar="N",
                           help="tokens a window (default: the length the model trained at; longer where its "
                           "positions allow, see `extrapolate`)")
    evaluator.add_argument("--json", action="store_true", help="print JSON")
    add_quiet_argument(evaluator)
    evaluator.set_defaults(run=run_evaluate)

    exporter = subparsers.add_parser(
        "export",
        help=f"save a {_export_titles()} family model as a Hugging Face folder that transformers loads",
        description="Write the model as a Hugging Face folder (config.json with model_type, model.safetensors under "
        "Hugging Face names, a real tokenizer.json), loadable with transformers.AutoModelForCausalLM.from_pretrained "
        "and AutoTokenizer; the lab's own record and training record travel with it.",
    )
    _add_checkpoint_argument(exporter)
    exporter.add_argument("--out", metavar="DIR", required=True, help="the folder to write (new, empty, or one this app wrote)")
    add_quiet_argument(exporter)
    exporter.set_defaults(run=run_export)


def _top_p(text: str) -> float:
    """--top-p: a probability above 0 (an empty nucleus samples nothing) and at most 1."""
    try:
        value = real_number(0.0, 1.0)(text)
    except argparse.ArgumentTypeError:
        value = 0.0
    if value == 0:
        shown = repr(text) if len(text) <= 30 else repr(text[:27] + "...")
        raise argparse.ArgumentTypeError(f"must be a number above 0 and at most 1, got {shown}")
    return value


_top_p.__name__ = "number"  # argparse names the type in its own messages
_top_p.bounds = (0.0, 1.0)  # type: ignore[attr-defined]


def _add_checkpoint_argument(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--checkpoint",
        metavar="NAME_OR_DIR",
        required=True,
        help="a bundled model name, a checkpoint folder, or a Hugging Face model folder",
    )
    parser.add_argument("--device", metavar="D", help="cpu, cuda, cuda:N or mps (default: the best present)")


def _device(name: str | None) -> torch.device:
    choice = choose_device(name)
    if choice.message:
        print(choice.message, file=sys.stderr)
    return choice.device


def _read_text(path_text: str) -> str:
    path = Path(path_text)
    if path.is_dir():
        raise CliError(f"{path} is a folder; give a text file")
    if path.exists() and not path.is_file():  # a FIFO would wait for a writer, /dev/zero never ends
        raise CliError(f"{path} is not a regular file; give a text file")
    if path.is_file() and path.stat().st_size > MAX_TEXT_FILE_BYTES:
        raise CliError(f"{path} is {path.stat().st_size:,} bytes, more than the {MAX_TEXT_FILE_BYTES:,} a text file may have")
    try:
        return decode_text(path.read_bytes())
    except UnicodeDecodeError:
        raise CliError(f"{path} is not UTF-8 text") from None


def _load(args: argparse.Namespace) -> LoadedModel:
    return resolve_checkpoint(args.checkpoint, device=_device(args.device))


# ---- train --------------------------------------------------------------------------------------


def run_train(args: argparse.Namespace) -> int:
    config = get_preset(args.preset)
    recipe = dict(BUNDLED_RECIPES.get(args.preset, DEFAULT_RECIPE))
    for option, key in (
        ("steps", "steps"),
        ("batch", "batch_size"),
        ("seq", "seq_len"),
        ("lr", "lr"),
        ("seed", "seed"),
        ("tokenizer", "tokenizer"),
        ("bpe_vocab", "bpe_vocab"),
        ("mask", "mask_mode"),
    ):
        value = getattr(args, option)
        if value is not None:
            recipe[key] = value
    if args.seq is None:  # the generic recipe's window may be longer than a small preset's context
        recipe["seq_len"] = min(int(recipe["seq_len"]), config.context_length)
    threads = args.threads
    if threads is None:
        threads = BUNDLED_THREADS if args.preset in BUNDLED_RECIPES else torch.get_num_threads()
    if threads < 1:
        raise CliError(f"--threads must be at least 1, got {threads}")
    corpus = args.corpus or BUNDLED_CORPORA.get(args.preset)
    if corpus == REPEATED_LETTERS:  # made, not read: the same seed makes the same text
        corpus_path = Path(REPEATED_LETTERS)
        text = repeated_letters(seed=int(recipe["seed"]))
    elif corpus == DATES:
        corpus_path = Path(DATES)
        text = date_pairs(seed=int(recipe["seed"]))
    else:
        corpus_path = Path(corpus) if corpus else resource_path(*DEFAULT_CORPUS)
        text = _read_text(str(corpus_path))
    out = Path(args.out)
    try:
        check_run(config, TrainSettings(**recipe))
    except TrainingError as error:
        raise CliError(str(error)) from None
    if recipe.get("tokenizer", "char") == "char":  # a character vocabulary grows with the corpus: bound it first
        blank = objective_of(config) == "masked-lm"
        problem = character_vocabulary_problem(f"--corpus {corpus_path.name}", len(set(text)), blank)
        if problem:
            raise CliError(problem)
    # Before the first step: a run of minutes must not end in a folder it may not write.
    try:
        check_destination(out, needed_bytes=config_weights_bytes(config))
    except CheckpointError as error:
        raise CliError(f"--out: {error}") from None
    previous_threads = torch.get_num_threads()
    torch.set_num_threads(threads)
    try:
        return _train_and_save(args, config, recipe, corpus_path, text, out)
    finally:
        torch.set_num_threads(previous_threads)


@contextlib.contextmanager
def _stop_on_first_interrupt() -> Iterator[Callable[[], bool]]:
    """The first Ctrl-C ends training after the current step (the model is still saved); a second aborts."""
    requested = threading.Event()
    if threading.current_thread() is not threading.main_thread():  # signal handlers live in the main thread
        yield requested.is_set
        return

    def on_interrupt(signum: int, frame: object) -> None:
        if requested.is_set():
            raise KeyboardInterrupt
        requested.set()
        print("\nstopping after this step (Ctrl-C again to abort without saving)", file=sys.stderr)

    previous = signal.signal(signal.SIGINT, on_interrupt)
    try:
        yield requested.is_set
    finally:
        signal.signal(signal.SIGINT, previous)


def _rescue_folder(preset: str) -> Path:
    """A new folder in the temporary directory for a run whose --out failed at the end."""
    import tempfile

    return Path(tempfile.mkdtemp(prefix=f"{preset}-trained-")) / "model"


def config_weights_bytes(config: ModelConfig) -> int:
    """Bytes of the float32 weights a model of `config` saves (counted on the meta device)."""
    from core.model import Transformer, count_parameters

    return 4 * count_parameters(Transformer.on_meta(config))


def _train_and_save(
    args: argparse.Namespace, config: ModelConfig, recipe: dict, corpus_path: Path, text: str, out: Path
) -> int:
    device = _device(args.device)
    bar = None if args.quiet else ProgressBar(recipe["steps"], sys.stderr)
    if not args.quiet:
        print(
            f"training {args.preset} on {corpus_path.name} ({len(text):,} characters) on {device}: "
            + ", ".join(f"{k} {v}" for k, v in recipe.items()),
            file=sys.stderr,
        )
    probe = _induction_probe(config, recipe, corpus_path, text)
    tracking = {} if probe is None else {
        "probe": lambda step, model: {"induction": probe.score(model)},
        "probe_every": probe.every(int(recipe["steps"])),
    }
    with _stop_on_first_interrupt() as stop_requested:
        try:
            result = train(config, text, device=device, on_progress=bar, should_stop=stop_requested, **recipe,
                           **tracking)
        except TrainingError as error:
            raise CliError(str(error)) from None
        finally:
            if bar is not None:
                bar.close()  # a stopped or failed run leaves the terminal on a fresh line
    if result.stopped:
        print(f"stopped at step {result.steps_done} of {recipe['steps']}; saving what was trained", file=sys.stderr)
    metadata = result.metadata()
    metadata.update(
        preset=args.preset,
        corpus=corpus_path.name,
        corpus_characters=len(text),
        corpus_sha256=hashlib.sha256(text.encode("utf-8")).hexdigest(),
        device=str(device),
        threads=torch.get_num_threads(),
        machine=f"{platform.machine()}, {os.cpu_count()} CPUs",
        parameters=sum(p.numel() for p in result.model.parameters()),
        finished_utc=time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
    )
    history = [(step, figures["induction"]) for step, figures in result.probes]
    if probe is not None:
        metadata["induction_probe"] = probe.record(history)
    try:
        save_model(result.model.cpu(), out, tokenizer=result.tokenizer, metadata=metadata)
    except CheckpointError as error:  # the destination changed during the run (disk filled, unmounted)
        rescue = _rescue_folder(args.preset)
        try:
            save_model(result.model.cpu(), rescue, tokenizer=result.tokenizer, metadata=metadata)
        except CheckpointError:
            raise CliError(f"{error}; the trained model could not be saved anywhere") from None
        raise CliError(f"{error}; the trained model was saved to {rescue} instead") from None
    print(
        f"{args.preset}: {result.steps_done} steps in {_duration(result.wall_time_s)} "
        f"({result.tokens_per_s:,.0f} tok/s); validation loss {result.final_val_loss:.4f} nats/char; saved to {out}"
    )
    for line in quality_lines(result.quality, result.expert_load):
        print(line)
    if probe is not None and history:
        print(_probe_summary(probe.description(), history))
    if result.settings.mask_mode != "causal" and result.loss_history:
        print(f"trained with the {result.settings.mask_mode} mask (recorded in training.json); the validation loss is "
              f"scored with the causal mask, last training loss {result.loss_history[-1][1]:.4f}")
    return 0


def quality_lines(quality: dict, expert_load: list) -> list[str]:
    """The objective's held-out figures and the experts' last load, as the end of a run prints them."""
    lines = []
    if "accuracy" in quality:
        from core.objectives.masked_lm import blanks_filled_text

        lines.append(f"held-out: {blanks_filled_text(quality)} (unigram baseline {quality['unigram_accuracy']:.1%}); "
                     f"loss {quality['loss']:.4f} nats a chosen position (unigram {quality['unigram_loss']:.4f})")
    if "exact_match" in quality:
        lines.append(f"held-out pairs ({quality['pairs']:,}): {quality['exact_match']:.1%} exact match (greedy)")
    if expert_load:
        step, shares = expert_load[-1]
        for layer, layer_shares in enumerate(shares):
            lines.append(f"expert load, layer {layer} (steps to {step:,}): "
                         + " ".join(f"{share:.0%}" for share in layer_shares))
    return lines
def _induction_probe(config: ModelConfig, recipe: dict, corpus_path: Path, text: str):
    """The induction probe of a character-level run on repeated-letters (recorded in training.json), else None."""
    if corpus_path.name != REPEATED_LETTERS or recipe.get("tokenizer", "char") != "char":
        return None
    from core.experiments.induction import letter_probe
    from core.tokenizers import CharTokenizer

    probe = letter_probe(CharTokenizer.from_text(text), config.context_length, config.n_layers)
    return None if isinstance(probe, str) else probe


def _probe_summary(what: str, history: list[tuple[int, float]]) -> str:
    """One line: the score at the first and last probe, and the first step it reached PROBE_MARK."""
    (first_step, first), (last_step, last) = history[0], history[-1]
    reached = next((step for step, value in history if value >= PROBE_MARK), None)
    mark = (f"; first at or above {PROBE_MARK} at step {reached:,}" if reached is not None
            else f"; never at or above {PROBE_MARK}")
    return f"{what}: {first:.3f} at step {first_step:,}, {last:.3f} at step {last_step:,}{mark}"


# ---- logits, generate, evaluate -----------------------------------------------------------------


def _encode(loaded: LoadedModel, text: str) -> list[int]:
    if loaded.tokenizer is None:
        from core.families.registry import FAMILIES

        family = FAMILIES.get(str((loaded.metadata or {}).get("hf_model_type")))
        why = f" ({family.tokenizer_note})" if family is not None and family.tokenizer_note else ""
        ids_options = "--ids and --source-ids" if loaded.config.architecture == "encoder-decoder" else "--ids"
        raise CliError(f"{loaded.source} has no tokenizer{why}; pass token ids with {ids_options}")
    ids = loaded.tokenizer.encode(text)
    if not ids:
        raise CliError("the text gives no tokens; give at least one character")
    return ids


def run_logits(args: argparse.Namespace) -> int:
    out = Path(args.out)
    if out.suffix != ".npy":
        raise CliError(f"--out must name a .npy file, got {out}")
    if out.parent and not out.parent.is_dir():
        raise CliError(link_loop_message(out.parent) if is_link_loop(out.parent)
                       else f"the folder {out.parent} does not exist")
    source_given = args.source is not None or args.source_ids is not None
    with Progress("logits", 3, "stage", quiet=args.quiet) as progress:
        progress.update(0, "loading the model")
        loaded = _load(args)
        two_towers = loaded.config.architecture == "encoder-decoder"
        if two_towers and not source_given:
            raise CliError(f"{loaded.source} is an encoder-decoder model: give the encoder's input with --source-ids "
                           "or --source (and the decoder's with --ids or --text)")
        if source_given and not two_towers:
            raise CliError(f"--source and --source-ids are the encoder input of an encoder-decoder model; "
                           f"{loaded.source} is {_ONE_TOWER[loaded.config.architecture]} model")
        ids = list(args.ids) if args.ids is not None else _encode(loaded, args.text)
        device = next(loaded.model.parameters()).device
        source = None
        if two_towers:
            source_ids = (list(args.source_ids) if args.source_ids is not None
                          else _encode(loaded, args.source))
            source = torch.tensor([source_ids], device=device)  # (1, S)
        progress.update(1, f"forward over {len(ids):,} tokens")
        with torch.no_grad():
            logits = loaded.model(torch.tensor([ids], device=device), source=source)[0]  # (T, V)
        array = logits.float().cpu().numpy().astype(np.float32)  # (T, V)
        progress.update(2, "writing")
        with out.open("wb") as handle:
            np.save(handle, array)
        progress.update(3, "written")
    print(f"wrote {out}: logits of shape {array.shape[0]} x {array.shape[1]} (float32) from {loaded.source}")
    return 0


def generation_settings(loaded: LoadedModel, temperature: float | None, top_k: int | None,
                        top_p: float | None = None) -> tuple[float, int | None, set[int], float | None]:
    """(temperature, top_k, end-of-text ids, top_p): what the user gave, else what generation_config.json says."""
    found = (loaded.metadata or {}).get("generation") or {}
    if temperature is None:
        temperature = 0.0 if found.get("do_sample") is False else float(found.get("temperature", DEFAULT_TEMPERATURE))
    if top_k is None:
        top_k = found.get("top_k") or None  # 0 means "no limit" in transformers
    if top_p is None:
        saved = found.get("top_p")
        valid = isinstance(saved, (int, float)) and not isinstance(saved, bool) and 0 < saved < 1
        top_p = float(saved) if valid else None  # 1 (transformers' default) cuts nothing
    eos = found.get("eos_token_id")
    stops = set(eos) if isinstance(eos, list) else ({eos} if isinstance(eos, int) else set())
    return temperature, top_k, stops, top_p


_ONE_TOWER = {"decoder": "a decoder-only", "encoder": "an encoder-only"}


def _need_next_token_model(loaded: LoadedModel, command: str) -> None:
    if loaded.config.architecture == "encoder":
        raise CliError(f"{loaded.source} is an encoder-only model (it sees the whole text at once), so it has no "
                       f"next-token prediction to {command}; `logits` gives its outputs for every position")
    if loaded.config.architecture == "encoder-decoder":
        # With one text as both inputs, the encoder would read the very tokens the decoder is to predict.
        raise CliError(f"{loaded.source} is an encoder-decoder model: its decoder writes a target for a source its "
                       f"encoder reads whole, rather than continuing one text, so there is no next-token prediction "
                       f"to {command}; `logits` with --source/--source-ids and --text/--ids gives its outputs")


def run_generate(args: argparse.Namespace) -> int:
    loaded = _load(args)
    _need_next_token_model(loaded, "generate from")
    ids = _encode(loaded, args.text)
    temperature, top_k, stops, top_p = generation_settings(loaded, args.temperature, args.top_k, args.top_p)
    not_applied = (loaded.metadata or {}).get("generation_not_applied") or {}
    if not_applied and temperature > 0:
        settings = ", ".join(f"{key} {value!r}" for key, value in not_applied.items())
        print(f"note: the folder's generation_config.json sets {settings}, which this app's sampler does not apply "
              "(it applies temperature, top_k, top_p and the end-of-text ids); transformers would", file=sys.stderr)
    try:
        with Progress("generate", args.max_new, "tok", quiet=args.quiet) as progress:
            tokens = generate(loaded.model, ids, args.max_new, temperature, top_k, args.seed, top_p=top_p,
                              on_token=progress.update)
    except TrainingError as error:
        raise CliError(str(error)) from None
    new = tokens[len(ids) :]
    ends = [position for position, token in enumerate(new) if token in stops]
    if ends:  # the model ended its text: what it sampled after end-of-text is not part of it
        new = new[: ends[0]]
    assert loaded.tokenizer is not None  # _encode refused a model without one
    _note_leaky_training(loaded)
    print(loaded.tokenizer.decode(ids + new))
    return 0


def _note_leaky_training(loaded: LoadedModel) -> None:
    """A model trained with a leaky mask says so (its training.json records the mask) before its output is read."""
    mode = training_mask_mode(loaded.metadata)
    if mode != "causal":
        print(f"note: {loaded.source} was trained with the {mode} mask (training.json); it runs here with the causal "
              "mask, as generation must", file=sys.stderr)


def _export_titles() -> str:
    from core.families.registry import FAMILIES

    titles = [family.title for family in FAMILIES.values() if family.exports]
    return ", ".join(titles[:-1]) + f" or {titles[-1]}" if len(titles) > 1 else titles[0]


def run_export(args: argparse.Namespace) -> int:
    from core.checkpoints import check_destination
    from core.families.registry import export_family
    from core.hf_export import save_hf_folder

    check_destination(args.out)  # before loading: a refused folder fails at once
    with Progress("export", 2, "stage", quiet=args.quiet) as progress:
        progress.update(0, "loading the model")
        loaded = _load(args)
        family = export_family(loaded.config)
        metadata = loaded.metadata or {}
        record = {k: v for k, v in metadata.items() if k not in FOLDER_KEYS}
        # The folder's generation_config.json travels with it whole, keys this app does not apply included.
        generation = metadata.get("generation_config") or metadata.get("generation") or None
        progress.update(1, f"writing a {family.model_type} folder")
        folder = save_hf_folder(loaded.model.cpu(), args.out, tokenizer=loaded.tokenizer, metadata=record or None,
                                generation=generation)
        progress.update(2, "written")
    print(f"wrote {folder}: a Hugging Face {family.model_type} folder of {loaded.source} "
          f"(transformers.{family.auto_class}.from_pretrained loads it)")
    return 0


def run_evaluate(args: argparse.Namespace) -> int:
    text = _read_text(args.text_file)  # before loading, so a wrong path fails at once
    loaded = _load(args)
    _need_next_token_model(loaded, "score")
    ids = _encode(loaded, text)
    if len(ids) < 2:
        raise CliError("the text file needs at least two tokens to score a next-token prediction")
    with Progress("evaluate", len(ids) - 1, "tok", quiet=args.quiet) as progress:
        try:
            loss = evaluate_loss(loaded.model, ids, window=args.window,
                                 on_progress=lambda done, total: progress.update(done))
        except TrainingError as error:
            raise CliError(str(error)) from None
    predictions = len(ids) - 1
    characters = predicted_characters(loaded, ids)
    per_char = loss * predictions / characters if characters else float("nan")
    if args.json:
        from core.cli.common import print_json

        print_json({"checkpoint": loaded.source, "tokens": len(ids), "loss_nats_per_token": loss,
                    "characters_predicted": characters, "loss_nats_per_character": per_char,
                    "loss_bits_per_character": per_char / math.log(2),
                    "trained_mask_mode": training_mask_mode(loaded.metadata)})
    else:
        _note_leaky_training(loaded)
        print(f"{loaded.source}: mean next-token loss {loss:.4f} nats/token over {predictions:,} predictions; "
              f"{per_char:.4f} nats/char, {per_char / math.log(2):.4f} bits/char over {characters:,} characters")
    return 0


def predicted_characters(loaded: LoadedModel, ids: list[int]) -> int:
    """Characters of the text the predictions cover: all but those of the first token, which nothing predicts."""
    assert loaded.tokenizer is not None  # _encode refused a model without one
    return len(loaded.tokenizer.decode(ids[1:]))
