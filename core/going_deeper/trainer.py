"""Train the going-deeper models by their recipe: the ladder's rungs over several seeds, and the context models.

The ladder writes its record (ladder.json, the shape `ladder --json` prints) after every run, whole, so a long
rerun stopped part-way keeps what it finished. Each rung's bundled seed is saved as a checkpoint folder in the
format of every bundled model, its training.json holding the recipe and its figure; so is each context model.
"""

from __future__ import annotations

import hashlib
import os
import platform
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import torch

from core.checkpoints import save_checkpoint
from core.config import ModelConfig
from core.going_deeper import recipe as R
from core.going_deeper.ladder import LADDER_FILE, summarise, write_record
from core.model import Transformer, count_parameters
from core.tokenizers import CharTokenizer
from core.training import TrainResult, evaluate_loss, train

Report = Callable[[str], None]  # one line of progress


def corpus_text() -> str:
    from core.corpus import bundled_corpus

    return bundled_corpus().text


def _machine_record(text: str) -> dict[str, Any]:
    return {
        "corpus": R.CORPUS,
        "corpus_characters": len(text),
        "corpus_sha256": hashlib.sha256(text.encode("utf-8")).hexdigest(),
        "threads": R.THREADS,  # every run here trains on one thread (train_one), whatever the process has
        "machine": f"{platform.machine()}, {os.cpu_count()} CPUs",
        "torch_version": torch.__version__,
    }


def load_average() -> list[float] | None:
    try:
        return [round(value, 2) for value in os.getloadavg()]
    except (AttributeError, OSError):  # not every platform has one
        return None


def held_out_loss(model: Transformer, tokenizer: CharTokenizer, held_out: str) -> float:
    """Nats per character over the held-out text, as `evaluate --text-file` scores it (windows of the context)."""
    return evaluate_loss(model, tokenizer.encode(held_out))


def train_one(config: ModelConfig, text: str, seed: int, settings: dict[str, Any] | None = None,
              start_from: tuple[Transformer, CharTokenizer] | None = None,
              should_stop: Callable[[], bool] | None = None,
              on_step: Callable[[int, float], None] | None = None) -> TrainResult:
    """One run of the recipe (or of `settings`) with one thread; result.final_val_loss is its held-out figure."""
    previous = torch.get_num_threads()
    torch.set_num_threads(R.THREADS)
    try:
        return train(config, text, seed=seed, device="cpu", should_stop=should_stop,
                     on_progress=(lambda step, loss, *_: on_step(step, loss)) if on_step else None,
                     start_from=start_from, **(settings or R.RECIPE))
    finally:
        torch.set_num_threads(previous)


def _record(result: TrainResult, text: str, extra: dict[str, Any]) -> dict[str, Any]:
    record = result.metadata()
    record.update(_machine_record(text), parameters=count_parameters(result.model),
                  finished_utc=time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()), load_average=load_average(), **extra)
    return record


