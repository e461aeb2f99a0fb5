"""Greedy decoding with cross-attention: the choices equal a greedy loop written here, the maps equal attention
weights recomputed here from q and k, and a Marian model agrees with transformers' own decoder."""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch
import torch.nn.functional as F

from core.checkpoints import resolve_checkpoint
from core.experiments.cross_attention import DecodeError, greedy_decode, seq2seq_problem, special_ids
from core.objectives.seq2seq import END, START
from core.presets import get_preset
from tests import family_models

SOURCE = "5 March 2021"


@pytest.fixture(scope="module")
def model():
    return family_models.encoder_decoder(seed=2)


def hand_greedy(forward, source: list[int], start: int, end: int, steps: int) -> list[int]:
    """Append the argmax of the last position's logits until END or `steps` choices."""
    decoder_input, produced = [start], []
    for _ in range(steps):
        choice = int(forward(decoder_input, source).argmax())
        produced.append(choice)
        if choice == end:
            break
        decoder_input.append(choice)
    return produced


def cross_weights_from_q_and_k(model, decoder_input: list[int], source: list[int]) -> list[torch.Tensor]:
    """Each layer's cross-attention weights (H, N, S), from the stream entering cross-attention and the encoder's
    output, captured with plain forward hooks, then norm, projections and softmax written out here."""
    captured: dict[str, torch.Tensor] = {}
    names = ["hook_encoder_out", *(f"blocks.{i}.hook_resid_mid" for i in range(model.config.n_layers))]
    handles = [model.get_submodule(name).register_forward_hook(
        lambda _m, _i, out, name=name: captured.__setitem__(name, out.detach())) for name in names]
    try:
        with torch.no_grad():
            model(torch.tensor([decoder_input]), source=torch.tensor([source]))
    finally:
        for handle in handles:
            handle.remove()
    c = model.config
    d, heads = c.d_model, c.n_heads
    memory = captured["hook_encoder_out"][0].double()  # (S, D)
    maps = []
    parameters = {name: value.detach().double() for name, value in model.named_parameters()}
    for i in range(c.n_layers):
        block = {name.removeprefix(f"blocks.{i}."): value for name, value in parameters.items()
                 if name.startswith(f"blocks.{i}.")}
        stream = captured[f"blocks.{i}.hook_resid_mid"][0].double()  # (N, D)
        normed = F.layer_norm(stream, (d,), block["norm_cross.weight"], block["norm_cross.bias"], c.norm_eps)
        q = normed @ block["cross_attn.q_proj.weight"].T + block["cross_attn.q_proj.bias"]  # (N, D)
        k = (memory @ block["cross_attn.kv_proj.weight"].T + block["cross_attn.kv_proj.bias"])[:, :d]  # (S, D)
        q = q.reshape(-1, heads, d // heads).transpose(0, 1)  # (H, N, dh)
        k = k.reshape(-1, heads, d // heads).transpose(0, 1)  # (H, S, dh)
        maps.append(torch.softmax(q @ k.transpose(-2, -1) / math.sqrt(d // heads), dim=-1))  # (H, N, S)
    return maps


def test_greedy_choices_and_cross_maps_against_the_test_s_own(model):
    tokenizer = family_models.date_tokenizer()
    start, end = special_ids(tokenizer)
    assert (start, end) == (tokenizer.id_of(START), tokenizer.id_of(END))
    source = tokenizer.encode(SOURCE)
    result = greedy_decode(model, source, start, end, max_new=9, top_k=4, tokenizer=tokenizer)

    def forward(decoder_input, src):
        with torch.no_grad():
            return model(torch.tensor([decoder_input]), source=torch.tensor([src]))[0, -1]  # (V,)

    expected = hand_greedy(forward, source, start, end, 9)
    assert list(result.generated) == expected
    assert result.decoder_input == tuple([start, *expected][: len(expected)])
    n, s = len(expected), len(source)
    assert result.cross_attention.shape == (model.config.n_layers, model.config.n_heads, n, s)
    maps = cross_weights_from_q_and_k(model, list(result.decoder_input), source)
    for layer, weights in enumerate(maps):
        # Each row was computed in its own step's run (shorter sequences): equal up to float32 rounding.
        np.testing.assert_allclose(result.cross_attention[layer], weights.numpy(), rtol=0, atol=1e-6)
    np.testing.assert_allclose(result.cross_attention.sum(axis=-1), 1.0, atol=1e-5)
    # Each step's top-k is the softmax of that step's last logits.
    probabilities = torch.softmax(forward(list(result.decoder_input[:3]), source).double(), dim=-1)
    top = probabilities.topk(4)
    assert result.top_ids[2].tolist() == top.indices.tolist()
    np.testing.assert_allclose(result.top_probabilities[2], top.values.numpy(), atol=1e-6)
    assert result.top_ids[2][0] == result.generated[2]


def test_decoding_stops_after_end():
    tokenizer = family_models.date_tokenizer()
    start, end = special_ids(tokenizer)
    model = family_models.encoder_decoder(seed=0, head_bias=True)
    with torch.no_grad():
        model.head.bias[end] = 50.0  # END is every step's choice
    result = greedy_decode(model, tokenizer.encode(SOURCE), start, end, max_new=20, tokenizer=tokenizer)
    assert result.generated == (end,) and result.finished and result.output == ()
    assert result.decoder_input == (start,) and result.cross_attention.shape[2] == 1


def test_a_marian_model_decodes_as_transformers_does(tmp_path):
    transformers = pytest.importorskip("transformers")
    from tests.encoder_folders import VOCAB, marian_folder

    folder = marian_folder(tmp_path / "marian")
    loaded = resolve_checkpoint(str(folder))
    reference = transformers.MarianMTModel.from_pretrained(str(folder), attn_implementation="eager").eval()
    source = [5, 17, 40, 99, 150, 0]
    start, end = VOCAB - 1, 0  # decoder_start_token_id (the pad) and eos, as the folder's config says
    result = greedy_decode(loaded.model, source, start, end, max_new=6, top_k=3)

    def forward(decoder_input, src):
        with torch.no_grad():
            return reference(input_ids=torch.tensor([src]), decoder_input_ids=torch.tensor([decoder_input])).logits[0, -1]

    assert list(result.generated) == hand_greedy(forward, source, start, end, 6)
    with torch.no_grad():
        out = reference(input_ids=torch.tensor([source]), decoder_input_ids=torch.tensor([list(result.decoder_input)]),
                        output_attentions=True)
    for layer, weights in enumerate(out.cross_attentions):  # (1, H, N, S) each
        np.testing.assert_allclose(result.cross_attention[layer], weights[0].numpy(), rtol=0, atol=1e-5)


def test_refusals_say_why(model):
    assert "load an encoder-decoder" in seq2seq_problem(get_preset("tiny-gpt"))
    assert seq2seq_problem(model.config) == ""
    with pytest.raises(DecodeError, match="no START token"):
        special_ids(family_models.shakespeare_tokenizer())
    tokenizer = family_models.date_tokenizer()
    start, end = special_ids(tokenizer)
    with pytest.raises(DecodeError, match="no cross-attention"):
        greedy_decode(family_models.encoder(), [1, 2], 0, 1, 3)
    with pytest.raises(DecodeError, match="exceed the decoder's context"):
        greedy_decode(model, tokenizer.encode(SOURCE), start, end, max_new=model.config.context_length + 1)
    empty = greedy_decode(model, tokenizer.encode(SOURCE), start, end, max_new=0)
    assert empty.steps == 0 and empty.cross_attention.shape[2] == 0
