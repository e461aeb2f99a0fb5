import pytest
import torch

from core.device import (
    DEVICE_ENV,
    DeviceError,
    MemoryBudgetError,
    available_devices,
    check_fits,
    choose_device,
    estimate_memory,
    format_bytes,
    run_with_cpu_fallback,
)
from core.params import parameter_breakdown
from core.presets import get_preset


def test_cpu_is_always_available_and_last():
    assert available_devices()[-1] == "cpu"


def test_environment_variable_overrides_the_default(monkeypatch):
    monkeypatch.setenv(DEVICE_ENV, "cpu")
    assert choose_device().device == torch.device("cpu")


def test_missing_accelerator_falls_back_with_a_message(monkeypatch):
    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)
    choice = choose_device("cuda")
    assert choice.device.type == "cpu"
    assert "CUDA is not available" in choice.message


def test_unknown_device_is_an_error():
    with pytest.raises(DeviceError, match="unknown device 'tpu'"):
        choose_device("tpu")


def test_out_of_memory_reruns_on_the_cpu():
    calls = []

    def run(device):
        calls.append(device.type)
        if device.type != "cpu":
            raise torch.OutOfMemoryError("CUDA out of memory. Tried to allocate 2.00 GiB")
        return 42

    result, message = run_with_cpu_fallback(run, torch.device("meta"))
    assert result == 42 and calls == ["meta", "cpu"]
    assert "ran out of memory" in message


def test_other_errors_are_not_swallowed():
    def run(device):
        raise ValueError("bad")

    with pytest.raises(ValueError):
        run_with_cpu_fallback(run, torch.device("meta"))


def test_memory_estimate_counts_weights_and_the_quadratic_attention_map():
    config = get_preset("gpt2-small")
    short = estimate_memory(config, batch=1, seq=128, mask_mode="after-softmax")
    long = estimate_memory(config, batch=1, seq=1024, mask_mode="after-softmax")
    assert short.weights == parameter_breakdown(config).total * 4
    assert long.attention_maps == 64 * short.attention_maps  # (T, T) grows with the square
    assert estimate_memory(config, batch=1, seq=1024).attention_maps == 0  # the fused kernel builds none
    one_map = 12 * 1024 * 1024 * 4  # (1, H, T, T) float32
    captured = estimate_memory(config, batch=1, seq=1024, captured_attention_layers=12)
    # The result's 12 maps, copied out layer by layer, beside one layer's scores and weights.
    assert captured.attention_maps == (12 + 2) * one_map


def test_a_run_that_will_not_fit_is_refused_with_the_estimate():
    estimate = estimate_memory(get_preset("mixtral-8x7b"), batch=8, seq=32768)
    with pytest.raises(MemoryBudgetError) as caught:
        check_fits(estimate, torch.device("cpu"))
    assert format_bytes(estimate.total) in str(caught.value)
    assert "weights" in str(caught.value)
    check_fits(estimate_memory(get_preset("tiny-gpt"), 1, 64), torch.device("cpu"))


def test_format_bytes():
    assert format_bytes(512) == "512 B"
    assert format_bytes(1536) == "1.5 KiB"
    assert format_bytes(3 * 1024**3) == "3.0 GiB"