def train_ladder(out: Path, seeds: Sequence[int] = R.LADDER_SEEDS, rung_names: Sequence[str] | None = None,
                 steps: int | None = None, text: str | None = None, report: Report | None = None,
                 should_stop: Callable[[], bool] | None = None) -> dict[str, Any]:
    """Train every rung (or those named) with every seed; save each rung's bundled seed under `out` and write
    out/ladder.json after every run. Returns the record."""
    text = corpus_text() if text is None else text
    settings = dict(R.RECIPE) if steps is None else {**R.RECIPE, "steps": steps}
    chosen = [(rung, config) for rung, config in R.rung_configs() if rung_names is None or rung.name in rung_names]
    bundled_seed = R.BUNDLED_SEED if R.BUNDLED_SEED in seeds else seeds[0]
    record: dict[str, Any] = {"recipe": settings, "seeds": list(seeds), "bundled_seed": bundled_seed,
                              **_machine_record(text), "held_out": "the last 10% of the corpus", "rungs": []}
    out.mkdir(parents=True, exist_ok=True)
    started = time.perf_counter()
    total_runs = len(chosen) * len(seeds)
    for rung, config in chosen:
        entry: dict[str, Any] = {"name": rung.name, "change": rung.change, "fields": rung.fields, "model": rung.model,
                                 "parameters": count_parameters(Transformer.on_meta(config)), "seeds": []}
        record["rungs"].append(entry)
        for seed in seeds:
            run_index = len(record["rungs"]) * len(seeds) - len(seeds) + len(entry["seeds"]) + 1
            if report:
                report(f"run {run_index}/{total_runs}: rung {rung.name}, seed {seed}")
            run_started = time.perf_counter()
            result = train_one(config, text, seed, settings, should_stop=should_stop)
            seconds = time.perf_counter() - run_started
            if result.stopped:
                raise InterruptedError(f"stopped during rung {rung.name}, seed {seed}")
            entry["seeds"].append({"seed": seed, "nats_per_char": result.final_val_loss, "seconds": round(seconds, 1),
                                   "load_average": load_average()})
            if seed == bundled_seed:
                save_checkpoint(result.model, out / rung.model, tokenizer=result.tokenizer,
                                metadata=_record(result, text, {"rung": rung.name, "change": rung.change,
                                                                "seconds": round(seconds, 1)}))
            if report:
                report(f"  {result.final_val_loss:.4f} nats/char in {seconds:.0f} s")
            record["seconds"] = round(time.perf_counter() - started, 1)
            write_record(out / LADDER_FILE, summarise(record))
    return summarise(record)


def train_context_models(out: Path, text: str | None = None, steps: int | None = None,
                         report: Report | None = None, should_stop: Callable[[], bool] | None = None) -> list[Path]:
    """ctx-learned ... ctx-none at the recipe's length, then ctx-rope-pi fine-tuned from ctx-rope at PI_LENGTH."""
    text = corpus_text() if text is None else text
    settings = dict(R.RECIPE) if steps is None else {**R.RECIPE, "steps": steps}
    folders = []
    rope: TrainResult | None = None
    for config in R.context_configs():
        if report:
            report(f"training {config.name}")
        run_started = time.perf_counter()
        result = train_one(config, text, R.CONTEXT_SEED, settings, should_stop=should_stop)
        seconds = round(time.perf_counter() - run_started, 1)
        if result.stopped:
            raise InterruptedError(f"stopped during {config.name}")
        folders.append(save_checkpoint(result.model, out / config.name, tokenizer=result.tokenizer,
                                       metadata=_record(result, text, {"trained_length": R.TRAINED_LENGTH,
                                                                       "seconds": seconds})))
        if report:
            report(f"  {config.name}: {result.final_val_loss:.4f} nats/char in {seconds:.0f} s")
        if config.positional == "rope":
            rope = result
    assert rope is not None
    pi_config = R.interpolation_config(rope.config)
    start = Transformer(pi_config)
    start.load_state_dict(rope.model.state_dict())  # the same weights: only the positions' scale and the length move
    fine = dict(R.PI_FINE_TUNE) if steps is None else {**R.PI_FINE_TUNE, "steps": max(1, steps // 4)}
    if report:
        report(f"fine-tuning {pi_config.name}: rope_scale {R.PI_SCALE:g}, {fine['steps']} steps at {fine['seq_len']}")
    run_started = time.perf_counter()
    result = train_one(pi_config, text, R.CONTEXT_SEED, fine, start_from=(start, rope.tokenizer),
                       should_stop=should_stop)
    seconds = round(time.perf_counter() - run_started, 1)
    if result.stopped:
        raise InterruptedError(f"stopped during {pi_config.name}")
    extra = {"trained_length": R.PI_LENGTH, "pretrained": {"model": rope.config.name, "steps": rope.steps_done,
                                                           "seq_len": R.TRAINED_LENGTH,
                                                           "val_loss_nats_per_char": rope.final_val_loss},
             "fine_tune_steps": result.steps_done, "seconds": seconds}
    folders.append(save_checkpoint(result.model, out / pi_config.name, tokenizer=result.tokenizer,
                                   metadata=_record(result, text, extra)))
    if report:
        report(f"  {pi_config.name}: {result.final_val_loss:.4f} nats/char in {seconds:.0f} s")
    return folders


__all__ = ["held_out_loss", "load_average", "train_context_models", "train_ladder", "train_one"]
