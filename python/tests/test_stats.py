import math

import pytest

from tracecast_collector.stats import mad, median, percentile, summarize


def test_percentiles_interpolate_like_numpy():
    xs = [1.0, 2.0, 3.0, 4.0]
    assert median(xs) == 2.5
    assert percentile(xs, 0) == 1.0 and percentile(xs, 100) == 4.0
    # numpy.percentile([1,2,3,4], 10) == 1.3
    assert math.isclose(percentile(xs, 10), 1.3)
    assert math.isclose(percentile([5.0, 1.0, 3.0], 90), 4.6)


def test_mad_ignores_one_outlier():
    xs = [10.0, 10.1, 9.9, 10.0, 250.0]
    assert median(xs) == 10.0
    assert math.isclose(mad(xs), 0.1)


def test_summary_fields_and_order():
    s = summarize([12.0, 10.0, 11.0, 30.0, 10.5])
    assert s["steps"] == 5
    assert s["min"] <= s["p10"] <= s["median"] <= s["p90"] <= s["max"]
    assert s["median"] == 11.0 and s["max"] == 30.0


@pytest.mark.parametrize("bad", [[], [1.0, 0.0], [float("nan")], [-2.0]])
def test_summary_rejects_bad_samples(bad):
    with pytest.raises(ValueError):
        summarize(bad)


def test_percentile_range_checked():
    with pytest.raises(ValueError):
        percentile([1.0], 101)
