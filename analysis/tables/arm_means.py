"""Builders of the arm-mean tables (the paper's sections 4.1 to 4.6): cell means with denominators.

Methods note: every cell is a mean of exact recall over valid rows with an outcome, shown as
``mean (n=rows)`` because rows are effectively binary (a mean of four rows is a count of
four). Which runs a table reads is decided from the evidence itself (which arms ran together
in an execution group), never from configuration names typed here.
"""

from __future__ import annotations

from typing import Any

import polars as pl

from analysis.estimators.common import valid_outcome_rows
from analysis.estimators.fill import fill_fractions
from analysis.tables.context import ReportContext, cell_stats
from analysis.tables.declare import table
from analysis.tables.formatting import fmt_count_of, fmt_general, fmt_int, fmt_mean_n, fmt_num, fmt_pct, fmt_signed
from analysis.tables.labels import (
    ARM_LABELS,
    CEILING_ARMS,
    DESCRIBED_ARM,
    PLAIN_ARM,
    REDUCED_CEILING_ARM,
    SCENARIO_ARMS,
    SUPPORTING_ARMS,
    arm_label,
)
from analysis.tables.spec import TableSpec, display_frame, empty_table, if_marked


def _lookup(stats: pl.DataFrame, **keys: str) -> dict[str, Any] | None:
    cond = pl.lit(True)
    for k, v in keys.items():
        cond = cond & (pl.col(k) == v)
    hit = stats.filter(cond)
    return hit.row(0, named=True) if hit.height else None


@table(section="arms")
def supporting_arms(ctx: ReportContext) -> TableSpec:
    """Paper Table 1: mean recall per configuration and supporting arm on the primary scenario."""
    title = "Supporting arms: mean exact recall by configuration and arm (primary scenario)"
    rows = valid_outcome_rows(ctx.rows, scenario=ctx.study.scenario, arms=SUPPORTING_ARMS)
    # the supporting sweep: execution groups where a supporting arm other than the plain control ran
    sweeps = rows.filter(pl.col("arm") != PLAIN_ARM).select("configuration", "execution_group").unique()
    rows = rows.join(sweeps, on=["configuration", "execution_group"], how="semi")
    if rows.height == 0:
        return empty_table("t1_supporting_arms", title, ["model", *SUPPORTING_ARMS],
                           "no supporting sweep (an execution group with valid rows of "
                           f"{', '.join(a for a in SUPPORTING_ARMS if a != PLAIN_ARM)})")
    stats = cell_stats(rows, ["configuration", "arm"], ctx.threshold)
    arms = [a for a in SUPPORTING_ARMS if a in set(stats["arm"])]
    confs = sorted(set(stats["configuration"]))
    counts = {conf: set(stats.filter(pl.col("configuration") == conf)["rows"].to_list()) for conf in confs}
    shared_n = all(len(ns) == 1 for ns in counts.values())  # one n per model: a column, not a (n=…) per cell
    out = []
    for conf in confs:
        rec = {"model": conf}
        if shared_n:
            rec["n"] = str(next(iter(counts[conf])))
        for a in arms:
            hit = _lookup(stats, configuration=conf, arm=a)
            rec[a] = ("—" if not hit else fmt_num(hit["mean"]) if shared_n else fmt_mean_n(hit["mean"], hit["rows"]))
        out.append(rec)
    cols = ["model", *(["n"] if shared_n else []), *arms]
    legend = "; ".join(f"{a}, {ARM_LABELS[a]}" for a in arms if a in ARM_LABELS)
    return TableSpec("t1_supporting_arms", title, stats, display_frame(out, cols),
                     note=f"Arms: {legend}. Cells are means over valid rows with an outcome in the supporting "
                          f"sweeps (execution groups where a supporting arm other than {PLAIN_ARM} ran); n is the "
                          + ("row count of each arm of the model" if shared_n else "row count")
                          + ". Rows are effectively binary, so a mean stands for a small count."
                          + if_marked(out, " “—”: the arm did not run for that model."))


def _ladder_groups(ctx: ReportContext) -> pl.DataFrame:
    """(configuration, execution_group) pairs where control, treatment and the plain arm all ran."""
    study = ctx.study
    arms = (study.control, study.treatment, PLAIN_ARM)
    rows = valid_outcome_rows(ctx.rows, scenario=study.scenario, arms=arms)
    return (rows.group_by("configuration", "execution_group")
            .agg(pl.col("arm").n_unique().alias("k")).filter(pl.col("k") == len(set(arms)))
            .select("configuration", "execution_group").sort("configuration", "execution_group"))


