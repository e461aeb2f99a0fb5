"""`models` and `download`: the model library from the command line.

`models` lists the bundled models, the models in the Hugging Face cache and the catalogue of Hub
models this app imports, with their parameter counts and sizes. `download NAME` fetches a catalogue
model (or any Hub model id) into the cache; afterwards `--checkpoint` takes the printed folder, and
the model appears under `models` as cached.
"""

from __future__ import annotations

import argparse
import contextlib
import signal
import sys
import threading
from collections.abc import Iterator

from core.cli import CliError
from core.cli.common import print_json, print_table
from core.display import format_bytes


def register(subparsers: argparse._SubParsersAction) -> None:
    lister = subparsers.add_parser(
        "models",
        help="list the bundled models, the Hugging Face cache and the downloadable catalogue",
        description="Models this app opens: bundled ones, those already in the Hugging Face cache (HF_HUB_CACHE, "
        "else HF_HOME/hub, else ~/.cache/huggingface/hub), and a catalogue of Hub models to download. "
        "Parameter counts are computed from each model's config.",
    )
    lister.add_argument("--json", action="store_true", help="print JSON")
    lister.set_defaults(run=run_models)

    downloader = subparsers.add_parser(
        "download",
        help="download a Hub model (safetensors, config and tokenizer files) into the Hugging Face cache",
        description="Download a catalogue model (see `models`) or any Hub model id with huggingface_hub into "
        "the standard cache that transformers shares. A connection that drops mid-file resumes where it stopped; "
        "Ctrl-C cancels, and running the command again fetches only the files not yet complete. "
        "HF_ENDPOINT chooses another Hub address.",
    )
    downloader.add_argument("name", metavar="NAME", help="a catalogue name (gpt2, SmolLM2-135M, ...) or a Hub id owner/name")
    downloader.add_argument("--quiet", action="store_true", help="no progress bar")
    downloader.set_defaults(run=run_download)


def run_models(args: argparse.Namespace) -> int:
    from core.model_library import hub_cache_dir, library

    entries = library()
    if args.json:
        print_json({"cache_dir": str(hub_cache_dir()), "models": [entry.to_json() for entry in entries]})
        return 0
    rows = []
    for entry in entries:
        parameters = f"{entry.parameters:,}" if entry.parameters is not None else "?"
        size = format_bytes(entry.size_bytes) if entry.size_bytes is not None else "?"
        if entry.where == "hub":
            size = f"~{size} to download"
        status = entry.problem or (str(entry.path) if entry.path else f"python main.py download {entry.name}")
        rows.append([entry.name, entry.where, entry.family, parameters, size, status])
    print_table(rows, ["model", "where", "family", "parameters", "size", "open with --checkpoint / get with"], right_align={3})
    print(f"\nHugging Face cache: {hub_cache_dir()}; catalogue sizes are parameters x bytes per weight of the published dtype")
    return 0


@contextlib.contextmanager
def _cancel_on_interrupt(flag) -> Iterator[None]:
    """The first Ctrl-C asks the download to stop at its next chunk; a second one aborts at once."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return

    def on_interrupt(signum: int, frame: object) -> None:
        if flag():
            raise KeyboardInterrupt
        flag.set()
        print("\ncancelling the download (Ctrl-C again to abort at once)", file=sys.stderr)

    previous = signal.signal(signal.SIGINT, on_interrupt)
    try:
        yield
    finally:
        signal.signal(signal.SIGINT, previous)


def run_download(args: argparse.Namespace) -> int:
    from core.checkpoints import CheckpointError, read_json_file
    from core.families.registry import family_of
    from core.hf_import import hf_to_model_config
    from core.hub_download import CancelFlag, DownloadCancelled, DownloadError, download_model
    from core.model_library import find_catalogue

    model = find_catalogue(args.name)
    if model is None and "/" not in args.name:
        from core.model_library import CATALOGUE

        names = ", ".join(m.repo_id.split("/")[-1] for m in CATALOGUE)
        raise CliError(f"{args.name!r} is not in the catalogue ({names}); give a Hub id as owner/name")
    repo_id = model.repo_id if model is not None else args.name
    flag = CancelFlag()
    show = not args.quiet and sys.stderr.isatty()
    try:
        with _cancel_on_interrupt(flag):
            result = download_model(repo_id, cancelled=flag, show_progress=show)
    except DownloadCancelled as error:
        print(f"download {repo_id}: {error}", file=sys.stderr)
        return 130
    except DownloadError as error:
        raise CliError(str(error)) from None
    try:
        hf_config = read_json_file(result.folder / "config.json", "the model config")
        config = hf_to_model_config(hf_config if isinstance(hf_config, dict) else {}, repo_id, f"{repo_id} config.json")
    except CheckpointError as error:
        raise CliError(f"downloaded {repo_id} to {result.folder}, but this app cannot open it: {error}") from None
    files = [path for path in result.folder.iterdir() if path.is_file()]
    size = sum(path.stat().st_size for path in files)
    print(f"{repo_id}: {len(files)} files ({format_bytes(size)}) in {result.folder}")
    has_text = family_of(hf_config.get("model_type"), repo_id).text_input  # hf_to_model_config read it as a dict
    inputs = "--ids 1,2,3" if not has_text else "--text ..."
    if config.architecture == "encoder-decoder":
        inputs = ("--source-ids 1,2,3 " if not has_text else "--source ... ") + inputs
    print(f"open it with: python main.py logits --checkpoint {result.folder} {inputs} --out logits.npy "
          "(or File > Open model folder)")
    return 0
