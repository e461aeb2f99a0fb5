"""Headless command line: subcommands that print the same numbers the panels show.

Each subcommand lives in a module of this package with a `register(subparsers)` function; the
parser is assembled from COMMAND_MODULES. Expected errors (bad config, unknown preset, unreadable
file, ...) print one line to stderr and exit 2; nothing prints a traceback.
"""

from __future__ import annotations

import argparse
import contextlib
import importlib
import signal
import sys
import threading
import traceback
from collections.abc import Iterator, Sequence
from pathlib import Path

from core.allocator import map_large_blocks

PROG = "transformer-explorer"

# Every subcommand, the module whose register() adds it, and its line in the root --help. The root help
# is printed from this table, so `--help` imports no subcommand module (several import torch);
# tests/cli/test_cli.py checks that each module registers exactly these commands with these lines.
COMMANDS: dict[str, tuple[str, str]] = {
    "presets": ("core.cli.inspect", "list the named model configurations"),
    "params": ("core.cli.inspect", "count a model's parameters by formula and by instantiation"),
    "shapes": ("core.cli.shapes", "trace every tensor's shape and memory through one block"),
    "causal": ("core.cli.causal", "edit one token and measure which positions move in every layer"),
    "head": ("core.cli.head", "one attention head worked by hand for one query, checked against the model's own output"),
    "rope": ("core.cli.positions", "RoPE scores depend on the offset m - n only; additive sinusoids do not"),
    "permutation": ("core.cli.positions", "attention is blind to order until an encoding is added"),
    "norms": ("core.cli.norms", "forward, stream-gradient and weight-gradient norms per layer of a random pre- or post-norm stack"),
    "budget": ("core.cli.norms", "training and inference FLOPs per token, weight memory and KV cache of a model"),
    "pitfalls": (
        "core.cli.pitfalls",
        "train a mask or norm pitfall beside the fix (same seed and steps) and compare the curves",
    ),
    "train": ("core.cli.models", "train a character-level model on a text corpus and save it as a checkpoint folder"),
    "logits": ("core.cli.models", "write a model's logits for a text or id sequence as a .npy file"),
    "generate": ("core.cli.models", "continue a text by sampling from a model"),
    "evaluate": ("core.cli.models", "mean next-token loss of a model on a text file"),
    "export": (
        "core.cli.models",
        "save a GPT-2, Llama or Qwen2 family model as a Hugging Face folder that transformers loads",
    ),
    "check-lesson": ("core.cli.lessons", "check lesson files: panels, parts, quotes and panel settings, one line per problem"),
    "patch": ("core.cli.causal_lab", "activation patching: which layer and position (or head) carries what the corrupted token changed"),
    "attribute": ("core.cli.causal_lab", "direct logit attribution: the logit split into what each embedding, head, bias and FFN wrote"),
    "induction": ("core.cli.causal_lab", "induction and previous-token scores of every head on a repeated random sequence"),
    "fill-mask": ("core.cli.families", "an encoder's top tokens and their probabilities at every blank of a text"),
    "translate": ("core.cli.families", "greedy decoding of an encoder-decoder model, with each step's cross-attention"),
    "route": (
        "core.cli.families",
        "a mixture of experts' routing: chosen experts, router probabilities, load, active parameters",
    ),
    "export-html": ("core.cli.handouts", "a lesson or a view as one self-contained web page that opens offline"),
    "lesson-answers": ("core.cli.handouts", "summarise a class's answers CSVs from exported lesson pages, per step"),
    "sae": (
        "core.cli.features",
        "sparse autoencoders: train one on a hook's activations, list, measure, and read a feature",
    ),
    "lens": (
        "core.cli.lens",
        "tuned lens: train one, list the bundled ones, or compare its KL per block with the logit lens's",
    ),
    "extrapolate": ("core.cli.going_deeper", "loss against input length past the length a model was trained at"),
    "ladder": ("core.cli.going_deeper", "the 2017 block updated part by part: each rung's held-out loss over seeds"),
    "models": ("core.cli.download", "list the bundled models, the Hugging Face cache and the downloadable catalogue"),
    "download": (
        "core.cli.download",
        "download a Hub model (safetensors, config and tokenizer files) into the Hugging Face cache",
    ),
}

COMMAND_MODULES = list(dict.fromkeys(module for module, _help in COMMANDS.values()))

# Commands that run a model's forward pass take --kernels and --precision (core.kernels).
KERNEL_COMMANDS = ("causal", "train", "logits", "generate", "evaluate", "norms", "rope", "permutation", "head")


class CliError(Exception):
    """A user mistake the command line reports in one line (exit code 2)."""


class _OneLineParser(argparse.ArgumentParser):
    """argparse prints usage plus a message on error; the app's rule is one line that says what to fix."""

    def error(self, message: str) -> None:  # type: ignore[override]
        self.exit(2, f"{self.prog}: error: {shorten(message)} (see {self.prog} --help)\n")


MAX_MESSAGE_CHARS = 500  # an error line quotes what was given: a 5,000-character path is cut, not printed whole


def shorten(message: str) -> str:
    """The first line of a message, at most MAX_MESSAGE_CHARS long."""
    line = (message.strip().splitlines() or [""])[0]
    return line if len(line) <= MAX_MESSAGE_CHARS else line[: MAX_MESSAGE_CHARS - 3] + "..."