@table(section="arms")
def ladder(ctx: ReportContext) -> TableSpec:
    """Paper Table 2: the assigned-policy ladder control -> treatment -> plain headings."""
    title = "Assigned-policy ladder on the endpoints where all three rungs ran (primary scenario)"
    study = ctx.study
    groups = _ladder_groups(ctx)
    cols = ["model", "rung", "change", "recall", "full-recall rows", "effect vs previous rung"]
    if groups.height == 0:
        return empty_table("t2_ladder", title, cols,
                           f"no execution group ran {study.control}, {study.treatment} and "
                           f"{PLAIN_ARM} together")
    rows = valid_outcome_rows(ctx.rows, scenario=study.scenario).join(
        groups, on=["configuration", "execution_group"], how="semi")
    stats = cell_stats(rows, ["configuration", "arm"], ctx.threshold)
    rungs = (study.control, study.treatment, PLAIN_ARM)
    data, out = [], []
    for conf in sorted(set(groups["configuration"])):
        prev = None
        for arm in rungs:
            hit = _lookup(stats, configuration=conf, arm=arm)
            if hit is None:  # _ladder_groups keeps only groups where all three rungs ran
                raise LookupError(f"ladder: no {arm} rows for {conf} although its group ran all three rungs")
            effect: float | None = None if prev is None else hit["mean"] - prev
            data.append({"configuration": conf, "arm": arm, "rows": hit["rows"], "mean": hit["mean"],
                         "rows_full": hit["rows_full"], "effect_vs_previous": effect})
            out.append({"model": conf, "rung": arm, "change": ARM_LABELS.get(arm, arm),
                        "recall": fmt_mean_n(hit["mean"], hit["rows"]),
                        "full-recall rows": fmt_count_of(hit["rows_full"], hit["rows"]),
                        "effect vs previous rung": "—" if effect is None else fmt_signed(effect)})
            prev = hit["mean"]
    frame = pl.DataFrame(data, schema={"configuration": pl.String, "arm": pl.String, "rows": pl.Int64,
                                       "mean": pl.Float64, "rows_full": pl.Int64,
                                       "effect_vs_previous": pl.Float64})
    return TableSpec("t2_ladder", title, frame, display_frame(out, cols),
                     note="Pooled over the execution groups in which all three rungs ran; the effect "
                          "is the difference of rung means (a policy contrast, not a decomposition).")


@table(section="arms")
def scenario_comparison(ctx: ReportContext) -> TableSpec:
    """Paper section 4.4: ladder endpoints' arm means on every scenario."""
    title = "Exploratory scenario comparison on the ladder endpoints: mean recall by arm and scenario"
    groups = _ladder_groups(ctx)
    confs = sorted(set(groups["configuration"]))
    cols = ["model", "arm"]
    if not confs:
        return empty_table("t_scenarios", title, cols, "no ladder endpoint (see the ladder table)")
    primary = ctx.study.scenario
    rows = valid_outcome_rows(ctx.rows, arms=SCENARIO_ARMS).filter(pl.col("configuration").is_in(confs))
    rows = pl.concat([
        rows.filter(pl.col("scenario") == primary).join(
            groups, on=["configuration", "execution_group"], how="semi"),
        rows.filter(pl.col("scenario") != primary),
    ])
    scenarios = sorted(set(rows["scenario"]))
    if len(scenarios) < 2:
        return empty_table("t_scenarios", title, cols,
                           "the ladder endpoints ran only one scenario")
    stats = cell_stats(rows, ["configuration", "arm", "scenario"], ctx.threshold)
    out = []
    for conf in confs:
        for arm in [a for a in SCENARIO_ARMS if a in set(stats.filter(pl.col("configuration") == conf)["arm"])]:
            rec = {"model": conf, "arm": arm_label(arm)}
            for sc in scenarios:
                hit = _lookup(stats, configuration=conf, arm=arm, scenario=sc)
                rec[sc] = fmt_mean_n(hit["mean"], hit["rows"]) if hit else "—"
            out.append(rec)
    return TableSpec("t_scenarios", title, stats, display_frame(out, [*cols, *scenarios]),
                     note=f"{primary} rows are those of the ladder's execution groups; other scenarios "
                          "pool every group of the endpoint. Scenarios differ in facts, grading and "
                          "prompts, so this is not an iteration contrast.")


