"""The figures a view shows beside its main one, read back from the exported page in headless Chromium and checked
against torch written here: the RoPE pairs' rotations, the learned table and ALiBi maps, the Attribution heads map,
the router map and the sampling running total; and the one line a page shows where the view has no such figure.

The page keeps float32's 7 significant digits of each value, so each comparison allows half a unit of the 7th digit
plus float32 reordering at the figure's scale (the core and these tests sum float32 activations in other orders).
"""

from __future__ import annotations

import math
import re

import numpy as np
import pytest
import torch

from core.handouts.collect import ViewRequest, view_figures
from core.handouts.page import view_page, write_page
from core.lesson_runs import DEFAULT_TEXT
from tests.float32 import float32_tolerance
from tests.handouts.test_pages_in_browser import assert_no_console_errors_nor_network, open_page, wait_drawn

PAGE_DIGITS = 5e-7  # half a unit of the 7th significant digit, relative


def assert_page_close(shown, expected, scale: float) -> None:
    shown, expected = np.asarray(shown, dtype=np.float64), np.asarray(expected, dtype=np.float64)
    tolerance = PAGE_DIGITS * np.abs(expected) + float32_tolerance(scale)
    worst = np.abs(shown - expected) - tolerance
    assert (worst <= 0).all(), f"off by up to {float(np.max(np.abs(shown - expected))):.3g} at {np.argmax(worst)}"


@pytest.fixture(scope="module")
def bundled():
    from core.checkpoints import load_bundled

    cache = {}

    def get(name: str):
        if name not in cache:
            cache[name] = load_bundled(name)
        return cache[name]

    return get


def export(tmp_path, panel: str, settings: dict, loaded=None) -> object:
    from core.presets import PRESETS

    config = loaded.config if loaded is not None else PRESETS["tiny-gpt"]
    request = ViewRequest(panel, config, settings=settings, model=getattr(loaded, "model", None),
                          tokenizer=getattr(loaded, "tokenizer", None))
    return write_page(tmp_path / "page.html", view_page(panel, "", view_figures(request)))


def figures_on_page(browser, path) -> list[dict]:
    """Each figure element of the page: its id, its part, and its Vega-Lite spec as the page embeds it; every
    drawn figure is waited for."""
    open_page(browser, path)
    figures = browser.execute_script(
        "const data = JSON.parse(document.getElementById('handout-data').textContent);"
        "return [...document.querySelectorAll('[data-part]')].map(e => ({id: e.id, part: e.dataset.part, "
        "note: e.classList.contains('figure-note') ? e.textContent : null, spec: data.specs[e.id] || null}));")
    for figure in figures:
        if figure["spec"] is not None:
            assert wait_drawn(browser, figure["id"]) > 0, figure["part"]
    assert_no_console_errors_nor_network(browser)
    return figures


def spec_titled(figures: list[dict], part: str, starts: str = "") -> dict:
    found = [f["spec"] for f in figures if f["part"] == part and f["spec"] is not None
             and _title(f["spec"]).startswith(starts)]
    assert len(found) == 1, (part, [f["part"] for f in figures])
    return found[0]


def _title(spec: dict) -> str:
    title = spec.get("title", "")
    return " ".join(title["text"]) if isinstance(title, dict) else title


def test_the_rope_page_rotates_each_pair_of_q_and_k_as_torch_does(browser, tmp_path):
    figures = figures_on_page(browser, export(tmp_path, "Positions", {}))
    spec = spec_titled(figures, "arrow_plot")
    assert "seed 0, d 8" in _title(spec) and "base 10000" in _title(spec)
    generator = np.random.RandomState(0)  # the reading's script: np.random.seed(0); q, k = randn(8), randn(8)
    vectors = {"q": torch.from_numpy(generator.randn(8)), "k": torch.from_numpy(generator.randn(8))}
    rows = spec["data"]["values"]
    assert len(rows) == 2 * 128 * 4  # q and k, every position 0..127 the sliders reach, the 4 pairs of d = 8
    pair = torch.tensor([row["pair"] for row in rows])  # (N,)
    position = torch.tensor([row["pos"] for row in rows], dtype=torch.float64)  # (N,)
    angle = position * 10000.0 ** (-2.0 * pair.double() / 8)  # (N,)
    original = torch.stack([vectors[row["who"]].view(4, 2)[row["pair"]] for row in rows])  # (N, 2)
    even = original[:, 0] * torch.cos(angle) - original[:, 1] * torch.sin(angle)  # (N,)
    odd = original[:, 0] * torch.sin(angle) + original[:, 1] * torch.cos(angle)  # (N,)
    assert_page_close([row["x"] for row in rows], even, 3.0)
    assert_page_close([row["y"] for row in rows], odd, 3.0)
    assert {p["name"]: p["value"] for p in spec["params"]} == {"m": 3, "n": 1}  # the page's m and n, as the view's


