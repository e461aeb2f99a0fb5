"""The linear layers' kernel path and precision: measured and cached per machine, exact within a path.

Every comparison the lab makes runs both sides through the one path of the process; these tests run
each comparison once per path. Tolerances between paths come from float32 rounding (the worst-case
bound of a K-term dot product, K * 2^-24 of the sum of |terms|, per matmul in depth).
"""

from __future__ import annotations

import json
import os

import numpy as np
import pytest
import torch
import torch.nn.functional as F
from torch import nn

from core import kernels
from core.experiments.causal_edit import causal_edit_diff, residual_run
from core.experiments.head_split import head_split_check
from core.kernel_cache import read_cache, version_lines, write_cache
from core.model import Transformer
from core.presets import get_preset

ONEDNN, WHY_NOT = kernels.onednn_status()
PATHS = ["default", pytest.param("onednn", marks=pytest.mark.skipif(not ONEDNN, reason=WHY_NOT or "no oneDNN"))]
FLOAT32_UNIT = 2.0**-24
BF16_UNIT = 2.0**-8


@pytest.fixture(autouse=True)
def restore_the_process_setting(monkeypatch):
    choice, precision = kernels.current_choice(), kernels.current_precision()
    monkeypatch.setattr(kernels, "load_per_cpu", lambda: 0.25)  # a quiet machine, whatever else runs now
    yield
    kernels.set_choice(choice)
    kernels.set_precision(precision)


def use(path: str) -> None:
    kernels.set_choice(kernels.KernelChoice(path, path, "set by the test"))


def tiny_model(preset: str = "tiny-gpt") -> Transformer:
    return Transformer.from_seed(get_preset(preset), seed=3)


def ids_for(model: Transformer, n: int = 48) -> list[int]:
    return [int(i) for i in torch.randint(0, model.config.vocab_size, (n,), generator=torch.Generator().manual_seed(1))]


# ---- exactness within each path ----------------------------------------------------------------------
@pytest.mark.parametrize("path", PATHS)
@pytest.mark.parametrize("preset", ["tiny-gpt", "tiny-llama", "tiny-moe"])
def test_an_edit_leaves_the_past_bit_for_bit_equal_on_each_path(path, preset):
    model, position = tiny_model(preset), 29
    use(path)
    ids = ids_for(model)
    batch_of_two = causal_edit_diff(model, ids, position, (ids[position] + 1) % model.config.vocab_size)
    assert kernels.current_choice().path == path  # the path really ran (no fallback)
    assert batch_of_two.past_exactly_unchanged and not batch_of_two.leaks_into_past
    assert not batch_of_two.exactly_unchanged[1:, position].any()  # the edit itself moved: a real comparison
    reference = residual_run(model, ids, with_logits=True)
    kept = causal_edit_diff(model, ids, position, (ids[position] + 2) % model.config.vocab_size, reference=reference)
    assert kept.reference_reused and kept.past_exactly_unchanged
    assert kept.logits_exactly_unchanged[:position].all() and not kept.logits_exactly_unchanged[position]


@pytest.mark.skipif(not ONEDNN, reason=WHY_NOT or "no oneDNN")
def test_a_kept_run_of_one_path_is_never_compared_with_the_other():
    model = tiny_model()
    ids = ids_for(model)
    use("default")
    reference = residual_run(model, ids)
    use("onednn")
    diff = causal_edit_diff(model, ids, 10, (ids[10] + 1) % model.config.vocab_size, reference=reference, with_logits=False)
    assert not diff.reference_reused and diff.past_exactly_unchanged
    assert diff.original_run.matches(model, ids, "causal", model.config.n_layers, None)


@pytest.mark.parametrize("path", PATHS)
def test_the_head_split_check_holds_on_each_path(path):
    use(path)
    check = head_split_check(seed=4)
    # The lone head and head 0 of the layer share the projection (same path); only the attention differs.
    assert check.correct_difference <= 64 * FLOAT32_UNIT * float(np.abs(check.single_head_weights).max() + 1)
    assert check.wrong_difference > 1e-3


@pytest.mark.parametrize("path", PATHS)
def test_the_worked_head_and_the_kv_cache_proof_hold_on_each_path(path):
    from core.experiments.kv_cache import kv_cache_proof, logits_scale
    from core.experiments.worked_head import worked_head

    use(path)
    model = tiny_model("tiny-llama")
    ids = ids_for(model, 24)
    head = worked_head(model, ids, layer=1, head=2)
    assert head.equal, head.verdict
    proof = kv_cache_proof(model, ids, decode_steps=4)
    assert len(proof.steps) == 4
    assert proof.max_difference <= _depth_bound(model, torch.tensor(logits_scale(model, ids)), 1.0)
    assert kernels.current_choice().path == path


