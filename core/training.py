"""A small, seeded trainer for character-level (or byte-level BPE) models, plus loss evaluation and sampling.

Pure torch: no Qt, no threads of its own. The GUI runs `train` in a worker and watches it through
`on_progress`; the CLI prints the same callback as a progress bar.

Reproducibility: the weights come from `Transformer.from_seed(config, seed)` and the batch offsets
from a generator seeded with the same seed, so one seed on one device and thread count gives the
same run step for step. The validation split is the last 10% of the corpus and is never trained on.

mask_mode trains with one of the reading's mask pitfalls instead of the causal mask (after-softmax
leaks the future through the softmax denominator, none leaks it outright). Every validation loss is
still scored with the causal mask: it is what the model predicts when the next token is not there to
see, the loss a generation meets. grad_norm_every records each block's parameter-gradient norm (before
clipping) every N steps; a long run thins the record to at most MAX_GRAD_NORM_RECORDS entries.

With tokenizer="bpe" a byte-level BPE of bpe_vocab tokens is first learned from the training split
(the same characters a character model trains on), and the validation loss is still reported per
character: the nats of every predicted token, summed, over the characters those tokens spell.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass, field, replace
from typing import Any

import torch
import torch.nn.functional as F

from core.choices import MASK_MODES, TRAIN_MASK_MODES
from core.config import ModelConfig
from core.device import choose_device
from core.model import Transformer
from core.hooks import capture
from core.limits import character_vocabulary_problem
from core.objectives.batch import Batch, scored_loss
from core.objectives.load_balance import expert_load, load_balancing_loss
from core.objectives.run import CHECK_PAIRS, CHECK_WINDOWS, FinalScore, ObjectiveError, ObjectiveRun
# The recipes live in core.recipes; their tables are named here too, for the callers that train.
from core.recipes import BPE_VOCAB, BUNDLED_CORPORA, BUNDLED_RECIPES, DEFAULT_RECIPE, MIN_LR_RATIO, WARMUP_STEPS
from core.tokenizers import CharTokenizer, Tokenizer, train_byte_level_bpe

VALIDATION_FRACTION = 0.1  # the last tenth of the corpus is held out
CHECK_PREDICTIONS = 16384  # the validation split's first predictions, re-scored in a second by the tests

# What each objective's check_loss re-scores: the held-out split's first predictions, windows or pairs.
CHECK_SIZES = {"next-token": ("predictions", CHECK_PREDICTIONS), "masked-lm": ("windows", CHECK_WINDOWS),
               "seq2seq": ("pairs", CHECK_PAIRS)}
VAL_LOSS_METHODS = {
    "next-token": "mean next-character loss over the whole validation split (last 10% of the corpus), "
                  "non-overlapping windows of the context length",
    "masked-lm": "mean loss per chosen character over the held-out tenth of the corpus, cut into windows of the "
                 "run's length and masked by the BERT recipe from a fixed seed (core.objectives.masked_lm)",
    "seq2seq": "mean teacher-forced loss per target character (the end token included) over the held-out tenth "
               "of the pairs (core.objectives.seq2seq)",
}

MAX_GRAD_NORM_RECORDS = 512  # per-block gradient norms kept per run; beyond it every other record is dropped

ProgressCallback = Callable[[int, float, float, float, "float | None"], None]
SampleCallback = Callable[[int, str], None]
GradNormCallback = Callable[[int, tuple[float, ...]], None]  # (step, one norm per block)
ProbeCallback = Callable[[int, Transformer], "dict[str, float]"]  # (step, model in eval mode) -> named figures


class TrainingError(ValueError):
    """Settings or a corpus that cannot make a training run (too short, non-positive sizes, ...)."""


@dataclass(frozen=True)
class TrainSettings:
    """Everything that shapes a run besides the model config and the corpus; stored with the checkpoint."""

    steps: int = 3000
    batch_size: int = 32
    seq_len: int = 256
    lr: float = 3e-3  # peak learning rate, reached at the end of the warm-up
    seed: int = 0
    warmup_steps: int = WARMUP_STEPS
    min_lr_ratio: float = MIN_LR_RATIO  # the cosine decays to this fraction of the peak
    weight_decay: float = 0.1  # on matrices and embeddings only; norms and biases are not decayed
    betas: tuple[float, float] = (0.9, 0.99)
    grad_clip: float = 1.0  # maximum global gradient norm
    eval_every: int = 250  # steps between validation estimates during the run (0: only at the end)
    eval_windows: int = 16  # windows of the validation split used for the estimates during the run
    bf16_autocast: bool = False  # forward matmuls in bfloat16 (weights, optimizer and evaluation stay float32)
    tokenizer: str = "char"  # "char": one token per character; "bpe": a byte-level BPE learned from the training split
    bpe_vocab: int = BPE_VOCAB  # tokens of the BPE (256 bytes + merges); unused for "char"
    mask_mode: str = "causal"  # the self-attention mask of the training forward (TRAIN_MASK_MODES)
    grad_norm_every: int = 0  # steps between per-block gradient-norm records (0: none)
    balance_coef: float = 0.01  # mixture of experts: weight of the router's load-balancing loss (Switch's 0.01)

    def validated(self) -> TrainSettings:
        for name in ("steps", "batch_size", "seq_len"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int) or value < 1:
                raise TrainingError(f"{name} must be a positive whole number, got {value!r}")
        if not (isinstance(self.lr, (int, float)) and math.isfinite(self.lr) and self.lr > 0):
            raise TrainingError(f"the learning rate must be a positive number, got {self.lr!r}")
        if self.warmup_steps < 0 or self.eval_every < 0 or self.eval_windows < 1:
            raise TrainingError("warmup_steps and eval_every must be >= 0 and eval_windows >= 1")
        if self.tokenizer not in ("char", "bpe"):
            raise TrainingError(f"the tokenizer must be 'char' or 'bpe', got {self.tokenizer!r}")
        if self.tokenizer == "bpe" and not 256 < self.bpe_vocab <= 65536:
            raise TrainingError(f"bpe_vocab must lie between 257 and 65,536, got {self.bpe_vocab}")
        if not 0 <= self.min_lr_ratio <= 1:
            raise TrainingError(f"min_lr_ratio must lie between 0 and 1, got {self.min_lr_ratio}")
        if self.grad_clip <= 0:
            raise TrainingError(f"grad_clip must be positive, got {self.grad_clip}")
        if self.mask_mode not in TRAIN_MASK_MODES:
            why = " (it hides token 0 from every key: its attention is 0/0, NaN)" if self.mask_mode == "off-by-one" else ""
            raise TrainingError(f"a run trains with the mask {', '.join(TRAIN_MASK_MODES)}, not {self.mask_mode!r}{why}")
        if not (isinstance(self.balance_coef, (int, float)) and math.isfinite(self.balance_coef)
                and 0 <= self.balance_coef <= 10):
            raise TrainingError(f"balance_coef must lie between 0 and 10, got {self.balance_coef!r}")
        if isinstance(self.grad_norm_every, bool) or not isinstance(self.grad_norm_every, int) or self.grad_norm_every < 0:
            raise TrainingError(f"grad_norm_every must be a whole number >= 0, got {self.grad_norm_every!r}")
        return self

    def to_dict(self) -> dict[str, Any]:
        data = asdict(self)
        data["betas"] = list(self.betas)
        return data


@dataclass
class TrainResult:
    model: Transformer
    tokenizer: Tokenizer
    config: ModelConfig
    settings: TrainSettings
    loss_history: list[tuple[int, float]] = field(default_factory=list)  # (step, training loss of that batch)
    val_history: list[tuple[int, float]] = field(default_factory=list)  # (step, estimate on eval_windows windows)
    # (step, one parameter-gradient norm per block, before clipping), every grad_norm_every steps (thinned)
    grad_norms: list[tuple[int, tuple[float, ...]]] = field(default_factory=list)
    probes: list[tuple[int, dict[str, float]]] = field(default_factory=list)  # (step, what `probe` returned)
    final_val_loss: float = float("nan")  # nats/char over the WHOLE validation split (see evaluate_loss)
    check_loss: float = float("nan")  # nats/token over the first CHECK_PREDICTIONS predictions of that split
    val_loss_per_token: float = float("nan")  # nats/token over the whole split (= per char for "char")
    val_characters_per_token: float = 1.0  # characters the predicted validation tokens spell, per token
    steps_done: int = 0
    wall_time_s: float = 0.0
    tokens_per_s: float = 0.0
    stopped: bool = False  # should_stop ended the run early
    start: str = "fresh"  # "fresh": seeded random weights; "fine-tune": a copy of a loaded model
    objective: str = "next-token"  # what the run minimised (objective_of)
    quality: dict[str, Any] = field(default_factory=dict)  # the objective's held-out figures (masked-lm, seq2seq)
    # mixture of experts: (step, per layer the share of routing assignments each expert received since the last record)
    expert_load: list[tuple[int, list[list[float]]]] = field(default_factory=list)

    def metadata(self) -> dict[str, Any]:
        """A JSON-ready record of how the model was made and how well it does."""
        return {
            "settings": self.settings.to_dict(),
            "start": self.start,
            "steps_done": self.steps_done,
            "stopped_early": self.stopped,
            "wall_time_s": round(self.wall_time_s, 1),
            "tokens_per_s": round(self.tokens_per_s),
            "final_train_loss": self.loss_history[-1][1] if self.loss_history else None,
            "val_loss_nats_per_char": self.final_val_loss,
            "objective": self.objective,
            "val_loss_method": VAL_LOSS_METHODS[self.objective]
            + ("" if self.settings.tokenizer == "char" else "; for BPE the nats of all predicted tokens over the "
               "characters they spell"),
            **({"quality": self.quality} if self.quality else {}),
            **({"expert_load": [[step, shares] for step, shares in self.expert_load]} if self.expert_load else {}),
            "val_history": [[step, loss] for step, loss in self.val_history],
            **({"val_loss_mask": "causal"} if self.objective == "next-token" else {}),  # whatever mask_mode trained it
            "check_loss": {CHECK_SIZES[self.objective][0]: CHECK_SIZES[self.objective][1], "loss": self.check_loss},
            **({} if self.settings.tokenizer == "char" else {
                "val_loss_nats_per_token": self.val_loss_per_token,
                "val_characters_per_token": self.val_characters_per_token,
            }),
            "torch_version": torch.__version__,
        }


def split_corpus(ids: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """(train, validation): validation is the last VALIDATION_FRACTION of the token ids."""
    split = int(len(ids) * (1 - VALIDATION_FRACTION))
    return ids[:split], ids[split:]


def learning_rate(step: int, settings: TrainSettings) -> float:
    """Linear warm-up to the peak, then a cosine down to min_lr_ratio * peak at the last step."""
    peak = settings.lr
    if step < settings.warmup_steps:
        return peak * (step + 1) / settings.warmup_steps
    decay_steps = max(1, settings.steps - settings.warmup_steps)
    progress = min(1.0, (step - settings.warmup_steps) / decay_steps)
    floor = peak * settings.min_lr_ratio
    return floor + 0.5 * (peak - floor) * (1 + math.cos(math.pi * progress))


def random_windows(
    ids: torch.Tensor, batch_size: int, seq_len: int, generator: torch.Generator
) -> tuple[torch.Tensor, torch.Tensor]:
    """Inputs and next-token targets of batch_size random windows of the 1-D id tensor."""
    starts = torch.randint(0, len(ids) - seq_len, (batch_size,), generator=generator)  # (B,)
    offsets = starts.unsqueeze(1) + torch.arange(seq_len + 1)  # (B, T+1)
    windows = ids[offsets]  # (B, T+1)
    return windows[:, :-1], windows[:, 1:]  # (B, T) each


def _optimizer(model: Transformer, settings: TrainSettings) -> torch.optim.AdamW:
    # Decaying norm gains and biases toward zero fights their job, so only matrices and tables decay.
    decayed = [p for p in model.parameters() if p.dim() >= 2]
    kept = [p for p in model.parameters() if p.dim() < 2]
    groups = [
        {"params": decayed, "weight_decay": settings.weight_decay},
        {"params": kept, "weight_decay": 0.0},
    ]
    return torch.optim.AdamW(groups, lr=settings.lr, betas=settings.betas)


def check_run(config: ModelConfig, settings: TrainSettings) -> None:
    """Raise TrainingError for settings or a model the trainer cannot use, before any work starts."""
    settings.validated()
    objective = objective_of(config)
    if objective != "next-token" and settings.mask_mode != "causal":
        raise TrainingError(f"the mask pitfalls train decoders; a {config.architecture} trains with its own masks")
    if objective != "next-token" and settings.tokenizer != "char":
        raise TrainingError(f"a {objective} run learns a character vocabulary; the BPE is for next-token models")
    if settings.seq_len > config.context_length:
        raise TrainingError(f"seq_len {settings.seq_len} exceeds the model's context length {config.context_length}")


def objective_of(config: ModelConfig) -> str:
    """What a run of this architecture minimises: a decoder predicts the next token, an encoder fills
    blanks (masked-lm), an encoder-decoder writes a target for a source (seq2seq)."""
    if config.architecture == "encoder":
        return "masked-lm"
    if config.architecture == "encoder-decoder":
        return "seq2seq"
    if not config.self_attention_causal:
        raise TrainingError("a decoder without its causal mask sees the token it predicts; set attention to causal")
    return "next-token"


def train(
    config: ModelConfig,
    text: str,
    steps: int = 3000,
    batch_size: int = 32,
    seq_len: int = 256,
    lr: float = 3e-3,
    seed: int = 0,
    device: str | torch.device | None = "cpu",
    on_progress: ProgressCallback | None = None,
    should_stop: Callable[[], bool] | None = None,
    sample_every: int = 0,
    on_sample: SampleCallback | None = None,
    on_grad_norms: GradNormCallback | None = None,
    start_from: tuple[Transformer, Tokenizer] | None = None,
    on_expert_load: Callable[[int, list[list[float]]], None] | None = None,
    probe: ProbeCallback | None = None,
    probe_every: int = 0,
    **options: Any,
) -> TrainResult:
    """Train a model of `config` on `text` and return it with its history.

    on_progress(step, loss, tokens_per_s, eta_s, val_loss) is called after every step (step counts
    from 1); val_loss is an estimate on `eval_windows` validation windows every `eval_every`
    steps and None otherwise. should_stop() is polled before every step. Every `sample_every`
    steps on_sample(step, text) receives a 200-character sample (temperature 0.8) from the corpus's
    first character. on_grad_norms(step, norms) receives each grad_norm_every-th step's per-block
    gradient norms. `options` sets the other TrainSettings fields (warmup_steps, weight_decay,
    grad_clip, bf16_autocast, mask_mode, grad_norm_every, ...).

    probe(step, model) runs after the optimizer step of step 1 and of every probe_every-th step, with
    the model in eval mode and no gradients; what it returns goes to result.probes.

    start_from=(model, tokenizer) fine-tunes a copy of that model with its own tokenizer instead of
    starting from seeded random weights; the corpus must be written in the tokenizer's vocabulary. The
    seed then orders the batches only.

    The objective follows the architecture (objective_of): an encoder trains as a masked LM on the text, an
    encoder-decoder on its tab-separated pairs. A mixture of experts adds balance_coef times the router's
    load-balancing loss; the reported losses are the objective's alone, and on_expert_load(step, shares)
    receives at each validation estimate every layer's share of routing assignments per expert since the last.
    """
    settings = TrainSettings(steps=steps, batch_size=batch_size, seq_len=seq_len, lr=lr, seed=seed, **options)
    check_run(config, settings)
    objective = objective_of(config)
    if objective == "next-token":
        data: _NextToken | ObjectiveRun = _NextToken(text, settings, start_from)
        settings = data.settings
    else:
        try:
            data = ObjectiveRun.for_text(objective, text, start_from[1] if start_from else None)
        except ObjectiveError as error:
            raise TrainingError(str(error)) from None
        problem = data.check(settings.seq_len if objective == "masked-lm" else config.context_length)
        if problem:
            raise TrainingError(problem)
    tokenizer = data.tokenizer
    if start_from is not None and start_from[0].config != config:
        raise TrainingError("fine-tuning continues the loaded model: its config must be the run's config")
    if tokenizer.vocab_size != config.vocab_size:
        config = config.replace(vocab_size=tokenizer.vocab_size)

    target = choose_device(device).device if not isinstance(device, torch.device) else device
    model = Transformer.from_seed(config, seed=settings.seed, device=target).train()
    if start_from is not None:
        model.load_state_dict(start_from[0].state_dict())  # a copy: the loaded model stays as it was
    optimizer = _optimizer(model, settings)
    generator = torch.Generator().manual_seed(settings.seed)
    mask_mode = settings.mask_mode if objective == "next-token" else None  # the others keep their own masks
    routers = ["blocks.*.ffn.hook_router_logits"] if config.is_moe else []

    result = TrainResult(model=model, tokenizer=tokenizer, config=config, settings=settings,
                         start="fresh" if start_from is None else "fine-tune", objective=objective)
    tokens_per_step = settings.batch_size * settings.seq_len
    started = time.perf_counter()
    train_time = 0.0  # excludes evaluation and sampling, so tokens/s measures the training itself
    norm_stride = settings.grad_norm_every  # doubles each time the record is thinned
    load_counts = torch.zeros(config.n_layers, max(config.n_experts, 1))  # (L, E) assignments since the last record
    for step in range(settings.steps):
        if should_stop is not None and should_stop():
            result.stopped = True
            break
        step_started = time.perf_counter()
        for group in optimizer.param_groups:
            group["lr"] = learning_rate(step, settings)
        batch = data.batch(settings.batch_size, settings.seq_len, generator).to(target)
        with torch.autocast(target.type, dtype=torch.bfloat16, enabled=settings.bf16_autocast):
            with capture(model, routers, keep_graph=True) as seen:
                logits = model(batch.tokens, source=batch.source, mask_mode=mask_mode)  # (B, T, V)
        loss = scored_loss(logits, batch.labels)  # scalar
        total = loss
        if routers:
            router_logits = [seen[name].flatten(0, 1) for name in sorted(seen, key=_layer_of)]  # L x (B*T, E)
            total = loss + settings.balance_coef * load_balancing_loss(router_logits, config.top_k)
            load_counts += expert_load([r.detach() for r in router_logits], config.top_k).assignments.cpu()
        optimizer.zero_grad(set_to_none=True)
        total.backward()
        done = step + 1
        block_norms = None
        if norm_stride and (step == 0 or done % norm_stride == 0):
            block_norms = block_gradient_norms(model)  # before clipping: the gradients the loss really gave
        torch.nn.utils.clip_grad_norm_(model.parameters(), settings.grad_clip)
        optimizer.step()
        loss_value = float(loss.detach())
        train_time += time.perf_counter() - step_started

        if block_norms is not None:
            norm_stride = _record_grad_norms(result.grad_norms, done, block_norms, norm_stride)
            if on_grad_norms is not None:
                on_grad_norms(done, block_norms)
        result.loss_history.append((done, loss_value))
        result.steps_done = done
        val_estimate = None
        if settings.eval_every and done % settings.eval_every == 0 and done < settings.steps:
            val_estimate = data.estimate(model, settings)
            result.val_history.append((done, val_estimate))
            if routers:
                shares = _shares(load_counts)
                result.expert_load.append((done, shares))
                load_counts.zero_()
                if on_expert_load is not None:
                    on_expert_load(done, shares)
        if sample_every and on_sample is not None and done % sample_every == 0:
            on_sample(done, data.sample(model, settings))
            model.train()
        if probe is not None and probe_every > 0 and (done == 1 or done % probe_every == 0):
            model.eval()
            with torch.no_grad():
                result.probes.append((done, probe(done, model)))
            model.train()
        tokens_per_s = done * tokens_per_step / max(train_time, 1e-9)
        if on_progress is not None:
            elapsed = time.perf_counter() - started
            eta = elapsed / done * (settings.steps - done)
            on_progress(done, loss_value, tokens_per_s, eta, val_estimate)

    result.wall_time_s = time.perf_counter() - started
    result.tokens_per_s = result.steps_done * tokens_per_step / max(train_time, 1e-9)
    model.eval()
    if routers and load_counts.sum() > 0:
        result.expert_load.append((result.steps_done, _shares(load_counts)))
    final = data.finish(model, settings)
    result.final_val_loss, result.val_loss_per_token, result.check_loss = final.loss, final.loss_per_token, final.check_loss
    result.val_characters_per_token, result.quality = final.characters_per_token, final.quality
    result.val_history.append((result.steps_done, result.final_val_loss))
    return result


def _layer_of(hook_name: str) -> int:
    return int(hook_name.split(".")[1])  # blocks.{layer}.ffn.hook_router_logits


def _shares(counts: torch.Tensor) -> list[list[float]]:
    """Per layer, each expert's share of the routing assignments counted (the shares of a layer sum to 1)."""
    return (counts / counts.sum(dim=1, keepdim=True).clamp(min=1)).tolist()


