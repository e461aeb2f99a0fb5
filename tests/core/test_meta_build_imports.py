"""Building a model on the meta device runs no default initialisation that imports torch._dynamo.

torch's meta kernel for `normal_` (nn.Embedding's default init) imports torch._dynamo, sympy and more
(over 800 modules, seconds of the worker holding the interpreter's lock while the window waits for it);
`Transformer.from_seed` sets every weight itself. (A shape trace's meta forward still imports it: its
meta operators are Python references wrapped in torch._dynamo.disable.)
"""

from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
SCRIPT = textwrap.dedent(
    """
    import sys
    import torch
    from core.model import Transformer
    from core.presets import get_preset

    assert "torch._dynamo" not in sys.modules, "imported with torch itself"
    Transformer.from_seed(get_preset("tiny-gpt").replace(positional="learned"), seed=0)
    Transformer.on_meta(get_preset("gpt2-small"))
    print(sorted(name for name in ("torch._dynamo", "sympy") if name in sys.modules))
    """
)


def test_meta_builds_import_no_dynamo():
    result = subprocess.run([sys.executable, "-c", SCRIPT], cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "[]"


def test_seeded_embeddings_are_still_initialised():
    import torch

    from core.model import Transformer
    from core.presets import get_preset

    model = Transformer.from_seed(get_preset("tiny-gpt").replace(positional="learned"), seed=0)
    for table in (model.tok_emb.weight, model.pos_emb.weight):
        assert not table.is_meta
        assert 0.015 < table.std().item() < 0.025  # init_weights' N(0, 0.02), not an empty tensor's garbage
        assert torch.isfinite(table).all()
