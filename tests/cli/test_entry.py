"""The `transformer-explorer` command itself: --help and --version without torch or Qt, the subcommand table,
and the package that keeps the app's short module names its own."""

from __future__ import annotations

import argparse
import subprocess
import sys
import tomllib
import types
from pathlib import Path

import transformer_explorer
from core import cli
from gui.app import GUI_OPTIONS
from transformer_explorer.launcher import main

ROOT = Path(__file__).resolve().parents[2]
HEAVY = ("torch", "PySide6", "shiboken6", "pyqtgraph", "numpy")


def imported_after(argv: list[str]) -> tuple[subprocess.CompletedProcess, list[str]]:
    """Run the command in a fresh interpreter and report which heavy packages it imported."""
    probe = (
        "import sys\n"
        "from transformer_explorer.launcher import main\n"
        f"code = main({argv!r})\n"
        f"print(sorted({{m.split('.')[0] for m in sys.modules}} & set({HEAVY!r})), file=sys.stderr)\n"
        "sys.exit(code)\n"
    )
    result = subprocess.run([sys.executable, "-c", probe], cwd=ROOT, capture_output=True, text=True, timeout=120)
    return result, result.stderr.strip().splitlines()[-1:]


def test_root_help_lists_every_command_and_window_option_without_torch_or_qt():
    result, heavy = imported_after(["--help"])
    assert result.returncode == 0, result.stderr
    assert heavy == ["[]"]
    for command in cli.COMMANDS:
        assert f"\n    {command} " in result.stdout, command
    for option in GUI_OPTIONS - {"--timeout"}:
        assert option in result.stdout, option
    assert "--version" in result.stdout


def test_version_is_the_projects_and_needs_no_torch_or_qt():
    result, heavy = imported_after(["--version"])
    version = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]["version"]
    assert result.returncode == 0 and heavy == ["[]"]
    assert result.stdout.splitlines()[0] == f"transformer-explorer {version}"
    assert all(line.startswith("kernels") for line in result.stdout.splitlines()[1:])  # tests/cli/test_kernels_cli.py


def test_the_command_table_is_what_the_modules_register():
    parser = cli.build_parser()
    (subparsers,) = [action for action in parser._actions if isinstance(action, argparse._SubParsersAction)]
    registered = {choice.dest: choice.help for choice in subparsers._choices_actions}
    assert registered == {name: line for name, (_module, line) in cli.COMMANDS.items()}
    for name, (module, _line) in cli.COMMANDS.items():
        command = subparsers.choices[name]
        # A command with actions of its own (`sae train`, `sae stats`, ...) runs what each action names.
        actions = [action for action in command._actions if isinstance(action, argparse._SubParsersAction)]
        runners = ([parser.get_default("run") for parser in actions[0].choices.values()] if actions
                   else [command.get_default("run")])
        assert [runner.__module__ for runner in runners] == [module] * len(runners), name


def test_a_mistyped_command_is_one_line_and_exit_2(capsys):
    try:
        code = main(["parms"])
    except SystemExit as exit_:
        code = exit_.code
    err = capsys.readouterr().err
    assert code == 2 and err.count("\n") == 1 and "'parms'" in err and "params" in err


def test_the_apps_folder_comes_first_on_the_path_once(monkeypatch):
    folder = str(transformer_explorer.modules_folder())
    assert Path(folder, "core", "__init__.py").is_file()
    monkeypatch.setattr(sys, "path", ["/elsewhere", folder])
    transformer_explorer.use_own_modules()
    transformer_explorer.use_own_modules()
    assert sys.path == [folder, "/elsewhere", folder]


def test_a_generic_name_imported_from_another_package_is_one_line(monkeypatch, capsys, tmp_path):
    impostor = types.ModuleType("resources")
    impostor.__file__ = str(tmp_path / "site-packages" / "resources" / "__init__.py")
    monkeypatch.setitem(sys.modules, "resources", impostor)
    assert main(["presets"]) == 1
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "resources" in err and str(tmp_path) in err
