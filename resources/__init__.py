"""Data files that ship with the app: the corpus, the bundled models, icons and lessons."""

from pathlib import Path

RESOURCES_DIR = Path(__file__).resolve().parent


def resource_path(*parts: str) -> Path:
    return RESOURCES_DIR.joinpath(*parts)
