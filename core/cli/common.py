"""Argument helpers shared by the subcommands: choosing a model config, printing JSON and tables."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

from core.cli import CliError
from core.config import ConfigError, ModelConfig
from core.presets import get_preset
from core.text_files import decode_text


MAX_CONFIG_BYTES = 1024 * 1024


def add_model_arguments(parser: argparse.ArgumentParser, default_preset: str | None = "tiny-gpt") -> None:
    group = parser.add_argument_group("model")
    group.add_argument("--preset", metavar="NAME", default=default_preset, help="a preset name (see `presets`)")
    group.add_argument("--config", metavar="FILE", help="a JSON file of config fields (overrides --preset)")
    group.add_argument(
        "--set",
        metavar="FIELD=VALUE",
        action="append",
        default=[],
        help="change one config field, e.g. --set n_layers=6 --set norm=rmsnorm (repeatable)",
    )


def parse_field_value(text: str) -> tuple[str, Any]:
    if "=" not in text:
        raise CliError(f"--set expects FIELD=VALUE, got {text!r}")
    name, raw = text.split("=", 1)
    name = name.strip()
    if name not in ModelConfig.field_names():
        raise ConfigError(name, f"unknown config field; known fields are {', '.join(ModelConfig.field_names())}")
    raw = raw.strip()
    lowered = raw.lower()
    if lowered in ("true", "false"):
        return name, lowered == "true"
    if lowered in ("none", "null", ""):
        return name, None
    for convert in (int, float):
        try:
            return name, convert(raw)
        except ValueError:
            pass
    return name, raw


def config_from_args(args: argparse.Namespace) -> ModelConfig:
    if getattr(args, "config", None):
        path = Path(args.config)
        if path.exists() and not path.is_file() and not path.is_dir():  # a FIFO would wait, /dev/zero never ends
            raise CliError(f"{path} is not a regular file; give a JSON file of config fields")
        if path.is_file() and path.stat().st_size > MAX_CONFIG_BYTES:
            raise CliError(f"{path} is larger than {MAX_CONFIG_BYTES // 1024} KiB; a config is a few fields")
        try:
            data = json.loads(decode_text(path.read_bytes()))
        except json.JSONDecodeError as error:
            raise CliError(f"{path} is not valid JSON (line {error.lineno}: {error.msg})") from None
        except UnicodeDecodeError:
            raise CliError(f"{path} is not a text file") from None
        except RecursionError:
            raise CliError(f"{path} nests its JSON too deeply to be a config") from None
        except ValueError as error:  # a NUL byte in the path
            raise CliError(f"cannot read {args.config!r}: {error}") from None
        base = ModelConfig.from_dict(data)
    elif args.preset:
        base = get_preset(args.preset)
    else:
        raise CliError("choose a model with --preset NAME or --config FILE")
    changes = dict(parse_field_value(item) for item in args.set)
    if not changes:
        return base
    current = base.to_dict()
    current.update(changes)
    if "name" not in changes and base.name != "custom":
        current["name"] = f"{base.name} (edited)"
    return ModelConfig.from_dict(current)


def print_json(data: Any) -> None:
    json.dump(data, sys.stdout, indent=2)
    sys.stdout.write("\n")


def print_table(rows: list[list[str]], header: list[str], right_align: set[int] | None = None) -> None:
    right_align = right_align or set()
    widths = [max(len(str(row[i])) for row in [header, *rows]) for i in range(len(header))]

    def line(cells: list[str]) -> str:
        return "  ".join(str(c).rjust(w) if i in right_align else str(c).ljust(w) for i, (c, w) in enumerate(zip(cells, widths)))

    print(line(header).rstrip())
    print("  ".join("-" * w for w in widths))
    for row in rows:
        print(line(row).rstrip())