def _parser_with_subcommands(parents: Sequence[argparse.ArgumentParser] = ()):
    parser = _OneLineParser(
        prog=PROG,
        description="Transformer Explorer: take a Transformer apart and watch each claim about it hold. "
        "With no subcommand the desktop app opens.",
        epilog=f"`{PROG} COMMAND --help` describes a command's options.",
        parents=list(parents),
    )
    return parser, parser.add_subparsers(dest="command", metavar="COMMAND", parser_class=_OneLineParser)


def build_root_parser(parents: Sequence[argparse.ArgumentParser] = ()) -> argparse.ArgumentParser:
    """The parser that names every subcommand from COMMANDS without importing their modules: for --help and
    for a mistyped command; it runs nothing."""
    parser, subparsers = _parser_with_subcommands(parents)
    for name, (_module, line) in COMMANDS.items():
        subparsers.add_parser(name, help=line)
    return parser


def build_parser() -> argparse.ArgumentParser:
    """The full parser: every subcommand module registers its commands and their options."""
    parser, subparsers = _parser_with_subcommands()
    for module_name in COMMAND_MODULES:
        importlib.import_module(module_name).register(subparsers)
    for name in KERNEL_COMMANDS:
        if name in subparsers.choices:
            add_kernel_options(subparsers.choices[name])
    return parser


def add_kernel_options(parser: argparse.ArgumentParser) -> None:
    from core.kernel_cache import KERNEL_OPTIONS, KERNELS_ENV, PRECISIONS

    parser.add_argument("--kernels", choices=KERNEL_OPTIONS, default=None,
                        help=f"the linear layers' CPU path: measured once per machine (auto, the default; or {KERNELS_ENV}), "
                        "the BLAS path (default) or oneDNN")
    parser.add_argument("--precision", choices=PRECISIONS, default="fp32",
                        help="the linear layers' precision: fp32 (default), bf16 (a CPU with native bf16, or CUDA), "
                        "fp16 (CUDA); every value then differs from fp32")


def _configure_kernels(args: argparse.Namespace) -> None:
    """Set the process's kernel path and precision before the command runs; an impossible request is a KernelError."""
    from core import kernels
    from core.device import choose_device

    device_type = choose_device(getattr(args, "device", None)).device.type
    _choice, precision = kernels.configure(args.kernels, args.precision, device_type)
    if precision.active:
        print(f"{PROG} {args.command}: {kernels.describe()}", file=sys.stderr)


def _expected_errors() -> tuple[type[BaseException], ...]:
    from core.checkpoints import CheckpointError
    from core.config import ConfigError
    from core.device import DeviceError, MemoryBudgetError
    from core.kernels import KernelError
    from core.model import SequenceError
    from core.presets import UnknownPresetError
    from core.tokenizers import TokenizerFileError, UnknownTokenError

    return (
        CliError,
        CheckpointError,
        ConfigError,
        DeviceError,
        KernelError,
        MemoryBudgetError,
        SequenceError,
        UnknownPresetError,
        TokenizerFileError,
        UnknownTokenError,
        OSError,  # unreadable or unwritable paths, full disks: the message says which file
    )


def _log_path() -> Path:
    """The platform's cache folder, as the window's log: $XDG_CACHE_HOME or ~/.cache, ~/Library/Caches, %LOCALAPPDATA%."""
    import platformdirs

    return Path(platformdirs.user_cache_dir(PROG, appauthor=False)) / "cli-errors.log"


@contextlib.contextmanager
def _interrupt_raises() -> Iterator[None]:
    """While a command runs, Ctrl-C raises KeyboardInterrupt, so that it stops a training run after the step or
    deletes a half-written file; outside, the launcher's handler exits at once with one line."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    previous = signal.signal(signal.SIGINT, signal.default_int_handler)
    try:
        yield
    finally:
        signal.signal(signal.SIGINT, previous)  # before the `except KeyboardInterrupt` prints its line


def main(argv: Sequence[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    if any("\x00" in argument for argument in argv):  # no path or value holds one; open() would raise ValueError
        print(f"{PROG}: error: an argument holds a NUL character, which no file name or value can hold", file=sys.stderr)
        return 2
    if not argv or argv[0] not in COMMANDS:
        # Help, no command or a mistyped one: answered from the table, before torch is imported.
        root = build_root_parser()
        root.parse_args(argv)
        root.print_help()
        return 0
    try:
        parser = build_parser()
    except Exception as error:  # a broken installation: torch or another dependency fails to import
        print(f"{PROG}: error: the installation is incomplete, a module failed to load: {type(error).__name__}: {error}",
              file=sys.stderr)
        return 1
    args = parser.parse_args(argv)
    map_large_blocks()  # as in the window: the memory estimate a command checks against assumes it
    try:
        with _interrupt_raises():
            if hasattr(args, "kernels"):
                _configure_kernels(args)
            return int(args.run(args) or 0)
    except KeyboardInterrupt:
        print(f"{PROG}: interrupted", file=sys.stderr)
        return 130
    except BrokenPipeError:
        return 0
    except _expected_errors() as error:
        message = error.strerror + f": {error.filename}" if isinstance(error, OSError) and error.filename else str(error)
        print(f"{PROG} {args.command}: error: {shorten(message)}", file=sys.stderr)
        return 2
    except Exception as error:  # a bug: still one line for the user, details in the log
        log = _log_path()
        try:
            log.parent.mkdir(parents=True, exist_ok=True)
            with log.open("a", encoding="utf-8") as handle:
                handle.write(traceback.format_exc() + "\n")
            where = f" (details in {log})"
        except OSError:
            where = ""
        print(f"{PROG} {args.command}: unexpected error: {type(error).__name__}: {shorten(str(error))}{where}", file=sys.stderr)
        return 1
