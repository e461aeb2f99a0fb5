"""--kernels and --precision on the command line, and the kernel lines of --version."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from core import kernels
from core.kernel_cache import CACHE_APP, CACHE_FILE, KERNELS_ENV
from tests.cli.helpers import run

ROOT = Path(__file__).resolve().parents[2]
ONEDNN, WHY_NOT = kernels.onednn_status()
EDIT = ("causal", "--preset", "tiny-gpt", "--text", "To be or not", "--edit", "5=x")


@pytest.fixture(autouse=True)
def restore_the_process_setting():
    choice, precision = kernels.current_choice(), kernels.current_precision()
    yield
    kernels.set_choice(choice)
    kernels.set_precision(precision)


@pytest.mark.parametrize("path", ["default", pytest.param("onednn", marks=pytest.mark.skipif(not ONEDNN, reason=WHY_NOT))])
def test_the_edit_diff_is_exact_in_the_past_on_each_path(capsys, path):
    code, out, err = run(capsys, *EDIT, "--kernels", path, "--json")
    assert code == 0, err
    data = json.loads(out)
    assert data["past_exactly_unchanged"] and not data["leaks_into_past"]
    assert kernels.current_choice().path == path and kernels.current_precision().requested == "fp32"


def test_auto_measures_into_the_user_cache_folder_once(capsys, monkeypatch, tmp_path):
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    monkeypatch.delenv(KERNELS_ENV, raising=False)
    calls = []
    monkeypatch.setattr(kernels, "measure_rates", lambda: calls.append(1) or {"default": 100.0, "onednn": 300.0})
    monkeypatch.setattr(kernels, "load_per_cpu", lambda: 0.25)  # a quiet machine: the verdict is kept
    for _ in range(2):
        code, _out, err = run(capsys, *EDIT)
        assert code == 0, err
    cache = tmp_path / CACHE_APP / CACHE_FILE
    assert kernels.current_choice().requested == "auto"
    if ONEDNN:
        assert calls == [1] and kernels.current_choice().path == "onednn"
        assert json.loads(cache.read_text(encoding="utf-8"))["entries"][kernels.machine_key()]["path"] == "onednn"
    else:
        assert not calls and kernels.current_choice().path == "default"


def test_refusals_say_why_in_one_line(capsys, monkeypatch):
    code, out, err = run(capsys, *EDIT, "--precision", "fp16")
    assert code == 2 and out == "" and err.count("\n") == 1 and "fp16 runs on CUDA only" in err
    monkeypatch.setenv(KERNELS_ENV, "blas")
    code, out, err = run(capsys, *EDIT)
    assert code == 2 and err.count("\n") == 1 and KERNELS_ENV in err and "'blas'" in err
    with pytest.raises(SystemExit) as exit_:
        run(capsys, *EDIT, "--kernels", "fastest")
    err = capsys.readouterr().err
    assert exit_.value.code == 2 and err.count("\n") == 1 and "'fastest'" in err


@pytest.mark.skipif(not kernels.cpu_has_native_bf16(), reason="this CPU has no native bf16")
def test_bf16_is_labelled_and_the_past_still_exact(capsys):
    code, out, err = run(capsys, *EDIT, "--precision", "bf16", "--json")
    assert code == 0, err
    assert "precision: bf16 matmuls (values differ from fp32" in err
    assert json.loads(out)["past_exactly_unchanged"]


def test_version_names_the_cached_kernel_verdicts_without_torch(tmp_path):
    env = {"XDG_CACHE_HOME": str(tmp_path), "PATH": "/usr/bin:/bin", "HOME": str(tmp_path)}
    probe = ("import sys\nfrom transformer_explorer.launcher import main\ncode = main(['--version'])\n"
             "print(sorted({m.split('.')[0] for m in sys.modules} & {'torch', 'numpy', 'PySide6'}), file=sys.stderr)\n"
             "sys.exit(code)\n")

    def version() -> tuple[str, str]:
        done = subprocess.run([sys.executable, "-c", probe], cwd=ROOT, env=env, capture_output=True, text=True, timeout=120)
        assert done.returncode == 0, done.stderr
        return done.stdout, done.stderr.strip().splitlines()[-1]

    out, heavy = version()
    assert heavy == "[]" and "kernels: not measured yet on this machine" in out.splitlines()[1]
    key = kernels.machine_key(threads=3)
    cache = tmp_path / CACHE_APP / CACHE_FILE
    cache.parent.mkdir(parents=True)
    cache.write_text(json.dumps({"format": 1, "entries": {key: {"path": "onednn", "rates": {"default": 117.0, "onednn": 253.0}}}}),
                     encoding="utf-8")
    out, heavy = version()
    assert heavy == "[]"
    assert "kernels at 3 threads: onednn (measured: default 117 GFLOP/s, oneDNN 253 GFLOP/s)" in out.splitlines()
