"""Test-wide settings: Qt runs offscreen, hypothesis is deterministic and sized for a 2-core machine."""

import locale
import os
import signal


def _utf8_locale_for_qt() -> None:
    """Qt needs a UTF-8 locale: given a missing one (LC_ALL=de_DE.UTF-8 not generated) or a non-UTF-8
    one it warns, which fails a test, and switches to C.UTF-8. Switch first, for the same outcome."""
    before = locale.setlocale(locale.LC_ALL)
    try:
        locale.setlocale(locale.LC_ALL, "")
        usable = "UTF-8" in locale.nl_langinfo(locale.CODESET).upper().replace("UTF8", "UTF-8")
    except (locale.Error, AttributeError):  # AttributeError: no nl_langinfo (Windows, where Qt does not check)
        usable = os.name != "posix"
    finally:
        locale.setlocale(locale.LC_ALL, before)
    if not usable:
        os.environ["LC_ALL"] = "C.UTF-8"


_utf8_locale_for_qt()
os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")
os.environ.setdefault("TRANSFORMER_EXPLORER_DEVICE", "cpu")
os.environ.setdefault("TRANSFORMER_EXPLORER_KERNELS", "default")  # no timing, nothing written to the user's cache

import pytest  # noqa: E402
import torch  # noqa: E402
from hypothesis import HealthCheck, settings  # noqa: E402

settings.register_profile(
    "lab",
    derandomize=True,
    deadline=None,
    max_examples=40,
    suppress_health_check=[HealthCheck.too_slow],
)
settings.load_profile("lab")


@pytest.fixture(autouse=True, scope="session")
def one_torch_thread():
    """The tests' tensors are tiny: a second intra-op thread only adds waits (20x on a busy 2-core machine)."""
    previous = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(previous)


@pytest.fixture(autouse=True)
def sigint_handler_kept():
    """A test that runs the launcher in this process lets it take Ctrl-C for "the rest of the process" (one line,
    exit 130): the handler the test found goes back, so later tests and the runner's own Ctrl-C see theirs."""
    before = signal.getsignal(signal.SIGINT)
    yield
    if signal.getsignal(signal.SIGINT) is not before:
        signal.signal(signal.SIGINT, before)


@pytest.hookimpl(trylast=True)  # after -m / -k have deselected
def pytest_collection_modifyitems(config, items):
    from tests.bundle import background_build

    background_build.start_for(config, items)


@pytest.hookimpl(optionalhook=True)
def pytest_configure_node(node):
    """pytest-xdist's controller: its workers share one bundle build."""
    from tests.bundle import background_build

    background_build.hand_to_worker(node.config, node.workerinput)


def pytest_unconfigure(config):
    from tests.bundle import background_build

    background_build.stop_for(config)