def test_the_encodings_page_draws_the_models_learned_table_and_the_chosen_alibi_head(browser, tmp_path, bundled):
    loaded = bundled("tiny-gpt")
    settings = {"tab": "Encodings", "alibi_heads": 8, "alibi_length": 12, "alibi_head": 2}
    figures = figures_on_page(browser, export(tmp_path, "Positions", settings, loaded))
    table = loaded.model.pos_emb.weight.detach().double()  # (P, d)
    spec = spec_titled(figures, "learned_map")
    assert "tiny-gpt: learned positions (256 x 128); every second position and dimension shown" in _title(spec)
    cells = spec["data"]["values"]
    every_second = [(r, c) for r in range(0, 256, 2) for c in range(0, 128, 2)]
    assert sorted((cell["r"], cell["c"]) for cell in cells) == every_second
    rows, columns = [cell["r"] for cell in cells], [cell["c"] for cell in cells]
    assert_page_close([cell["v"] for cell in cells], table[rows, columns], float(table.abs().max()))

    spec = spec_titled(figures, "alibi_map")
    assert "head 2" in _title(spec) and "T = 12" in _title(spec)
    slope = 2.0 ** (-8.0 * 3 / 8)  # head 2 of 8: the third of the geometric slopes 2^(-8/H), Press et al.
    cells = spec["data"]["values"]
    assert len(cells) == 12 * 12
    expected = [-slope * max(cell["r"] - cell["c"], 0) for cell in cells]  # causal: keys behind the query
    assert_page_close([cell["v"] for cell in cells], expected, 11 * slope)


def test_a_model_without_a_learned_table_says_so_in_one_line(browser, tmp_path, bundled):
    figures = figures_on_page(browser, export(tmp_path, "Positions", {"tab": "Encodings"}, bundled("tiny-llama")))
    learned = [figure for figure in figures if figure["part"] == "learned_map"]
    assert len(learned) == 1 and learned[0]["spec"] is None
    assert learned[0]["note"].startswith("tiny-llama uses RoPE positions, so it has no learned table.")
    assert "\n" not in learned[0]["note"]


def test_a_router_step_on_a_decoder_says_so_in_one_line(browser, tmp_path):
    from selenium.webdriver.common.by import By

    from core.handouts.collect import lesson_figures
    from core.handouts.page import lesson_page
    from core.lessons import Lesson, LessonStep

    steps = tuple(LessonStep(title="The router", text="Which expert reads each token?", panel="Families",
                             state={"preset": preset}, panel_settings={"tab": "Router"})
                  for preset in ("tiny-gpt", "tiny-moe"))
    lesson = Lesson("Router", "", steps)
    path = write_page(tmp_path / "router.html", lesson_page(lesson, lesson_figures(lesson)))
    open_page(browser, path)
    drawn = browser.find_elements(By.CSS_SELECTOR, "#step-2 [data-part]")
    assert [element.get_attribute("data-part") for element in drawn] == ["router_map", "load_plot"]
    section = browser.find_element(By.ID, "step-1")
    assert section.find_elements(By.CSS_SELECTOR, "[data-part]") == []  # no empty map, no empty bars
    note = section.find_element(By.CSS_SELECTOR, ".note").text
    assert "tiny-gpt, has a dense feed-forward network in every block: there is no router" in note
    assert "\n" not in note