# ---- agreement between the paths ---------------------------------------------------------------------
def _depth_bound(model: Transformer, reference: torch.Tensor, x_scale: float) -> float:
    """Worst-case float32 rounding of the forward: per matmul in depth, K units of the largest |sum of terms|."""
    config = model.config
    widest = max(config.d_model, config.d_ff)
    matmuls_in_depth = 3 * config.n_layers + 1  # QKV or FFN up, the projection or FFN down ..., the head
    return matmuls_in_depth * widest * FLOAT32_UNIT * max(float(reference.abs().max()), x_scale)


@pytest.mark.skipif(not ONEDNN, reason=WHY_NOT or "no oneDNN")
@pytest.mark.parametrize("preset", ["tiny-gpt", "tiny-llama"])
def test_both_paths_give_the_float64_logits_within_float32_rounding(preset):
    model = tiny_model(preset)
    tokens = torch.tensor([ids_for(model, 40)])  # (1, T)
    with torch.inference_mode():
        exact = Transformer.from_seed(model.config, seed=3, dtype=torch.float64)(tokens)  # (1, T, V)
        logits = {}
        for path in kernels.KERNEL_PATHS:
            use(path)
            logits[path] = model(tokens).double()  # (1, T, V)
    bound = _depth_bound(model, exact, 1.0)
    for path, value in logits.items():
        assert float((value - exact).abs().max()) <= bound, path
    assert float((logits["onednn"] - logits["default"]).abs().max()) <= 2 * bound


def test_the_model_s_parameters_are_nn_linear_s_whatever_the_path():
    model = tiny_model()
    before = {name: tensor.clone() for name, tensor in model.state_dict().items()}
    for path in ["default"] + (["onednn"] if ONEDNN else []):
        use(path)
        with torch.inference_mode():
            model(torch.tensor([ids_for(model, 16)]))
        linears = [m for m in model.modules() if isinstance(m, nn.Linear)]
        assert len(linears) == 1 + 4 * model.config.n_layers  # the head, QKV, projection, FFN up and down
        state = model.state_dict()
        assert state.keys() == before.keys()
        assert all(torch.equal(state[name], before[name]) and state[name].dtype == torch.float32 for name in state)


@pytest.mark.parametrize("path", PATHS)
def test_training_takes_the_default_path_so_gradients_are_torch_s_own(path):
    model = tiny_model()
    tokens = torch.tensor([ids_for(model, 24)])  # (1, T)

    def gradients() -> dict[str, torch.Tensor]:
        model.zero_grad()
        loss = F.cross_entropy(model(tokens[:, :-1]).flatten(0, 1), tokens[0, 1:])
        loss.backward()
        return {name: p.grad.clone() for name, p in model.named_parameters()}

    use("default")
    expected = gradients()
    use(path)
    got = gradients()
    assert all(torch.equal(got[name], expected[name]) for name in expected)
    assert kernels.current_choice().path == path


# ---- falling back --------------------------------------------------------------------------------------
def test_a_failing_onednn_call_falls_back_to_the_default_path_with_its_reason(monkeypatch):
    def broken(x, weight, bias):
        raise RuntimeError("no primitive for this shape")

    monkeypatch.setattr(kernels, "onednn_linear", broken)
    use("onednn")
    x, w, b = torch.randn(3, 8), torch.randn(5, 8), torch.randn(5)
    with torch.inference_mode():
        out = kernels.linear(x, w, b)  # (3, 5)
    assert torch.equal(out, F.linear(x, w, b))
    choice = kernels.current_choice()
    assert choice.path == "default" and "no primitive for this shape" in choice.reason and choice.requested == "onednn"


def test_without_onednn_every_request_takes_the_default_path(monkeypatch, tmp_path):
    monkeypatch.setattr(torch.backends.mkldnn, "is_available", lambda: False)
    for requested in ("auto", "onednn"):
        choice = kernels.choose_kernels(requested, tmp_path / "kernels.json", measure=lambda: pytest.fail("measured"))
        assert choice.path == "default" and "no oneDNN" in choice.reason
    assert not (tmp_path / "kernels.json").exists()