def _ceiling_groups(ctx: ReportContext) -> pl.DataFrame:
    rows = valid_outcome_rows(ctx.rows, scenario=ctx.study.scenario, arms=[REDUCED_CEILING_ARM])
    return rows.select("configuration", "execution_group").unique().sort("configuration", "execution_group")


@table(section="arms")
def reduced_ceiling(ctx: ReportContext) -> TableSpec:
    """Paper section 4.5: control vs halved ceiling (and plain controls) in the ceiling groups."""
    title = "Reduced declared ceiling: rows, recall, carried characters and clipping (primary scenario)"
    cols = ["model", "arm", "n", f"rows ≥ {fmt_general(ctx.threshold)}", "mean", "carried chars",
            "folds clipped at cap"]
    groups = _ceiling_groups(ctx)
    if groups.height == 0:
        return empty_table("t_ceiling", title, cols, f"no valid rows of the reduced-ceiling arm {REDUCED_CEILING_ARM}")
    rows = valid_outcome_rows(ctx.rows, scenario=ctx.study.scenario, arms=CEILING_ARMS).join(
        groups, on=["configuration", "execution_group"], how="semi")
    frame = (rows.group_by("configuration", "arm").agg(
        pl.len().alias("rows"), pl.col("recall").mean().alias("mean"),
        (pl.col("recall") >= ctx.threshold).sum().cast(pl.Int64).alias("rows_at_threshold"),
        pl.col("carried_chars").cast(pl.Float64).mean().alias("carried_chars_mean"),
        pl.col("folds_clipped").sum().alias("folds_clipped"), pl.col("folds").sum().alias("folds"),
        pl.col("parse_failures").sum().alias("parse_failures"))
        .with_columns(pl.col("arm").replace_strict({a: i for i, a in enumerate(CEILING_ARMS)},
                                                   return_dtype=pl.Int64).alias("_o"))
        .sort("configuration", "_o").drop("_o"))
    out = [{"model": r["configuration"], "arm": arm_label(r["arm"]), "n": str(r["rows"]),
            cols[3]: str(r["rows_at_threshold"]), "mean": fmt_num(r["mean"]),
            "carried chars": fmt_int(r["carried_chars_mean"]),
            "folds clipped at cap": fmt_count_of(r["folds_clipped"], r["folds"])}
           for r in frame.iter_rows(named=True)]
    return TableSpec("t_ceiling", title, frame, display_frame(out, cols),
                     note="Execution groups in which the reduced-ceiling arm ran; carried chars is the "
                          "mean final carrier length; clipping counts folds over all folds.")


@table(section="arms")
def reduced_ceiling_by_model(ctx: ReportContext) -> TableSpec:
    """Paper section 4.6: control and reduced-ceiling rows at threshold per endpoint, with control fill.

    The paper's table mixes populations (one endpoint's whole corpus, another's ceiling runs), so
    the control arm is shown both ways: in the ceiling runs, and over every run of the endpoint.
    """
    study = ctx.study
    c_arm, t_arm, thr = study.control, REDUCED_CEILING_ARM, ctx.threshold
    title = "Reduced-ceiling direction by endpoint: rows at or above the threshold, and control fill"
    cols = ["model", f"{c_arm}, ceiling runs", f"{t_arm}, ceiling runs", f"{c_arm}, all runs",
            f"{c_arm} fill, all runs"]
    groups = _ceiling_groups(ctx)
    confs = sorted(set(groups["configuration"]))
    if not confs:
        return empty_table("t_ceiling_by_model", title, cols,
                           f"no valid rows of the reduced-ceiling arm {t_arm}")
    rows = valid_outcome_rows(ctx.rows, scenario=study.scenario, arms=[c_arm, t_arm]).filter(
        pl.col("configuration").is_in(confs))
    in_runs = cell_stats(rows.join(groups, on=["configuration", "execution_group"], how="semi"),
                         ["configuration", "arm"], thr)
    overall = cell_stats(rows, ["configuration", "arm"], thr)
    fills = fill_fractions(ctx.rows, arm=c_arm, scenario=study.scenario)

    def count(hit: dict | None) -> tuple[int, int]:
        return (hit["rows_at_threshold"], hit["rows"]) if hit else (0, 0)

    data, out = [], []
    for conf in confs:
        c_run = count(_lookup(in_runs, configuration=conf, arm=c_arm))
        t_run = count(_lookup(in_runs, configuration=conf, arm=t_arm))
        c_all = count(_lookup(overall, configuration=conf, arm=c_arm))
        f = _lookup(fills, configuration=conf)
        data.append({"configuration": conf, "control_at_threshold_runs": c_run[0], "control_rows_runs": c_run[1],
                     "reduced_at_threshold_runs": t_run[0], "reduced_rows_runs": t_run[1],
                     "control_at_threshold_all": c_all[0], "control_rows_all": c_all[1],
                     "control_fill_all": f["fill"] if f else None})
        out.append({cols[0]: conf, cols[1]: fmt_count_of(*c_run), cols[2]: fmt_count_of(*t_run),
                    cols[3]: fmt_count_of(*c_all), cols[4]: fmt_pct(f["fill"]) if f else "—"})
    frame = pl.DataFrame(data, schema={"configuration": pl.String, "control_at_threshold_runs": pl.Int64,
                                       "control_rows_runs": pl.Int64, "reduced_at_threshold_runs": pl.Int64,
                                       "reduced_rows_runs": pl.Int64, "control_at_threshold_all": pl.Int64,
                                       "control_rows_all": pl.Int64, "control_fill_all": pl.Float64})
    return TableSpec("t_ceiling_by_model", title, frame, display_frame(out, cols),
                     note=f"The first three columns count rows with recall ≥ {fmt_general(thr)} over the arm's rows; "
                          f"the last is the {c_arm} arm's fill of its declared ceiling. Ceiling runs: execution "
                          f"groups in which {t_arm} ran. All runs: every valid row of the endpoint on the primary "
                          "scenario.")