class _NextToken:
    """A next-token run's vocabulary, splits, batches and evaluation (character or BPE, fresh or fine-tuned)."""

    def __init__(self, text: str, settings: TrainSettings, start_from: tuple[Transformer, Tokenizer] | None) -> None:
        self.val_text = ""
        if start_from is not None:
            tokenizer = start_from[1]
            # The loaded model's own tokenizer: per-character losses need the split by characters unless it is one.
            settings = replace(settings, tokenizer="char" if tokenizer.kind == "char" else "bpe")
            split = int(len(text) * (1 - VALIDATION_FRACTION))
            try:
                if tokenizer.kind == "char":
                    ids = torch.tensor(tokenizer.encode(text), dtype=torch.long)  # (N,)
                    train_ids, val_ids = split_corpus(ids)
                else:
                    self.val_text = text[split:]
                    train_ids = torch.tensor(tokenizer.encode(text[:split]), dtype=torch.long)  # (N_train,)
                    val_ids = torch.tensor(tokenizer.encode(self.val_text), dtype=torch.long)  # (N_val,)
                    ids = torch.cat([train_ids, val_ids])  # (N,)
            except Exception as error:  # each tokenizer has its own unknown-token error
                raise TrainingError(f"the corpus is not written in the loaded model's vocabulary ({error}); "
                                    "fine-tuning keeps the model's tokenizer, so train from fresh weights instead") from None
        elif settings.tokenizer == "bpe":
            split = int(len(text) * (1 - VALIDATION_FRACTION))  # by characters: the split a character model holds out
            train_text, self.val_text = text[:split], text[split:]
            tokenizer = train_byte_level_bpe(train_text, settings.bpe_vocab)
            train_ids = torch.tensor(tokenizer.encode(train_text), dtype=torch.long)  # (N_train,)
            val_ids = torch.tensor(tokenizer.encode(self.val_text), dtype=torch.long)  # (N_val,)
            ids = torch.cat([train_ids, val_ids])  # (N,)
        else:
            too_many = character_vocabulary_problem("the corpus", len(set(text)))
            if too_many:  # before the vocabulary is built: every distinct character is a row and a logit column
                raise TrainingError(too_many)
            tokenizer = CharTokenizer.from_text(text)
            ids = torch.tensor(tokenizer.encode(text), dtype=torch.long)  # (N,)
            train_ids, val_ids = split_corpus(ids)
        if len(train_ids) <= settings.seq_len + 1 or len(val_ids) < 2:
            raise TrainingError(
                f"the corpus has {len(ids):,} characters; it needs more than {int((settings.seq_len + 2) / 0.9):,} "
                f"for windows of {settings.seq_len} and a validation split"
            )
        self.settings, self.tokenizer, self.ids = settings, tokenizer, ids
        self.train_ids, self.val_ids = train_ids, val_ids
        self.eval_windows = _fixed_windows(val_ids, min(settings.seq_len, len(val_ids) - 1), settings.eval_windows)

    def batch(self, batch_size: int, seq_len: int, generator: torch.Generator) -> Batch:
        return Batch(*random_windows(self.train_ids, batch_size, seq_len, generator))  # (B, T) each

    def estimate(self, model: Transformer, settings: TrainSettings) -> float:
        return _windows_loss(model, self.eval_windows)

    def sample(self, model: Transformer, settings: TrainSettings) -> str:
        prompt = self.ids[:1]  # the corpus's first character: a fixed, always-valid prompt
        sample_ids = generate(model, prompt.tolist(), max_new=200, temperature=0.8, top_k=None, seed=settings.seed)
        return self.tokenizer.decode(sample_ids)

    def finish(self, model: Transformer, settings: TrainSettings) -> FinalScore:
        per_token = evaluate_loss(model, self.val_ids)
        characters_per_token = 1.0
        if settings.tokenizer == "bpe":  # the first token is never predicted: its characters do not count
            predicted_characters = len(self.val_text) - len(self.tokenizer.decode(self.val_ids[:1].tolist()))
            characters_per_token = predicted_characters / (len(self.val_ids) - 1)
        check = evaluate_loss(model, self.val_ids[: CHECK_PREDICTIONS + 1])
        return FinalScore(per_token / characters_per_token, per_token, check, characters_per_token)


