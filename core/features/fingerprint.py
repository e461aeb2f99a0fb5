"""A model's weights in one short string: an SAE or a lens records the weights it was trained on.

The same config with other weights (a fresh seed, a further trained copy) has other activations, so
an SAE or lens trained on one is refused on the other, not read as if it fitted.
"""

from __future__ import annotations

import hashlib

import torch


def weights_fingerprint(model) -> str:
    """sha256 (first 16 hex digits) of every parameter's float32 bytes, in state_dict order."""
    digest = hashlib.sha256()
    with torch.no_grad():
        for name, tensor in model.state_dict().items():
            digest.update(name.encode())
            digest.update(tensor.detach().to(torch.float32).contiguous().cpu().numpy().tobytes())
    return digest.hexdigest()[:16]


__all__ = ["weights_fingerprint"]
