"""What the claims audit computes from: the package, its results.json dict, and pooled cell summaries."""
from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import polars as pl

from analysis.estimators import cells as cells_mod
from analysis.estimators import exact
from analysis.estimators.common import Contrast
from analysis.params import Params


class NotDeterminable(Exception):
    """The page (or the reconstruction) does not give what this recomputation needs; the message says why."""


@dataclass(frozen=True)
class AuditContext:
    """Inputs of every recomputation."""

    package: Any
    """The EvidencePackage (data/v1)."""
    results: dict
    """build_results(package, params)."""
    params: Params
    """Analysis parameters."""
    cells: dict[tuple[str, tuple[str, ...], str], dict[str, dict]] = field(default_factory=dict, compare=False,
                                                                          repr=False)
    """Memo of :meth:`cell` for this one audit, (configuration, groups, scenario) -> arm -> summary: the same
    pooled cell is read by many claims, and one grouped summary gives every arm of it (218 reads of 20 pooled
    cells in the v1 audit). The summary is a pure function of the package, params and these arguments."""

    @property
    def rows(self) -> pl.DataFrame:
        return self.package.rows

    def cell(self, config: str, groups: Sequence[str], arm: str, scenario: str = "S5") -> dict:
        """Pooled summary (cells.cell_summary without groups) of one arm over the listed execution groups
        (computed once per audit for every arm of the cell; each call returns its own copy)."""
        key = (config, tuple(groups), scenario)
        if key not in self.cells:
            sub = self.rows.filter(pl.col("configuration") == config, pl.col("execution_group").is_in(list(groups)))
            t = cells_mod.cell_summary(sub, self.params, by_execution_group=False, scenario=scenario).table
            self.cells[key] = {r["arm"]: r for r in t.iter_rows(named=True)}
        if arm not in self.cells[key]:
            raise NotDeterminable(f"no valid {arm} rows of {config} in {', '.join(groups)}")
        return dict(self.cells[key][arm])

    def all_rows(self, config: str, groups: Sequence[str], arm: str, scenario: str = "S5") -> pl.DataFrame:
        """Every row (valid or not) of one arm over the listed groups."""
        return self.rows.filter(pl.col("configuration") == config, pl.col("execution_group").is_in(list(groups)),
                                pl.col("arm") == arm, pl.col("scenario") == scenario)

    def mcnemar(self, first: str, second: str, groups: Sequence[tuple[str, str]],
                threshold: float) -> exact.McNemarResult:
        """exact.paired_mcnemar over the listed (configuration, group) runs on S5."""
        runs = pl.DataFrame({"configuration": [c for c, _ in groups], "execution_group": [g for _, g in groups]})
        return exact.paired_mcnemar(self.rows, first, second, scenario="S5", threshold=threshold, runs=runs)

    def paired_diff(self, config: str, groups: Sequence[str], control: str, treatment: str) -> tuple[float, int]:
        """Mean within-repeat treatment - control recall over complete pairs in the groups, and the pair count."""
        import datetime as dt

        from analysis.estimators import paired
        runs = pl.DataFrame({"configuration": [config] * len(groups), "execution_group": list(groups),
                             "planned_repeats": [10**6] * len(groups), "family": [""] * len(groups),
                             "published": [dt.date(1970, 1, 1)] * len(groups)})
        c = Contrast(control, treatment, "S5")
        pr = paired.complete_pairs(paired.run_outcomes(self.rows, runs, c), c)
        if pr.height == 0:
            raise NotDeterminable(f"no complete {control}/{treatment} pairs of {config}")
        d = (pr["treatment_recall"] - pr["control_recall"]).mean()
        return float(d), pr.height  # type: ignore[arg-type]