def block_gradient_norms(model: Transformer) -> tuple[float, ...]:
    """The L2 norm of each block's parameter gradients (all its tensors together), block 0 first."""
    norms = []
    for block in model.blocks:
        squares = [p.grad.detach().float().pow(2).sum() for p in block.parameters() if p.grad is not None]
        norms.append(float(torch.stack(squares).sum().sqrt()) if squares else 0.0)
    return tuple(norms)


def _record_grad_norms(
    records: list[tuple[int, tuple[float, ...]]], step: int, norms: tuple[float, ...], stride: int
) -> int:
    """Append and return the stride of the next records. Past MAX_GRAD_NORM_RECORDS the records off a
    multiple of twice the stride go (step 1 stays) and the stride doubles: the record stays evenly spaced."""
    records.append((step, norms))
    if len(records) <= MAX_GRAD_NORM_RECORDS:
        return stride
    records[1:] = [record for record in records[1:] if record[0] % (2 * stride) == 0]
    return 2 * stride


def training_mask_mode(metadata: dict[str, Any] | None) -> str:
    """The mask a checkpoint's training record says it trained with; "causal" for records made before the choice."""
    settings = (metadata or {}).get("settings")
    mode = settings.get("mask_mode", "causal") if isinstance(settings, dict) else "causal"
    return mode if mode in MASK_MODES else "causal"


