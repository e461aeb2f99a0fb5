"""The lab's named choices and the words the app shows for them, defined once.

Torch-free like core/display.py, so the GUI thread may import it: the combo boxes, legends and
tooltips read these names, and core.model and core.experiments use the same tuples.
"""

from __future__ import annotations

from typing import Literal, get_args

from core.config import Positional

# ---- self-attention masks ------------------------------------------------------------------------
MaskMode = Literal["causal", "none", "off-by-one", "after-softmax"]
MASK_MODES: tuple[str, ...] = get_args(MaskMode)

# The mask combo's display names: the two pitfalls say what they do, not only their name.
MASK_MODE_LABELS: dict[str, str] = {
    "causal": "causal",
    "none": "none (bidirectional)",
    "off-by-one": "off-by-one (diag=0)",
    "after-softmax": "after the softmax",
}

# What each mask mode is, in one sentence, for legends and tooltips.
MASK_MODE_DESCRIPTIONS: dict[str, str] = {
    "causal": "each token sees itself and the tokens before it (triu diagonal=1 masked before the softmax)",
    "none": "no mask: every token sees every token, the future included",
    "off-by-one": "pitfall: triu diagonal=0 also hides each token from itself; token 0 sees nothing (NaN)",
    "after-softmax": "pitfall: the future is zeroed after the softmax, so it already shaped the denominator",
}

# The masks a training run can use. Off-by-one is not one: it hides token 0 from every key, its softmax
# is 0/0, and the NaN reaches every position in the next layer, so no step could be taken.
TRAIN_MASK_MODES: tuple[str, ...] = tuple(mode for mode in MASK_MODES if mode != "off-by-one")

# ---- positional encodings --------------------------------------------------------------------------
POSITIONAL_ENCODINGS: tuple[str, ...] = get_args(Positional)

# How a model's positional field reads in a sentence ("RoPE positions", "no positions").
POSITIONAL_DISPLAY_NAMES: dict[str, str] = {
    "rope": "RoPE",
    "alibi": "ALiBi",
    "learned": "learned",
    "sinusoidal": "sinusoidal",
    "none": "no",
}

# The permutation experiment runs these, in this order (ALiBi joins only for a model that uses it).
PERMUTATION_ENCODINGS: tuple[str, ...] = ("none", "sinusoidal", "learned", "rope")

# Legend captions of the permutation experiment: how each encoding enters the layer.
PERMUTATION_ENCODING_CAPTIONS: dict[str, str] = {
    "none": "no encoding",
    "sinusoidal": "sinusoidal (added)",
    "learned": "learned (random, untrained)",
    "rope": "RoPE (rotates q, k)",
}

__all__ = [
    "MASK_MODES",
    "MASK_MODE_DESCRIPTIONS",
    "MASK_MODE_LABELS",
    "PERMUTATION_ENCODINGS",
    "TRAIN_MASK_MODES",
    "PERMUTATION_ENCODING_CAPTIONS",
    "POSITIONAL_DISPLAY_NAMES",
    "POSITIONAL_ENCODINGS",
    "MaskMode",
]
