"""Short counts on the page never make two different counts look the same."""

from core.display import short_count, short_counts_apart
from core.params import parameter_breakdown
from core.presets import get_preset


def test_short_count_writes_the_prefix_at_the_asked_decimals():
    assert short_count(124_439_808) == "124.4M"
    assert short_count(124_439_808, 3) == "124.440M"
    assert short_count(999) == "999"


def test_gpt2_xl_tied_and_untied_are_told_apart():
    config = get_preset("gpt2-xl")
    tied = parameter_breakdown(config).total
    untied = parameter_breakdown(config.replace(tie_embeddings=not config.tie_embeddings)).total
    assert short_count(tied) == short_count(untied)  # the old caption's "1.6B instead of 1.6B"
    shown = short_counts_apart(tied, untied)
    assert shown[0] != shown[1]
    for text, count in zip(shown, (tied, untied)):  # each short form still rounds its own count
        assert abs(float(text[:-1]) * 1e9 - count) <= 0.5 * 10 ** (9 - (len(text) - text.index(".") - 2))


def test_equal_counts_stay_equal_and_far_apart_ones_keep_one_decimal():
    assert short_counts_apart(5_000_000, 5_000_000) == ["5.0M", "5.0M"]
    assert short_counts_apart(1_000_000, 2_000_000) == ["1.0M", "2.0M"]


def test_plural_agrees_with_its_count():
    from core.display import plural

    assert plural(1, "block") == "1 block"
    assert plural(12, "block") == "12 blocks"
    assert plural(0, "layer") == "0 layers"
    assert plural(2, "query", "queries") == "2 queries"
