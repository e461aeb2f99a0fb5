"""Patching, direct effects and attention read from a `transformers` model with plain forward hooks.

Written against transformers' own module tree (GPT2LMHeadModel, LlamaForCausalLM), independent of
the lab's hook points and interventions: the figures the lab computes on the imported model are
checked against these.
"""

from __future__ import annotations

import torch


def _parts(model):
    """(blocks, attention name, mlp name, the attention's output projection name, final norm, lm head)."""
    if hasattr(model, "transformer"):
        return model.transformer.h, "attn", "mlp", "c_proj", model.transformer.ln_f, model.lm_head
    return model.model.layers, "self_attn", "mlp", "o_proj", model.model.norm, model.lm_head


def _replace_first(output, fn):
    if isinstance(output, tuple):
        return (fn(output[0]), *output[1:])
    return fn(output)


def _first(output):
    return output[0] if isinstance(output, tuple) else output


def metric(model, ids, answer, foil) -> float:
    with torch.no_grad():
        logits = model(torch.tensor([ids])).logits[0, -1]  # (V,)
    return float(logits[answer] - logits[foil])


def _site_module(model, site, layer):
    blocks, attn, mlp, proj, _norm, _head = _parts(model)
    block = blocks[layer]
    if site == "resid_pre":
        return block, "pre"
    if site == "attn_out":
        return getattr(block, attn), "out"
    if site == "mlp_out":
        return getattr(block, mlp), "out"
    return getattr(getattr(block, attn), proj), "pre"  # head: the heads' concatenated outputs entering W_O


def _capture(model, ids, module, where):
    seen = {}

    def pre(_m, args, kwargs):
        seen["x"] = (args[0] if args else kwargs["hidden_states"]).detach().clone()

    def post(_m, _args, output):
        seen["x"] = _first(output).detach().clone()

    handle = module.register_forward_pre_hook(pre, with_kwargs=True) if where == "pre" else module.register_forward_hook(post)
    try:
        with torch.no_grad():
            model(torch.tensor([ids]))
    finally:
        handle.remove()
    return seen["x"]


def patching_map(model, clean, corrupt, answer, foil, site) -> torch.Tensor:
    """(L, T) or (L, H): one full corrupted forward per cell with one activation set to the clean run's."""
    blocks = _parts(model)[0]
    n_heads = model.config.num_attention_heads
    columns = len(clean) if site != "head" else n_heads
    values = torch.zeros(len(blocks), columns, dtype=torch.float64)
    for layer in range(len(blocks)):
        module, where = _site_module(model, site, layer)
        clean_value = _capture(model, clean, module, where)  # (1, T, D) or (1, T, H*d)
        for column in range(columns):

            def swap(x, column=column):
                x = x.clone()
                if site == "head":
                    d_head = x.shape[-1] // n_heads
                    cut = slice(column * d_head, (column + 1) * d_head)
                    x[:, :, cut] = clean_value[:, :, cut]
                else:
                    x[:, column] = clean_value[:, column]
                return x

            if where == "pre":
                def pre(_m, args, kwargs, swap=swap):
                    if args:
                        return (swap(args[0]), *args[1:]), kwargs
                    return args, {**kwargs, "hidden_states": swap(kwargs["hidden_states"])}

                handle = module.register_forward_pre_hook(pre, with_kwargs=True)
            else:
                handle = module.register_forward_hook(lambda _m, _a, output, swap=swap: _replace_first(output, swap))
            try:
                values[layer, column] = metric(model, corrupt, answer, foil)
            finally:
                handle.remove()
    return values


@torch.no_grad()
def head_direct_effects(model, ids, answer, foil) -> tuple[torch.Tensor, float]:
    """((L, H) each head's share of the last position's answer-minus-foil logit, the model's own difference)."""
    blocks, attn, _mlp, proj, norm, head = _parts(model)
    n_heads = model.config.num_attention_heads
    inputs = {}
    handles = [getattr(getattr(block, attn), proj).register_forward_pre_hook(
        lambda _m, args, layer=layer: inputs.__setitem__(layer, args[0].detach())) for layer, block in enumerate(blocks)]
    handles.append(norm.register_forward_pre_hook(lambda _m, args: inputs.__setitem__("final", args[0].detach())))
    try:
        with torch.no_grad():
            logits = model(torch.tensor([ids])).logits[0, -1]  # (V,)
    finally:
        for handle in handles:
            handle.remove()
    direction = (head.weight[answer] - head.weight[foil]).double()  # (D,)
    stream = inputs["final"][0, -1].double()  # (D,)
    layer_norm = isinstance(norm, torch.nn.LayerNorm)
    if layer_norm:
        scale = 1 / torch.sqrt(stream.var(unbiased=False) + norm.eps)
    else:
        scale = 1 / torch.sqrt((stream * stream).mean() + norm.variance_epsilon)
    effects = torch.zeros(len(blocks), n_heads, dtype=torch.float64)
    for layer, block in enumerate(blocks):
        projection = getattr(getattr(block, attn), proj)
        z = inputs[layer][0, -1].double()  # (H*d,)
        d_head = z.shape[0] // n_heads
        for h in range(n_heads):
            cut = slice(h * d_head, (h + 1) * d_head)
            if layer_norm:  # GPT-2's Conv1D: out = x @ W, W of shape (in, out)
                write = z[cut] @ projection.weight[cut].double()  # (D,)
                write = write - write.mean()
            else:  # nn.Linear: out = x @ W.T, W of shape (out, in)
                write = projection.weight[:, cut].double() @ z[cut]  # (D,)
            effects[layer, h] = float((write * scale * norm.weight.double()) @ direction)
    return effects, float(logits[answer] - logits[foil])


def attention_patterns(model, ids) -> torch.Tensor:
    """(L, H, T, T) attention weights, as transformers returns them with output_attentions."""
    with torch.no_grad():
        out = model(torch.tensor([ids]), output_attentions=True)
    return torch.stack([a[0] for a in out.attentions]).double()
