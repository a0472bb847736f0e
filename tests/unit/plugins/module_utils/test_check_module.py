"""The check modules' shared start: number options held to bounds from a table, each refusal naming the option."""

import pytest

from ansible_collections.gpulab.cluster.plugins.module_utils.check_module import (
    AT_LEAST_1,
    NOT_NEGATIVE,
    POSITIVE,
    SHARE,
    between,
    out_of_bounds,
)

BOUNDS = {"steps": AT_LEAST_1, "threads": NOT_NEGATIVE, "min_gbps": POSITIVE, "ratio": SHARE, "dscp": between(0, 63)}
GOOD = {"steps": 1, "threads": 0, "min_gbps": 0.5, "ratio": 1, "dscp": 63}


@pytest.mark.parametrize(
    ("change", "message"),
    [
        ({"steps": 0}, "steps must be at least 1, got 0"),
        ({"threads": -1}, "threads must be 0 or more, got -1"),
        ({"min_gbps": 0.0}, "min_gbps must be greater than 0, got 0.0"),
        ({"ratio": 0}, "ratio must be in (0, 1], got 0"),
        ({"ratio": 1.01}, "ratio must be in (0, 1], got 1.01"),
        ({"dscp": 64}, "dscp must be 0-63, got 64"),
        ({"dscp": -1}, "dscp must be 0-63, got -1"),
    ],
)
def test_an_option_out_of_its_bound_is_named(change, message):
    assert out_of_bounds({**GOOD, **change}, BOUNDS) == message


def test_options_within_their_bounds_or_unset_pass():
    assert out_of_bounds(GOOD, BOUNDS) is None
    assert out_of_bounds({**GOOD, "min_gbps": None}, BOUNDS) is None


def test_the_first_option_out_of_bounds_is_the_one_named():
    assert out_of_bounds({**GOOD, "steps": 0, "dscp": 99}, BOUNDS) == "steps must be at least 1, got 0"
