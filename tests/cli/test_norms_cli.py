"""`norms`, `budget` and the comparison printer behind `params --compare`."""

import json
import math

import pytest

from core.cli import main
from core.cli.compare import print_comparison
from core.presets import get_preset
from tests.cli.helpers import run


def test_norms_prints_one_row_per_layer(capsys):
    code, out, err = run(capsys, "norms", "--depth", "3", "--placement", "post", "--norm", "rmsnorm", "--seed", "2")
    assert code == 0 and err == ""
    lines = out.splitlines()
    header = next(i for i, line in enumerate(lines) if line.startswith("layer"))
    rows = lines[header + 2 : header + 6]
    assert [row.split()[0] for row in rows] == ["0", "1", "2", "3"]
    assert float(rows[-1].split()[1]) == pytest.approx(math.sqrt(64), rel=1e-3)  # RMSNorm output: norm sqrt(d)


def test_norms_json_and_both_placements(capsys):
    code, out, _ = run(capsys, "norms", "--depth", "4", "--placement", "both", "--residual-scaling", "--json")
    data = json.loads(out)
    assert set(data) == {"pre", "post"}
    assert data["pre"]["residual_scaling"] is True
    assert len(data["post"]["forward_norms"]) == len(data["post"]["gradient_norms"]) == 5
    code, out, _ = run(capsys, "norms", "--depth", "2", "--json")
    assert json.loads(out)["placement"] == "pre"


def test_norms_prints_each_blocks_weight_gradient_beside_its_output(capsys):
    from core.experiments.norms import norm_curves

    code, out, _ = run(capsys, "norms", "--depth", "3", "--placement", "both", "--seed", "4")
    assert code == 0
    lines = out.splitlines()
    header = next(i for i, line in enumerate(lines) if line.startswith("layer"))
    assert "pre weight gradient" in lines[header] and "post weight gradient" in lines[header]
    rows = [row.split() for row in lines[header + 2 : header + 6]]
    assert rows[0][3] == rows[0][4] == rows[0][7] == rows[0][8] == "-"  # the embeddings belong to no block
    for placement, column in (("pre", 3), ("post", 7)):
        expected = norm_curves(3, placement, seed=4)
        printed = [float(row[column]) for row in rows[1:]]
        assert printed == pytest.approx(expected.parameter_gradient_norms.tolist(), abs=1e-6)  # 6 decimals printed
        printed = [float(row[column + 1]) for row in rows[1:]]
        assert printed == pytest.approx(expected.ffn_out_gradient_norms.tolist(), abs=1e-6)
    summaries = [line for line in lines if "; weight gradient of block 3 / block 1: " in line]
    assert len(summaries) == 2  # pre's, then post's
    for summary, placement in zip(summaries, ("pre", "post")):
        weights = norm_curves(3, placement, seed=4).parameter_gradient_norms
        printed = float(summary.rsplit(": ", 1)[1])
        assert printed == pytest.approx(weights[-1] / weights[0], abs=0.0051)  # 2 decimals printed

    code, out, _ = run(capsys, "norms", "--depth", "2", "--placement", "post", "--json")
    data = json.loads(out)
    assert len(data["parameter_gradient_norms"]) == 2
    assert data["parameter_gradient_norms"] == pytest.approx(
        norm_curves(2, "post").parameter_gradient_norms.tolist(), rel=1e-6)


def test_budget_prints_flops_weights_and_kv_cache(capsys):
    code, out, _ = run(capsys, "budget", "--preset", "llama3-8b")
    assert code == 0
    assert "131,072 B (128.0 KiB)" in out  # bf16 KV cache per token: 2 * 32 * 8 * 128 * 2 bytes
    code, out, _ = run(capsys, "budget", "--preset", "gpt2-small", "--seq", "256", "--json")
    data = json.loads(out)
    assert data["training_flops_per_token"] == 6 * data["active_params"]
    assert data["seq_len"] == 256


def test_print_comparison_is_exercise_six(capsys):
    assert print_comparison(get_preset("gpt2-small"), get_preset("gpt2-medium")) == 0
    out = capsys.readouterr().out
    share_row = next(line for line in out.splitlines() if line.startswith("FFN share of block params"))
    assert share_row.split()[-2:] == ["66.6%", "66.6%"]
    token_row = next(line for line in out.splitlines() if line.startswith("token embedding share"))
    assert token_row.split()[-2] == "31.0%"
    assert print_comparison(get_preset("gpt2-small"), get_preset("gpt2-medium"), as_json=True) == 0
    assert json.loads(capsys.readouterr().out)["b"]["n_layers"] == 24


@pytest.mark.parametrize(
    "argv",
    [
        ["norms", "--depth", "0"],
        ["norms", "--depth", "97"],
        ["norms", "--placement", "sideways"],
        ["norms", "--norm", "batchnorm"],
        ["norms", "--d-model", "30", "--heads", "4"],
        ["norms", "--seq", "1"],
        ["budget"],
        ["budget", "--preset", "gpt2-small", "--seq", "100000"],
        ["budget", "--preset", "no-such-model"],
    ],
)
def test_bad_input_is_one_line_and_exit_2(capsys, argv):
    try:
        code = main(argv)
    except SystemExit as exit_:  # argparse's own choice errors
        code = exit_.code
    _, err = capsys.readouterr()
    assert code == 2
    assert len(err.strip().splitlines()) == 1
    assert "Traceback" not in err


def test_norms_xavier_init_prints_the_ffn_output_gradients_core_measures(capsys):
    from core.experiments.norms import norm_curves

    code, out, _ = run(capsys, "norms", "--depth", "3", "--placement", "post", "--init", "xavier", "--d-model", "32",
                       "--json")
    assert code == 0
    data = json.loads(out)
    expected = norm_curves(3, "post", d_model=32, init="xavier")
    assert data["init"] == "xavier"
    assert data["ffn_out_gradient_norms"] == pytest.approx(expected.ffn_out_gradient_norms.tolist(), rel=1e-6)
    code, out, _ = run(capsys, "norms", "--depth", "2", "--init", "xavier", "--d-model", "32")
    assert code == 0 and "Xavier (Xiong et al.) init" in out and "W_FFN2 gradient of block 2 / block 1" in out


@pytest.mark.parametrize("arguments, message", [
    (["--init", "xavier", "--residual-scaling"], "residual scaling is part of GPT-2's initialisation"),
    (["--depth", "96", "--d-model", "1024"], "more than 60,000,000"),
    (["--d-model", "30"], "n_heads"),
])
def test_norms_refuses_bad_set_ups_in_words(capsys, arguments, message):
    code, _, err = run(capsys, "norms", *arguments)
    assert code != 0 and message in err and "Traceback" not in err
