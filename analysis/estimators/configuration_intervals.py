"""Per-configuration intervals of the paired effect: a t interval over one configuration's pair differences.

Methods note. A panel configuration's effect (analysis.estimators.paired) is the mean over its complete pairs of
treatment minus control recall, d_i = (passed_t - passed_c) / T. Its interval here is the one-sample t interval
mean(d) +/- t(1 - alpha/2, n - 1) sd(d) / sqrt(n) over those n pair differences, clipped to [-1, 1] (a recall
difference cannot leave it). It treats the repeats of one configuration as independent draws, which they
are by design (one repeat is one fresh run of both arms); it says nothing about other configurations. With
one pair, or when every pair differs by the same amount, it is not estimable (analysis.estimators.estimable:
the reason says which), never the degenerate interval [d, d]. Ours, not the paper's: the paper
gives no interval per configuration. Reference: any one-sample t interval (scipy.stats.t.interval).
"""

from __future__ import annotations

import datetime
from dataclasses import dataclass

import polars as pl

from analysis.estimators.common import Contrast, scenario_total, t_interval
from analysis.estimators.paired import RUN_KEY, complete_pairs, run_outcomes

METHOD = "t interval over the configuration's within-repeat pair differences (n − 1 df), clipped to [−1, 1]"
"""The method in words, as the figure's legend and any table name it."""


@dataclass(frozen=True, slots=True)
class ConfigurationIntervals:
    """Per-configuration intervals of the paired effect (one row per panel configuration)."""

    level: float
    """Coverage, 1 - alpha."""
    method: str
    """The method in words (METHOD)."""
    frame: pl.DataFrame
    """Columns configuration, execution_group, pairs, effect, lo, hi, reason ("" when lo and hi are numbers;
    lo and hi NaN otherwise), sorted by configuration."""


def configuration_intervals(rows: pl.DataFrame, window_runs: pl.DataFrame, contrast: Contrast,
                            alpha: float) -> ConfigurationIntervals:
    """The t interval of each configuration's paired effect over its complete pairs in ``window_runs`` (the
    partition runs of the panel: in the recency window), at level 1 - alpha."""
    run_rows = run_outcomes(rows, window_runs, contrast)
    total = scenario_total(run_rows, contrast.scenario) or 1
    pairs = complete_pairs(run_rows, contrast).with_columns(
        ((pl.col("treatment_passed") - pl.col("control_passed")).cast(pl.Float64) / total).alias("d"))
    out = []
    for key in pairs.select(*RUN_KEY).unique().sort(*RUN_KEY).iter_rows():
        conf, group = key
        d = pairs.filter((pl.col("configuration") == conf) & (pl.col("execution_group") == group)) \
            .get_column("d").to_numpy().astype(float)
        lo, hi, why = t_interval(d, alpha)
        if not why:
            lo, hi = max(-1.0, lo), min(1.0, hi)
        out.append({"configuration": conf, "execution_group": group, "pairs": int(d.size),
                    "effect": float(d.mean()), "lo": lo, "hi": hi, "reason": why or ""})
    schema = {"configuration": pl.String, "execution_group": pl.String, "pairs": pl.Int64, "effect": pl.Float64,
              "lo": pl.Float64, "hi": pl.Float64, "reason": pl.String}
    return ConfigurationIntervals(1.0 - alpha, METHOD, pl.DataFrame(out, schema=schema, orient="row")
                                  if out else pl.DataFrame(schema=schema))


def in_window(runs: pl.DataFrame, recency_cutoff: datetime.date) -> pl.DataFrame:
    """The partition runs the panel reads: published on or after the recency cutoff."""
    return runs.filter(pl.col("published") >= recency_cutoff)


__all__ = ["METHOD", "ConfigurationIntervals", "configuration_intervals", "in_window"]