@table(section="arms")
def fill_examples(ctx: ReportContext) -> TableSpec:
    """Paper section 4.6: carried characters and fill of the undivided arms, with recall."""
    study = ctx.study
    title = f"Fill of the undivided field ({study.control} by endpoint, {DESCRIBED_ARM} pooled), with recall"
    cols = ["model", "rows", "carried chars", "fill", "recall"]
    parts = []
    for arm in (study.control, DESCRIBED_ARM):
        fills = fill_fractions(ctx.rows, arm=arm, scenario=study.scenario)
        if fills.height == 0:
            continue
        rec = cell_stats(valid_outcome_rows(ctx.rows, scenario=study.scenario, arms=[arm]),
                         ["configuration"], ctx.threshold)
        joined = fills.join(rec.select("configuration", "rows", "mean"), on="configuration", how="left")
        if arm == DESCRIBED_ARM:  # the paper pools the described arm into one row
            joined = joined.select(
                pl.lit(f"{arm}, described field").alias("configuration"),
                (pl.col("fill") * pl.col("fill_rows")).sum().truediv(pl.col("fill_rows").sum()).alias("fill"),
                pl.col("fill_rows").sum(),
                (pl.col("carried_mean") * pl.col("fill_rows")).sum().truediv(pl.col("fill_rows").sum())
                .alias("carried_mean"),
                pl.col("rows").sum(),
                (pl.col("mean") * pl.col("rows")).sum().truediv(pl.col("rows").sum()).alias("mean"))
        parts.append(joined.with_columns(pl.lit(arm).alias("arm")).select(
            "arm", "configuration", "fill_rows", "carried_mean", "fill", "rows", "mean"))
    if not parts:
        return empty_table("t_fill_examples", title, cols,
                           f"no valid {study.control} rows recording carried and declared characters")
    # the models first (by fill), the pooled described-arm row after them: a pool is not one of the models
    frame = (pl.concat(parts).with_columns((pl.col("arm") == DESCRIBED_ARM).alias("_pooled"))
             .sort(["_pooled", "fill", "configuration"], descending=[False, True, False]).drop("_pooled"))
    out = [{"model": f"all models, arm {r['arm']}" if r["arm"] == DESCRIBED_ARM else r["configuration"],
            "rows": str(r["fill_rows"]), "carried chars": fmt_int(r["carried_mean"]),
            "fill": fmt_pct(r["fill"]), "recall": fmt_mean_n(r["mean"], r["rows"])}
           for r in frame.iter_rows(named=True)]
    pooled = DESCRIBED_ARM in set(frame["arm"])
    return TableSpec("t_fill_examples", title, frame, display_frame(out, cols),
                     note=f"Rows of arm {study.control} per model"
                          + (f"; the last row pools arm {DESCRIBED_ARM} ({ARM_LABELS[DESCRIBED_ARM]}) over every "
                             "model, as the paper does" if pooled else "")
                          + ". Fill is carried / declared characters (the share of the declared ceiling used), "
                          "averaged over rows; every execution group.")