def _fixed_windows(ids: torch.Tensor, seq_len: int, count: int) -> torch.Tensor:
    """`count` evenly spaced windows of seq_len + 1 ids: the same validation sample at every estimate."""
    last_start = len(ids) - seq_len - 1
    starts = torch.linspace(0, max(last_start, 0), count).long()  # (count,)
    return ids[starts.unsqueeze(1) + torch.arange(seq_len + 1)]  # (count, T+1)


@torch.no_grad()
def _windows_loss(model: Transformer, windows: torch.Tensor) -> float:
    was_training = model.training
    model.eval()
    device = next(model.parameters()).device
    windows = windows.to(device)  # (N, T+1)
    logits = model(windows[:, :-1])  # (N, T, V)
    loss = F.cross_entropy(logits.flatten(0, 1).float(), windows[:, 1:].flatten())  # scalar
    model.train(was_training)
    return float(loss)


@torch.no_grad()
def evaluate_loss(
    model: Transformer, ids: torch.Tensor | list[int], window: int | None = None, batch_size: int = 32,
    on_progress: Callable[[int, int], None] | None = None,
) -> float:
    """Mean next-token loss in nats per token over every predictable token of `ids`.

    The ids are cut into non-overlapping windows of `window` (default: the model's context
    length, the length it trained at; a longer one where its positions allow, ModelConfig.accepted_length)
    and every token after the first is predicted exactly once, from the tokens before it in
    its own window. Windows are chained with a one-token overlap, so the first token of each window
    is the last target of the previous one and no prediction is skipped.
    on_progress(predicted, predictable) is called after each batch of windows.
    """
    ids = torch.as_tensor(ids, dtype=torch.long).flatten()  # (N,)
    if len(ids) < 2:
        raise TrainingError("evaluating a loss needs at least two tokens")
    window = window or model.config.context_length
    if window < 1 or model.config.length_refusal(window):
        raise TrainingError(model.config.length_refusal(window) or f"a window of {window} tokens holds no prediction")
    device = next(model.parameters()).device
    was_training = model.training
    model.eval()
    total = 0.0
    count = 0
    starts = list(range(0, len(ids) - 1, window))
    for first in range(0, len(starts), batch_size):
        batch_starts = starts[first : first + batch_size]
        full = [s for s in batch_starts if s + window + 1 <= len(ids)]
        if full:
            offsets = torch.tensor(full).unsqueeze(1) + torch.arange(window + 1)  # (b, T+1)
            windows = ids[offsets].to(device)  # (b, T+1)
            logits = model(windows[:, :-1])  # (b, T, V)
            total += float(F.cross_entropy(logits.flatten(0, 1).float(), windows[:, 1:].flatten(), reduction="sum"))
            count += windows[:, 1:].numel()
        for start in batch_starts:
            if start + window + 1 > len(ids):  # the ragged tail, run on its own
                tail = ids[start:].to(device).unsqueeze(0)  # (1, t+1)
                logits = model(tail[:, :-1])  # (1, t, V)
                total += float(F.cross_entropy(logits.flatten(0, 1).float(), tail[:, 1:].flatten(), reduction="sum"))
                count += tail.shape[1] - 1
        if on_progress is not None:
            on_progress(count, len(ids) - 1)
    model.train(was_training)
    return total / count


