"""Test-wide settings: Qt runs offscreen, hypothesis is deterministic and sized for a 2-core machine."""

import os

os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")
os.environ.setdefault("TRANSFORMER_EXPLORER_DEVICE", "cpu")

from hypothesis import HealthCheck, settings  # noqa: E402

settings.register_profile(
    "lab",
    derandomize=True,
    deadline=None,
    max_examples=40,
    suppress_health_check=[HealthCheck.too_slow],
)
settings.load_profile("lab")
