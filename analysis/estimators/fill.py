"""Fill fraction and the exploratory threshold analysis (paper sections 4.6, 4.7.1 and 6).

Fill of a configuration is the mean, over its valid control-arm rows on the primary
scenario that record both lengths, of carried_chars / declared_chars (the paper's "j fill":
share of the declared 9,600-character ceiling used). With a constant declared ceiling this
equals mean carried / declared.

The threshold analysis reads per-configuration paired effects from a DataFrame with the
columns ``configuration, effect, control_mean, treatment_mean, pairs`` (see
``threshold_effects_frame``), so it does not depend on how the paired estimator is
implemented.
Everything here is exploratory: the covariate, direction, cut point and rescue rule were
chosen post hoc in the paper.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import polars as pl

from analysis.estimators.common import EstimatorInputError, require_columns, valid_outcome_rows
from analysis.estimators.correlation import Correlation, correlation
from analysis.params import DEFAULT_PARAMS, Params

EFFECT_COLUMNS = ("configuration", "effect", "control_mean", "treatment_mean", "pairs")
_TOL = 1e-12  # binary floating point slack for comparisons of ratios of integers


def fill_fractions(
    rows: pl.DataFrame,
    *,
    arm: str,
    scenario: str,
    runs: pl.DataFrame | None = None,
) -> pl.DataFrame:
    """Per-configuration fill: mean of carried/declared over valid `arm` rows of `scenario`.

    `runs` (columns configuration, execution_group) restricts rows to those runs, e.g. the
    partition runs of the study. Rows lacking carried_chars or declared_chars, or declaring
    0, are skipped. Returns columns configuration, fill, fill_rows, carried_mean.
    """
    require_columns(rows, ("configuration", "execution_group", "arm", "scenario", "valid",
                           "carried_chars", "declared_chars"), "rows")
    df = rows.filter(
        pl.col("valid")
        & (pl.col("arm") == arm)
        & (pl.col("scenario") == scenario)
        & pl.col("carried_chars").is_not_null()
        & pl.col("declared_chars").is_not_null()
        & (pl.col("declared_chars") > 0)
    )
    if runs is not None:
        df = df.join(runs.select("configuration", "execution_group").unique(),
                     on=["configuration", "execution_group"], how="semi")
    return (
        df.group_by("configuration")
        .agg(
            (pl.col("carried_chars").cast(pl.Float64) / pl.col("declared_chars").cast(pl.Float64))
            .mean()
            .alias("fill"),
            pl.len().cast(pl.Int64).alias("fill_rows"),
            pl.col("carried_chars").cast(pl.Float64).mean().alias("carried_mean"),
        )
        .sort("configuration")
    )


def threshold_effects_frame(
    configuration: Sequence[str] | pl.Series,
    effect: Sequence[float] | pl.Series,
    control_mean: Sequence[float] | pl.Series,
    treatment_mean: Sequence[float] | pl.Series,
    pairs: Sequence[int] | pl.Series,
) -> pl.DataFrame:
    """Build the per-configuration effects DataFrame the threshold analysis reads."""
    return pl.DataFrame(
        {
            "configuration": list(configuration),
            "effect": [float(v) for v in effect],
            "control_mean": [float(v) for v in control_mean],
            "treatment_mean": [float(v) for v in treatment_mean],
            "pairs": [int(v) for v in pairs],
        },
        schema={"configuration": pl.String, "effect": pl.Float64, "control_mean": pl.Float64,
                "treatment_mean": pl.Float64, "pairs": pl.Int64},
    )


@dataclass(frozen=True, slots=True)
class Separation:
    """Does fill separate two classes of configurations (high-fill class = `positive`)?"""

    positive: tuple[str, ...]
    """Configurations in the outcome class (rescued, or effect >= threshold), sorted by fill."""
    negative: tuple[str, ...]
    """Configurations outside it, sorted by fill."""
    positive_fills: tuple[float, ...]
    """Fills of the positive class, ascending."""
    negative_fills: tuple[float, ...]
    """Fills of the negative class, ascending."""
    margin: float
    """min(positive fill) - max(negative fill); <= 0 when the ranges touch or overlap; NaN if a class is empty."""
    separates: bool
    """True when every positive fill exceeds every negative fill (margin > 0)."""
    reason: str | None
    """Why the margin is NaN or why fill does not separate, else None."""


def _separation(frame: pl.DataFrame, flag: str) -> Separation:
    pos = frame.filter(pl.col(flag)).sort("fill")
    neg = frame.filter(~pl.col(flag)).sort("fill")
    pf = tuple(pos["fill"].to_list())
    nf = tuple(neg["fill"].to_list())
    if not pf or not nf:
        empty = "positive" if not pf else "negative"
        return Separation(tuple(pos["configuration"]), tuple(neg["configuration"]), pf, nf,
                          math.nan, False, f"no configuration in the {empty} class")
    margin = pf[0] - nf[-1]
    separates = margin > 0
    reason = None if separates else "fill ranges of the two classes overlap or touch"
    return Separation(tuple(pos["configuration"]), tuple(neg["configuration"]), pf, nf,
                      margin, separates, reason)


@dataclass(frozen=True, slots=True)
class RescueClassification:
    """Binary rescue rule at one failure cutoff: control < cutoff fails, treatment >= threshold rescues."""

    cutoff: float
    """Failure cutoff on the control mean."""
    rescue_threshold: float
    """Rescue threshold on the treatment mean."""
    failing: int
    """Failing configurations (with a fill) at this cutoff."""
    rescued: int
    """Failing configurations whose treatment mean reaches the rescue threshold."""
    separation: Separation
    """Fill separation of rescued versus not rescued among the failing."""


@dataclass(frozen=True, slots=True)
class GainCount:
    """Continuous-effect outcome in the failing subset: effect >= threshold."""

    threshold: float
    """Paired-effect threshold."""
    count: int
    """Failing configurations whose effect is >= threshold."""
    of: int
    """Failing configurations."""
    separation: Separation
    """Fill separation of (effect >= threshold) versus the rest."""


@dataclass(frozen=True, slots=True)
class FillAnalysis:
    """Fill versus paired effect over the panel and its failing subset (exploratory)."""

    fills: pl.DataFrame
    """Per-configuration fill joined to the effects.

    Columns: configuration, effect, control_mean, treatment_mean, pairs, fill, fill_rows.
    """
    cutoff: float
    """Failure cutoff used for the failing subset."""
    borderline: tuple[str, ...]
    """Configurations with |control_mean - cutoff| <= borderline margin."""
    missing_fill: tuple[str, ...]
    """Panel configurations without a fill (no valid control row recording both lengths); left out."""
    all: Correlation
    """Fill vs effect over all panel configurations with a fill."""
    all_excl_borderline: Correlation
    """The same without borderline configurations."""
    failing: Correlation
    """Fill vs effect over failing configurations (control_mean < cutoff)."""
    failing_excl_borderline: Correlation
    """The same without borderline configurations."""
    rescue: RescueClassification
    """Binary rescue classification at the cutoff."""
    rescue_excl_borderline: RescueClassification
    """Binary rescue classification at the cutoff, borderline configurations removed."""
    sweep: tuple[RescueClassification, ...]
    """Rescue classification at every cutoff of the sweep."""
    sweep_separates: bool
    """True when fill separates rescued from not rescued at every cutoff of the sweep."""
    gains: tuple[GainCount, ...]
    """Continuous-effect counts and separations in the failing subset."""


def _corr(frame: pl.DataFrame) -> Correlation:
    return correlation(frame["fill"].to_numpy(), frame["effect"].to_numpy(),
                       frame["configuration"].to_list())


def _rescue(frame: pl.DataFrame, cutoff: float, threshold: float) -> RescueClassification:
    failing = frame.filter(pl.col("control_mean") < cutoff - _TOL).with_columns(
        (pl.col("treatment_mean") >= threshold - _TOL).alias("_rescued")
    )
    sep = _separation(failing, "_rescued")
    return RescueClassification(cutoff, threshold, failing.height, int(failing["_rescued"].sum()), sep)


def fill_analysis(
    effects: pl.DataFrame,
    fills: pl.DataFrame,
    params: Params = DEFAULT_PARAMS,
) -> FillAnalysis:
    """Correlations, rescue classification, cutoff sweep and gain counts of fill vs effect.

    `effects`: one row per panel configuration (EFFECT_COLUMNS); `fills`: configuration, fill
    (e.g. from `fill_fractions`). Configurations of `effects` without a fill are listed in
    `missing_fill` and left out; fills of configurations outside `effects` are ignored.
    """
    require_columns(effects, EFFECT_COLUMNS, "effects")
    require_columns(fills, ("configuration", "fill"), "fills")
    if effects["configuration"].n_unique() != effects.height:
        raise EstimatorInputError("effects has a configuration more than once; pass one row per configuration.")
    keep = [c for c in fills.columns if c in ("configuration", "fill", "fill_rows")]
    joined = effects.select(EFFECT_COLUMNS).join(fills.select(keep), on="configuration", how="left")
    missing = tuple(sorted(joined.filter(pl.col("fill").is_null() | pl.col("fill").is_nan())["configuration"]))
    frame = joined.filter(pl.col("fill").is_not_null() & pl.col("fill").is_not_nan()).sort("configuration")
    cut = params.rescue_cutoff
    border = (pl.col("control_mean") - cut).abs() <= params.borderline_margin + _TOL
    borderline = tuple(sorted(frame.filter(border)["configuration"]))
    not_border = frame.filter(~border)
    failing = frame.filter(pl.col("control_mean") < cut - _TOL)
    failing_nb = failing.filter(~border)
    sweep = tuple(_rescue(frame, c, params.rescue_cutoff) for c in params.rescue_sweep())
    gains = []
    for t in params.effect_cuts:
        flagged = failing.with_columns((pl.col("effect") >= t - _TOL).alias("_gain"))
        gains.append(GainCount(t, int(flagged["_gain"].sum()), failing.height, _separation(flagged, "_gain")))
    return FillAnalysis(
        fills=frame,
        cutoff=cut,
        borderline=borderline,
        missing_fill=missing,
        all=_corr(frame),
        all_excl_borderline=_corr(not_border),
        failing=_corr(failing),
        failing_excl_borderline=_corr(failing_nb),
        rescue=_rescue(frame, cut, params.rescue_cutoff),
        rescue_excl_borderline=_rescue(not_border, cut, params.rescue_cutoff),
        sweep=sweep,
        sweep_separates=bool(sweep) and all(s.separation.separates for s in sweep),
        gains=tuple(gains),
    )



def fill_recall_correlation(
    rows: pl.DataFrame, *, arm: str, scenario: str, min_rows: int = 1
) -> tuple[pl.DataFrame, Correlation]:
    """Per-configuration fill against mean recall of one arm, over every configuration (paper 4.6).

    The paper's broader exploratory association ("undivided-arm fill and recall", 25 measured
    configurations, all sweeps): per configuration, fill = mean carried/declared and recall =
    mean recall over its valid `arm` rows of `scenario` with an outcome and both lengths; then
    Pearson and Spearman across configurations with at least `min_rows` such rows.
    Returns (configuration, fill, recall, rows) and the correlation.
    """
    require_columns(rows, ("carried_chars", "declared_chars", "checks_passed", "checks_total"), "rows")
    per = (
        valid_outcome_rows(rows, scenario, [arm])
        .filter(pl.col("carried_chars").is_not_null() & pl.col("declared_chars").is_not_null()
                & (pl.col("declared_chars") > 0))
        .group_by("configuration")
        .agg(
            (pl.col("carried_chars").cast(pl.Float64) / pl.col("declared_chars").cast(pl.Float64)).mean().alias("fill"),
            pl.col("recall").mean(),
            pl.len().cast(pl.Int64).alias("rows"),
        )
        .filter(pl.col("rows") >= min_rows)
        .sort("configuration")
    )
    return per, correlation(per["fill"].to_numpy(), per["recall"].to_numpy(), per["configuration"].to_list())
