"""Rule R17b: headings carried on the single-field rows, fitted to the 4.8 tables by an integer program.

Methods note. Over the valid S5 rows of arms j, p and t, binary x[r, h] says row r carries h
headings (h = 0..5); every row takes exactly one h, and rows whose headings the page prints
(deepseek-v4-pro, gemma-4-31b-it, deepseek-v4-flash, granite-4.1-8b, ling-2.6-flash) are fixed.
Targets, each met exactly where possible and otherwise with the smallest total slack:
per heading level the row count, the checks total (GRIM total of the printed mean) and the
rows at >= 0.5 (the 4.8 single-field table), and the j rows at 0, 1 and 5 headings (4.8 text).
Solved with scipy.optimize.milp (HiGHS); ties are broken by a tiny preference for the
recall-band rule, which keeps the solution unique.
"""
from __future__ import annotations

from typing import Any

import numpy as np
from scipy.optimize import Bounds, LinearConstraint, milp
from scipy.sparse import lil_matrix

from analysis.reconstruct.claims import Claims
from analysis.reconstruct.engine import ReconstructionError, cell_total

H = 6


def fit_single_field_headings(rows: list[dict[str, Any]], fixed: dict[int, int], c: Claims) -> list[int]:
    """Headings for each row of `rows` (valid S5 j/p/t rows with an outcome); `fixed` maps row index -> h."""
    n = len(rows)
    v = np.array([r["checks_passed"] for r in rows], dtype=float)
    ge = np.array([2 * r["checks_passed"] >= r["checks_total"] for r in rows], dtype=float)
    is_j = np.array([r["arm"] == "j" for r in rows], dtype=float)
    targets = []  # (coefficient per row, level h, target)
    for h in range(H):
        cnt = int(c.by_id[f"headings.h{h}.rows"].value)  # type: ignore[arg-type]
        mean = c.by_id[f"headings.h{h}.mean"]
        tot = cell_total(mean.value, mean.decimals, cnt, 14).total  # type: ignore[arg-type]
        targets += [(np.ones(n), h, cnt), (v, h, tot),
                    (ge, h, int(c.by_id[f"headings.h{h}.rows_ge_half"].value))]  # type: ignore[arg-type]
    for h in (0, 1, 5):
        targets.append((is_j, h, int(c.by_id[f"headings.j.rows_h{h}"].value)))  # type: ignore[arg-type]
    nx, ns = n * H, 2 * len(targets)
    idx = lambda r, h: r * H + h  # noqa: E731
    a = lil_matrix((n + len(targets), nx + ns))
    lo, hi = [], []
    for r in range(n):
        for h in range(H):
            a[r, idx(r, h)] = 1
        lo.append(1)
        hi.append(1)
    for t, (coef, h, target) in enumerate(targets):
        row = n + t
        for r in range(n):
            if coef[r]:
                a[row, idx(r, h)] = coef[r]
        a[row, nx + 2 * t] = 1       # + slack (under target)
        a[row, nx + 2 * t + 1] = -1  # - slack (over target)
        lo.append(target)
        hi.append(target)
    # objective: slacks (sums scaled to rows by 1/7), plus a 1e-4 preference for the recall-band rule
    cost = np.zeros(nx + ns)
    for t, (coef, _, _) in enumerate(targets):
        w = 1.0 / 7 if coef is v else 1.0
        cost[nx + 2 * t] = cost[nx + 2 * t + 1] = w
    band = np.where(v == 0, 0, np.where(ge > 0, 5, 1))
    for r in range(n):
        for h in range(H):
            cost[idx(r, h)] = 1e-4 * abs(h - band[r]) + 1e-7 * r * h
    lb, ub = np.zeros(nx + ns), np.concatenate([np.ones(nx), np.full(ns, np.inf)])
    for r, h in fixed.items():
        lb[idx(r, h)] = 1
    integrality = np.concatenate([np.ones(nx), np.zeros(ns)])
    res = milp(cost, constraints=LinearConstraint(a.tocsr(), lo, hi), integrality=integrality,
               bounds=Bounds(lb, ub), options={"presolve": True})
    if res.x is None:
        raise ReconstructionError(f"headings program failed: {res.message}")
    x = np.rint(res.x[:nx]).reshape(n, H)
    return [int(np.argmax(x[r])) for r in range(n)]