@torch.no_grad()
def generate(
    model: Transformer,
    ids: list[int] | torch.Tensor,
    max_new: int,
    temperature: float = 1.0,
    top_k: int | None = None,
    seed: int = 0,
    top_p: float | None = None,
    on_token: Callable[[int], None] | None = None,
) -> list[int]:
    """The prompt ids followed by max_new sampled ids.

    temperature 0 picks the most likely token (greedy); top_k keeps only the k most likely tokens;
    top_p keeps the smallest set of most likely tokens whose probability reaches p (core.sampling,
    which the Generate panel steps through with the same seed and the same draws). The model only
    ever sees its last context_length tokens, so generation can run past it. on_token(n) is called
    after the n-th new token.
    """
    from core import sampling

    prompt = torch.as_tensor(ids, dtype=torch.long).flatten()  # (T0,)
    if len(prompt) == 0:
        raise TrainingError("generation needs a prompt of at least one token")
    if max_new < 0:
        raise TrainingError(f"max_new must be zero or more, got {max_new}")
    try:
        sampling.check_settings(temperature, top_k, top_p)
    except sampling.SamplingError as error:
        raise TrainingError(str(error)) from None
    was_training = model.training
    model.eval()
    device = next(model.parameters()).device
    uniforms = sampling.uniform_draws(seed, max_new)  # (max_new,) draw n uses uniform n
    tokens = prompt.tolist()
    context = model.config.context_length
    with torch.no_grad():
        for step in range(max_new):
            window = torch.tensor(tokens[-context:], device=device).unsqueeze(0)  # (1, T)
            logits = model(window)[0, -1].float().cpu()  # (V,)
            tokens.append(sampling.sample_next(logits, temperature, top_k, top_p, float(uniforms[step])))
            if on_token is not None:
                on_token(step + 1)
    model.train(was_training)
    return tokens


__all__ = [
    "BUNDLED_CORPORA",
    "BUNDLED_RECIPES",
    "CHECK_PREDICTIONS",
    "DEFAULT_RECIPE",
    "MAX_GRAD_NORM_RECORDS",
    "ProbeCallback",
    "TRAIN_MASK_MODES",
    "VALIDATION_FRACTION",
    "TrainResult",
    "TrainSettings",
    "TrainingError",
    "block_gradient_norms",
    "check_run",
    "evaluate_loss",
    "generate",
    "learning_rate",
    "random_windows",
    "split_corpus",
    "train",
    "training_mask_mode",
]