def test_meta_tensors_and_other_dtypes_take_the_default_path(monkeypatch):
    monkeypatch.setattr(kernels, "onednn_linear", lambda *a: pytest.fail("oneDNN was called"))
    use("onednn")
    with torch.inference_mode():
        head = Transformer.on_meta(get_preset("gpt2-small")).head
        shapes = head(torch.zeros(1, 8, 768, device="meta"))  # (1, 8, V): the Tensor shapes panel's trace
        assert shapes.shape == (1, 8, 50257) and shapes.is_meta
        double = kernels.linear(torch.randn(2, 4, dtype=torch.float64), torch.randn(3, 4, dtype=torch.float64))
    assert double.dtype == torch.float64


# ---- measuring once per machine --------------------------------------------------------------------------
def test_auto_measures_once_per_machine_and_reads_the_cache_after(tmp_path):
    cache = tmp_path / "cache" / "kernels.json"
    calls = []

    def measure():
        calls.append(1)
        return {"default": 100.0, "onednn": 250.0}

    first = kernels.choose_kernels("auto", cache, measure)
    second = kernels.choose_kernels("auto", cache, measure)
    assert len(calls) == 1 and first.path == second.path == ("onednn" if ONEDNN else "default")
    if ONEDNN:
        assert second.rates == {"default": 100.0, "onednn": 250.0} and "earlier" in second.reason
        assert "2.50x" in second.label
        key = kernels.machine_key()
        assert key in read_cache(cache) and kernels.cpu_model() in key and torch.__version__ in key
        assert os.listdir(cache.parent) == ["kernels.json"]  # no temporary file left beside it
        assert any(line.startswith(f"kernels at {torch.get_num_threads()} thread") and "onednn" in line
                   for line in version_lines(cache))


@pytest.mark.skipif(not ONEDNN, reason=WHY_NOT or "no oneDNN")
def test_the_cache_is_keyed_by_thread_count(tmp_path):
    cache = tmp_path / "kernels.json"
    rates = iter([{"default": 300.0, "onednn": 200.0}, {"default": 100.0, "onednn": 200.0}])
    previous = torch.get_num_threads()
    try:
        torch.set_num_threads(1)
        one = kernels.choose_kernels("auto", cache, lambda: next(rates))
        torch.set_num_threads(2)
        two = kernels.choose_kernels("auto", cache, lambda: next(rates))
    finally:
        torch.set_num_threads(previous)
    assert (one.path, two.path) == ("default", "onednn")
    assert len(read_cache(cache)) == 2


@pytest.mark.skipif(not ONEDNN, reason=WHY_NOT or "no oneDNN")
@pytest.mark.parametrize("content", [b"{not json", b"[1, 2]", b'{"entries": {"k": {"path": "fast"}}}', b"\xff\xfe", b""])
def test_a_corrupt_cache_is_ignored_and_measured_again(tmp_path, content):
    cache = tmp_path / "kernels.json"
    cache.write_bytes(content)
    choice = kernels.choose_kernels("auto", cache, lambda: {"default": 100.0, "onednn": 101.0})
    assert choice.path == "default" and "measured now" in choice.reason
    assert json.loads(cache.read_text(encoding="utf-8"))["entries"][kernels.machine_key()]["path"] == "default"


@pytest.mark.skipif(not ONEDNN, reason=WHY_NOT or "no oneDNN")
def test_a_verdict_measured_on_a_busy_machine_is_measured_again_when_it_is_quieter(tmp_path, monkeypatch):
    cache = tmp_path / "kernels.json"
    calls = []

    def measure():
        calls.append(1)
        return {"default": 100.0, "onednn": 300.0 if len(calls) == 1 else 90.0}

    for load, measured in ((3.0, 1), (4.0, 1), (0.5, 2), (0.1, 2)):
        monkeypatch.setattr(kernels, "load_per_cpu", lambda load=load: load)
        choice = kernels.choose_kernels("auto", cache, measure)
        assert len(calls) == measured, load
    assert choice.path == "default"  # the quiet measurement replaced the busy one
    assert read_cache(cache)[kernels.machine_key()]["load_per_cpu"] == 0.5
    unknown = {"path": "onednn", "rates": {"default": 100.0, "onednn": 300.0}}  # no load recorded
    for load, measured in ((2.0, 2), (0.5, 3)):
        write_cache(cache, kernels.machine_key(), unknown)
        monkeypatch.setattr(kernels, "load_per_cpu", lambda load=load: load)
        kernels.choose_kernels("auto", cache, measure)
        assert len(calls) == measured, load


