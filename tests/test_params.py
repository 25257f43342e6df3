"""Params: defaults of the paper, validation with a fix in the message, JSON form; json_ready."""

from __future__ import annotations

import datetime
import json
import math
from fractions import Fraction

import numpy as np
import pytest

from analysis.estimators.common import json_ready
from analysis.params import DEFAULT_PARAMS, Params, ParamsError


def test_paper_defaults():
    p = DEFAULT_PARAMS
    assert (p.alpha, p.min_pairs, p.threshold_partial, p.threshold_full) == (0.05, 4, 0.5, 1.0)
    assert (p.rescue_cutoff, p.borderline_margin, p.effect_cuts) == (0.5, 0.02, (0.0, 0.10, 0.20))
    # 0.40 .. 0.60 in steps of 0.01, computed in decimals: 21 cutoffs, exact end points.
    sweep = p.rescue_sweep()
    assert len(sweep) == 21 and sweep[0] == 0.40 and sweep[10] == 0.50 and sweep[-1] == 0.60


@pytest.mark.parametrize("change, field", [
    ({"alpha": 0.0}, "alpha"), ({"alpha": 1.5}, "alpha"), ({"min_pairs": 0}, "min_pairs"),
    ({"threshold_partial": 1.2}, "threshold_partial"), ({"bootstrap_method": "bc"}, "bootstrap_method"),
    ({"rescue_sweep_start": 0.7}, "rescue_sweep_start"), ({"secondary_pairs": (("q", "q"),)}, "secondary_pairs"),
])
def test_invalid_values_name_the_field(change, field):
    with pytest.raises(ParamsError, match=f"Params.{field}"):
        DEFAULT_PARAMS.replace(**change)


def test_frozen_and_json_ready():
    with pytest.raises(AttributeError):
        DEFAULT_PARAMS.alpha = 0.1  # type: ignore[misc]
    d = DEFAULT_PARAMS.to_dict()
    assert json.loads(json.dumps(d)) == d and d["secondary_pairs"] == [["q", "m"], ["j", "t"]]
    assert Params(**{k: (tuple(tuple(x) if isinstance(x, list) else x for x in v)
                         if isinstance(v, list) else v) for k, v in d.items()}) == DEFAULT_PARAMS


def test_json_ready_conversions():
    out = json_ready({"nan": math.nan, "inf": np.float64("inf"), "frac": Fraction(1, 4),
                      "i": np.int64(3), "date": datetime.date(2026, 1, 28), "t": (1, 2.5)})
    assert out == {"nan": None, "inf": None, "frac": 0.25, "i": 3, "date": "2026-01-28", "t": [1, 2.5]}
    assert type(out["i"]) is int
    with pytest.raises(TypeError, match="json_ready cannot convert"):
        json_ready(object())