def test_the_attribution_page_draws_each_heads_direct_effect_as_torch_splits_it(browser, tmp_path, bundled):
    loaded = bundled("tiny-gpt")
    model, config = loaded.model, loaded.config
    figures = figures_on_page(browser, export(tmp_path, "Causal lab", {"tab": "Attribution"}, loaded))
    tokens = torch.tensor([loaded.tokenizer.encode(DEFAULT_TEXT)])  # (1, T)
    heads_in, final_in = {}, {}
    hooks = [block.attn.out_proj.register_forward_pre_hook(
        lambda _module, args, layer=layer: heads_in.__setitem__(layer, args[0][0, -1].double()))
        for layer, block in enumerate(model.blocks)]
    hooks.append(model.final_norm.register_forward_pre_hook(
        lambda _module, args: final_in.__setitem__("x", args[0][0, -1].double())))
    try:
        with torch.no_grad():
            logits = model(tokens)[0, -1]  # (V,)
    finally:
        for hook in hooks:
            hook.remove()
    norm = model.final_norm
    assert isinstance(norm, torch.nn.LayerNorm)
    stream = final_in["x"]  # (D,) the last position's stream the final norm reads
    scale = 1.0 / math.sqrt(float(stream.var(unbiased=False)) + norm.eps)  # this run's scale, held fixed
    direction = model.head.weight[int(logits.argmax())].double() * norm.weight.double()  # (D,)
    expected = np.zeros((config.n_layers, config.n_heads))
    with torch.no_grad():
        _split_heads(model, config, heads_in, scale, direction, expected)
    cells = spec_titled(figures, "heads_map")["data"]["values"]
    assert len(cells) == config.n_layers * config.n_heads
    assert_page_close([cell["v"] for cell in cells], [expected[cell["r"], cell["c"]] for cell in cells],
                      float(np.abs(expected).max()))


def _split_heads(model, config, heads_in, scale: float, direction, expected: np.ndarray) -> None:
    """Each head's write (its slice of the concatenated heads times its columns of W_O) through the final LayerNorm
    with the run's scale held fixed, onto the answer's unembedding row: expected[layer, head]."""
    d_head = config.d_model // config.n_heads
    for layer in range(config.n_layers):
        w_out = model.blocks[layer].attn.out_proj.weight.double()  # (D, H * d_head)
        for head in range(config.n_heads):
            columns = slice(head * d_head, (head + 1) * d_head)
            part = w_out[:, columns] @ heads_in[layer][columns]  # (D,)
            expected[layer, head] = float(((part - part.mean()) * scale) @ direction)


def test_the_router_page_draws_the_chosen_layers_probabilities_as_torch_routes(browser, tmp_path, bundled):
    loaded = bundled("tiny-moe")
    model = loaded.model
    figures = figures_on_page(browser, export(tmp_path, "Families", {"tab": "Router", "router_layer": 1}, loaded))
    seen = {}
    hook = model.blocks[1].ffn.router.register_forward_hook(lambda _m, _args, out: seen.__setitem__("logits", out))
    try:
        with torch.no_grad():
            model(torch.tensor([loaded.tokenizer.encode(DEFAULT_TEXT)]))
    finally:
        hook.remove()
    logits = seen["logits"][0]  # (T, E)
    probabilities = torch.softmax(logits.double(), dim=-1)  # (T, E)
    spec = spec_titled(figures, "router_map")
    assert _title(spec).startswith("Router probabilities of layer 1")
    cells, circles = spec["layer"][0]["data"]["values"], spec["layer"][1]["data"]["values"]
    assert len(cells) == probabilities.numel()
    assert_page_close([cell["v"] for cell in cells], [probabilities[cell["c"], cell["r"]] for cell in cells], 1.0)
    chosen = logits.topk(model.config.top_k, dim=-1).indices  # (T, k)
    assert sorted((c["c"], c["r"]) for c in circles) == sorted(
        (position, int(expert)) for position, experts in enumerate(chosen) for expert in experts)


def test_the_sampling_page_draws_the_running_total_the_draw_walks(browser, tmp_path, bundled):
    from selenium.webdriver.common.by import By

    loaded = bundled("tiny-gpt")
    figures = figures_on_page(browser, export(tmp_path, "Generate", {}, loaded))
    with torch.no_grad():
        logits = loaded.model(torch.tensor([loaded.tokenizer.encode(DEFAULT_TEXT)]))[0, -1]  # (V,)
    probabilities = torch.softmax(logits.double(), dim=-1).numpy()  # (V,) T = 1, no cut-off: the defaults
    order = sorted(range(len(probabilities)), key=lambda token: (-probabilities[token], token))[:10]
    running = np.cumsum(probabilities[order])  # (10,)
    spec = spec_titled(figures, "sampling_plot", "Running total")
    points = spec["layer"][0]["data"]["values"]
    assert [point["x"] for point in points] == list(range(10))
    assert_page_close([point["y"] for point in points], running, 1.0)
    u = spec["layer"][1]["data"]["values"][0]["u"]
    drawn_rank = int(np.argmax(running > u)) + 1  # the first bar whose running total passes u
    draw = re.search(r"u = ([0-9.]+) lands on '.*' \(rank (\d+), ", browser.find_element(By.TAG_NAME, "body").text)
    assert draw is not None and abs(float(draw[1]) - u) <= 5e-7  # the draw quote prints u to 6 decimals
    assert int(draw[2]) == drawn_rank