def test_onednn_must_win_by_the_margin():
    assert kernels.decide({"default": 100.0, "onednn": 100.0 * kernels.MARGIN * 0.99}) == "default"
    assert kernels.decide({"default": 100.0, "onednn": 100.0 * kernels.MARGIN * 1.01}) == "onednn"


@pytest.mark.skipif(not ONEDNN, reason=WHY_NOT or "no oneDNN")
def test_the_measurement_times_both_paths_on_lab_shapes():
    rates = kernels.measure_rates(repeats=1, shapes=((64, 96, 128),))
    assert set(rates) == set(kernels.KERNEL_PATHS) and all(rate > 0 for rate in rates.values())


def test_an_unwritable_cache_still_chooses(tmp_path):
    blocked = tmp_path / "file"
    blocked.write_text("x", encoding="utf-8")
    choice = kernels.choose_kernels("auto", blocked / "kernels.json", lambda: {"default": 100.0, "onednn": 500.0})
    assert choice.path == ("onednn" if ONEDNN else "default")
    if ONEDNN:
        assert "not cached" in choice.reason


def test_a_bad_kernel_name_is_one_line(monkeypatch):
    with pytest.raises(kernels.KernelError, match="--kernels expects auto, default, onednn"):
        kernels.requested_kernels("fastest")
    monkeypatch.setenv(kernels.KERNELS_ENV, "blas")
    with pytest.raises(kernels.KernelError, match=kernels.KERNELS_ENV):
        kernels.requested_kernels(None)
    assert kernels.choose_kernels("default").path == "default"


# ---- reduced precision --------------------------------------------------------------------------------
def test_reduced_precision_is_refused_where_it_would_not_be_native(monkeypatch):
    assert not kernels.check_precision(None, "cpu").active  # fp32 unless asked
    with pytest.raises(kernels.KernelError, match="CUDA only"):
        kernels.check_precision("fp16", "cpu")
    with pytest.raises(kernels.KernelError, match="not on mps"):
        kernels.check_precision("bf16", "mps")
    with pytest.raises(kernels.KernelError, match="--precision expects"):
        kernels.check_precision("int8", "cpu")
    monkeypatch.setattr(kernels, "cpu_has_native_bf16", lambda: False)
    with pytest.raises(kernels.KernelError, match="no native bf16"):
        kernels.check_precision("bf16", "cpu")
    _choice, precision = kernels.configure("default", "bf16", "cpu", strict=False)
    assert precision.requested == "fp32" and "no native bf16" in precision.message


@pytest.mark.skipif(not kernels.cpu_has_native_bf16(), reason="this CPU has no native bf16")
def test_bf16_rounds_the_products_keeps_fp32_parameters_and_exact_comparisons():
    model = tiny_model()
    ids = ids_for(model)
    tokens = torch.tensor([ids])  # (1, T)
    with torch.inference_mode():
        fp32 = model(tokens)  # (1, T, V)
        kernels.set_precision(kernels.check_precision("bf16", "cpu"))
        bf16 = model(tokens)  # (1, T, V)
    assert bf16.dtype == torch.float32 and not torch.equal(bf16, fp32)
    matmuls_in_depth = 3 * model.config.n_layers + 1
    relative = float((bf16 - fp32).norm() / fp32.norm())
    assert relative <= matmuls_in_depth * 2 * BF16_UNIT  # each product's two operands rounded to bf16
    assert all(p.dtype == torch.float32 for p in model.parameters())
    diff = causal_edit_diff(model, ids, 17, (ids[17] + 1) % model.config.vocab_size)
    assert diff.past_exactly_unchanged
    assert "bf16" in kernels.current_precision().label and "differ from fp32" in kernels.current_precision().label


@pytest.mark.skipif(not kernels.cpu_has_native_bf16(), reason="this CPU has no native bf16")
def test_a_rounded_weight_is_made_again_after_the_weight_changes_in_place():
    kernels.set_precision(kernels.check_precision("bf16", "cpu"))
    layer = nn.Linear(8, 4, bias=False)
    x = torch.randn(2, 8)
    with torch.no_grad():
        first = kernels.linear(x, layer.weight)  # (2, 4)
        layer.weight.mul_(2)
        second = kernels.linear(x, layer.weight)  # (2, 4)
    assert torch.allclose(second, 2 * first, rtol=4 * BF16_UNIT, atol=0)


def test_run_key_names_the_path_and_precision():
    use("default")
    assert kernels.run_key() == ("default", "fp32")
    if ONEDNN:
        use("onednn")
        assert kernels.run_key() == ("onednn", "fp32")
