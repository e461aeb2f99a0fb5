"""Download a model from the Hugging Face Hub into the shared cache, with progress and cancel.

`huggingface_hub.snapshot_download` does the work, so the files land where `transformers` looks
for them (hub_cache_dir), a connection that drops mid-file resumes from the bytes already received
(HTTP Range), files already complete are never fetched again (so a cancelled download goes on with
the file it stopped in), and afterwards everything works offline. Only what the app reads is
fetched: safetensors weights, configs and tokenizer files, at the top of the repository; pickle
weights and code are never downloaded. The Hub address is HF_ENDPOINT when set, read at the time
of the call. This module does not import torch, so a download thread of the GUI may use it.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

DEFAULT_ENDPOINT = "https://huggingface.co"
ALLOW_PATTERNS = [
    "*.safetensors",
    "model.safetensors.index.json",
    "config.json",
    "generation_config.json",
    "tokenizer.json",
    "tokenizer_config.json",
    "special_tokens_map.json",
    "vocab.json",
    "merges.txt",
]
IGNORE_PATTERNS = ["*/*"]  # the allow patterns' * also matches "/": nothing from subfolders (onnx/, ...)
NETWORK_LIBRARIES = ("httpx", "httpx2", "httpcore", "requests", "urllib3")  # what huggingface_hub versions raise
CONNECT_TIMEOUT_S = 10.0  # how long an unreachable Hub may keep the user waiting for the first answer


class DownloadError(Exception):
    """A download that could not start or finish; the message is one line that says why."""


class DownloadCancelled(DownloadError):
    """The user cancelled; files already complete stay in the cache, the partial one is dropped."""


@dataclass(frozen=True)
class DownloadResult:
    repo_id: str
    folder: Path  # the snapshot folder in the cache, ready for core.checkpoints.resolve_checkpoint
    cache_dir: Path


ProgressCallback = Callable[[int, int], None]  # (bytes done, bytes known so far)


def hub_cache_dir() -> Path:
    """The Hugging Face hub cache, as huggingface_hub finds it, read from the environment now."""
    if os.environ.get("HF_HUB_CACHE"):
        return Path(os.path.expandvars(os.environ["HF_HUB_CACHE"])).expanduser()
    if os.environ.get("HF_HOME"):
        return Path(os.path.expandvars(os.environ["HF_HOME"])).expanduser() / "hub"
    xdg = os.environ.get("XDG_CACHE_HOME") or str(Path("~/.cache").expanduser())
    return Path(os.path.expandvars(xdg)).expanduser() / "huggingface" / "hub"


def hub_endpoint() -> str:
    return (os.environ.get("HF_ENDPOINT") or DEFAULT_ENDPOINT).rstrip("/")


def _progress_class(on_progress: ProgressCallback | None, cancelled: Callable[[], bool] | None, show: bool):
    """A tqdm class for snapshot_download's bars: reports bytes, and stops the transfer when cancelled."""
    from tqdm.auto import tqdm

    class LabProgress(tqdm):
        def __init__(self, *args, **kwargs):
            kwargs.pop("name", None)
            if not show:
                kwargs["disable"] = True
            # A disabled tqdm counts nothing, so the bytes are counted here.
            self.counts_bytes = kwargs.get("unit") == "B"
            self.bytes_done = int(kwargs.get("initial") or 0)
            super().__init__(*args, **kwargs)

        def update(self, n=1):
            if cancelled is not None and cancelled():
                raise DownloadCancelled(
                    "download cancelled; the files already complete stay in the cache and are not fetched again"
                )
            shown = super().update(n)
            if self.counts_bytes:
                self.bytes_done += int(n or 0)
                if on_progress is not None:
                    on_progress(self.bytes_done, int(self.total or 0))
            return shown

    return LabProgress


def download_model(
    repo_id: str,
    on_progress: ProgressCallback | None = None,
    cancelled: Callable[[], bool] | None = None,
    show_progress: bool = False,
    cache_dir: Path | None = None,
) -> DownloadResult:
    """Fetch repo_id's safetensors, config and tokenizer files into the Hugging Face cache."""
    from huggingface_hub import snapshot_download
    from huggingface_hub.errors import (
        GatedRepoError,
        HfHubHTTPError,
        LocalEntryNotFoundError,
        RepositoryNotFoundError,
        RevisionNotFoundError,
    )

    _check_repo_id(repo_id)
    cache = cache_dir or hub_cache_dir()
    endpoint = hub_endpoint()
    try:
        folder = snapshot_download(
            repo_id,
            cache_dir=str(cache),
            endpoint=endpoint,
            allow_patterns=ALLOW_PATTERNS,
            ignore_patterns=IGNORE_PATTERNS,
            etag_timeout=CONNECT_TIMEOUT_S,
            max_workers=1,  # one file at a time: a cancel stops the one transfer at its next chunk
            tqdm_class=_progress_class(on_progress, cancelled, show_progress),
        )
    except DownloadCancelled:
        raise
    except GatedRepoError:
        raise DownloadError(f"{repo_id} is gated on the Hub: accept its licence there and log in with `hf auth login`") from None
    except RepositoryNotFoundError:
        raise DownloadError(f"no model {repo_id!r} on {endpoint} (or it is private)") from None
    except RevisionNotFoundError:
        raise DownloadError(f"{repo_id} on {endpoint} has no main revision") from None
    except LocalEntryNotFoundError as error:
        cause = error.__cause__ or error.__context__
        reason = f"{type(cause).__name__}: {cause}" if cause is not None else "offline mode (HF_HUB_OFFLINE) is on"
        raise DownloadError(
            f"cannot reach {endpoint} to download {repo_id} ({_one_line(reason)}); check the network connection"
        ) from None
    except (HfHubHTTPError, OSError, ValueError) as error:
        raise DownloadError(f"downloading {repo_id} from {endpoint} failed: {_one_line(str(error))}") from None
    except Exception as error:
        if type(error).__module__.split(".")[0] not in NETWORK_LIBRARIES:
            raise
        raise DownloadError(f"downloading {repo_id} from {endpoint} failed: {type(error).__name__}: {_one_line(str(error))}") from None
    return DownloadResult(repo_id, Path(folder), Path(cache))


def _check_repo_id(repo_id: str) -> None:
    parts = repo_id.split("/")
    allowed = set("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-_.")
    if not (1 <= len(parts) <= 2) or not all(parts) or any(set(part) - allowed for part in parts) or len(repo_id) > 96:
        raise DownloadError(f"{repo_id!r} is not a Hub model id (owner/name, letters, digits, - _ .)")
    if any(part in (".", "..") or part.startswith(("-", ".")) for part in parts):
        raise DownloadError(f"{repo_id!r} is not a Hub model id")


def _one_line(text: str) -> str:
    return " ".join(text.split())[:300]


class CancelFlag:
    """A thread-safe cancel request (set from the GUI thread or a signal handler, read by the download)."""

    def __init__(self) -> None:
        self._event = threading.Event()

    def set(self) -> None:
        self._event.set()

    def __call__(self) -> bool:
        return self._event.is_set()


__all__ = [
    "CancelFlag",
    "DownloadCancelled",
    "DownloadError",
    "DownloadResult",
    "download_model",
    "hub_cache_dir",
    "hub_endpoint",
]
