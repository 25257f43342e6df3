"""Row attributes beyond the outcome: carrier length, headings, parse failures, folds, answers, audit.

Methods note. Each attribute is set by a numbered rule (R16-R24, listed with reasons in
RECONSTRUCTION.md). Printed per-cell means of characters are met exactly: a cell mean m
over n rows is spread as n integers summing to m * n (the first rows take the +1s).
Counts printed as "a of b" are met by choosing rows in a fixed order (row_id order unless
the rule says otherwise); subset totals (parse-failure rows) by an exact multiset search.
"""
from __future__ import annotations

from typing import Any

from analysis.reconstruct.claims import Claims
from analysis.reconstruct.engine import ReconstructionError, pick_subset
from analysis.reconstruct.layout import DECLARED_CHARS, FABRICATED, FABRICATED_FROM_CLAIMS, S1_CHECKS, S5_CHECKS
from analysis.reconstruct.populations import Builder

Row = dict[str, Any]


def _v(c: Claims, cid: str) -> Any:
    return c.by_id[cid].value


def spread(total: int, n: int) -> list[int]:
    """n integers summing to total, differing by at most one (larger first)."""
    base, extra = divmod(total, n)
    return [base + 1] * extra + [base] * (n - extra)


def _has_outcome(r: Row) -> bool:
    return r["checks_passed"] is not None


def _valid_s5(r: Row) -> bool:
    return r["valid"] and r["scenario"] == "S5" and _has_outcome(r)


def _set_mean(rows: list[Row], mean: int) -> None:
    for r, x in zip(rows, spread(mean * len(rows), len(rows)), strict=True):
        r["carried_chars"] = x


def _valid(rows: list[Row]) -> list[Row]:
    return [r for r in rows if r["valid"]]


def _j_fills(cells: dict[str, list[Row]], c: Claims) -> None:
    """R16a, Table 3 j fill: every row of the cell carries round(fill * 9600) characters, except where a fill
    example prints the mean characters of the same rows."""
    from analysis.reconstruct.layout import PANEL
    for key, _ in PANEL:
        _set_mean(_valid(cells.get(f"t3.{key}.j", [])), round(_v(c, f"t3.{key}.j_fill") * 9600))
    _set_mean(_valid(cells["t3.deepseek_v4_pro.j"]), int(_v(c, "fillex.deepseek_v4_pro.carried_chars")))
    _set_mean(_valid(cells["t3.ling_2_6_flash.j"]), int(_v(c, "fillex.ling_2_6_flash.carried_chars")))
    _set_mean(cells["fillex.ling_2_6_flash"], int(_v(c, "fillex.ling_2_6_flash.carried_chars")))
    g12 = _valid(cells["t3.granite_4_1_8b.j"])
    g16_total = int(_v(c, "fillex.granite_4_1_8b.carried_chars")) * int(_v(c, "fillex.granite_4_1_8b.rows"))
    g4 = cells["fillex.granite_4_1_8b"]
    rest = g16_total - sum(r["carried_chars"] for r in g12)
    for r, x in zip(g4, spread(rest, len(g4)), strict=True):
        r["carried_chars"] = x


def _anchor_j(cells: dict[str, list[Row]], c: Claims) -> None:
    """R16c, anchor j: the 11 ceiling rows average 7,818; the 28-row corpus averages 8,501."""
    ceil_j = _valid(cells["ceiling.j"])
    _set_mean(ceil_j, int(_v(c, "ceiling.j.carried_chars")))
    others = [r for r in cells["ladder.j"] + cells["anchor.j_large_corpus"]]
    total28 = int(_v(c, "fillex.qwen3_6_35b_a3b.carried_chars")) * int(_v(c, "anchor.j_large_corpus.n"))
    for r, x in zip(others, spread(total28 - sum(r["carried_chars"] for r in ceil_j), len(others)), strict=True):
        r["carried_chars"] = x


def _ceiling_t(cells: dict[str, list[Row]], c: Claims) -> None:
    """R16d, t: 14 of 16 rows land within 0.5% of the 4,800 ceiling (4.9); the anchor cell mean is 4,697."""
    near_n = int(_v(c, "carrier.t.rows_near_ceiling"))
    t_rows = cells["ceiling2.glm_5_2.t"] + cells["ceiling.t"]
    near, far = t_rows[:near_n], t_rows[near_n:]
    for r in near:
        r["carried_chars"] = 4790
    anchor_t = cells["ceiling.t"]
    anchor_total = int(_v(c, "ceiling.t.carried_chars")) * len(anchor_t)
    far_total = anchor_total - sum(r["carried_chars"] for r in anchor_t if r in near)
    for r, x in zip(far, spread(far_total, len(far)), strict=True):
        r["carried_chars"] = x


def _carried_chars(b: Builder, c: Claims) -> None:
    """R16: declared allowance by arm; carried characters meet every printed cell mean or fill."""
    for r in b.rows:
        r["declared_chars"] = DECLARED_CHARS.get(r["arm"])
        r["carried_chars"] = None
    cells: dict[str, list[Row]] = {}
    for r in b.rows:
        if _has_outcome(r):
            cells.setdefault(r["cell"], []).append(r)
    _j_fills(cells, c)
    # deep-table q fills (R16b)
    for key in ("granite_4_1_8b", "ling_2_6_flash"):
        _set_mean(_valid(cells[f"t3.{key}.q"]), round(_v(c, f"deep.{key}.q.fill") * 9600))
    _anchor_j(cells, c)
    _set_mean(_valid(cells["ladder.p"]), int(_v(c, "fillex.p_described.carried_chars")))
    for a in "mu":
        _set_mean(cells[f"ceiling.{a}"], int(_v(c, f"ceiling.{a}.carried_chars")))
    _set_mean(cells["ceiling2.glm_5_2.j"], round(_v(c, "ceiling2.glm_5_2.j_fill") * 9600))
    _ceiling_t(cells, c)
    # everything else (R16e, placeholders): 60% of the declared allowance, 6,000 where none is declared
    for r in b.rows:
        if _has_outcome(r) and r["carried_chars"] is None:
            d = r["declared_chars"]
            r["carried_chars"] = (d * 3) // 5 if d else 6000


def _headings(b: Builder, c: Claims) -> None:
    """R17: headings carried (S5 only; f and n not recorded)."""
    fixed: dict[str, list[int]] = {
        "t3.deepseek_v4_pro.j": [5] * 4, "t3.gemma_4_31b_it.j": [5] * 4,
        "t3.deepseek_v4_flash.j": [1] * 4,
        "t3.ling_2_6_flash.j": [1] + [0] * 11, "fillex.granite_4_1_8b": [0] * 4,
    }
    for r in b.rows:
        r["headings_carried"] = None
        if r["scenario"] != "S5" or not _has_outcome(r) or r["arm"] in ("f", "n"):
            continue
        if r["arm"] in ("q", "k", "m", "l", "u", "g"):
            r["headings_carried"] = 5
        elif r["arm"] == "o":
            r["headings_carried"] = 0
        else:  # single-field arms j, p, t: by recall band where the page gives nothing
            x = r["checks_passed"]
            r["headings_carried"] = 5 if 2 * x >= r["checks_total"] else (1 if x > 0 else 0)
    by_cell: dict[str, list[Row]] = {}
    for r in b.rows:
        if r["headings_carried"] is not None and r["valid"]:
            by_cell.setdefault(r["cell"], []).append(r)
    for cell, hs in fixed.items():
        for r, h in zip(by_cell[cell], hs, strict=True):
            r["headings_carried"] = h
    for r in by_cell["t3.granite_4_1_8b.j"]:
        r["headings_carried"] = 5 if r.get("h5") else 0
    # R17b: the remaining single-field rows are fitted to the 4.8 heading tables (integer program)
    from analysis.reconstruct.headings_fit import fit_single_field_headings
    sf = [r for r in b.rows if _valid_s5(r) and r["arm"] in ("j", "p", "t")]
    fixed_cells = set(fixed) | {"t3.granite_4_1_8b.j"}
    fixed_idx = {i: r["headings_carried"] for i, r in enumerate(sf) if r["cell"] in fixed_cells}
    for r, h in zip(sf, fit_single_field_headings(sf, fixed_idx, c), strict=True):
        r["headings_carried"] = h


def _parse_failures(b: Builder, c: Claims) -> None:
    """R18: parse failures: catch-up rows 1 each; ceiling j 4 of 60 folds; 18 + 39 valid rows by exact subset."""
    for r in b.rows:
        r["parse_failures"] = 0
        r["folds"] = 5
    catch = [r for r in b.rows if r["invalid_reason"] == "catchup"]
    for r in catch:
        r["parse_failures"] = 1
    ceil_rows = [r for r in b.rows if r["cell"] == "ceiling.j"]
    left = int(_v(c, "ceiling.j.nonconforming_folds")) - sum(r["parse_failures"] for r in ceil_rows)
    ceil_valid = sorted((r for r in ceil_rows if r["valid"]), key=lambda r: (r["checks_passed"], r["row_id"]))
    fixed = ceil_valid[:left]
    for r in fixed:
        r["parse_failures"] = 1
    sf_arms = ("j", "p", "t")
    n_sf = int(_v(c, "pf.single_field.valid"))
    sf_total = _total(c, "pf.single_field.mean", n_sf)
    pool = [r for r in b.rows if _valid_s5(r) and r["arm"] in sf_arms and r not in fixed]
    chosen = pick_rows(pool, n_sf - len(fixed), sf_total - sum(r["checks_passed"] for r in fixed))
    n_all = int(_v(c, "pf.all.valid"))
    all_total = _total(c, "pf.all.mean", n_all)
    pool2 = [r for r in b.rows if _valid_s5(r) and r["arm"] in ("q", "n", "f", "k")]
    pool2.sort(key=lambda r: ("qnfk".index(r["arm"]), r["row_id"]))
    chosen2 = pick_rows(pool2, n_all - n_sf, all_total - sf_total)
    for r in chosen + chosen2:
        r["parse_failures"] = 1


def _total(c: Claims, cid: str, n: int) -> int:
    from analysis.reconstruct.engine import cell_total
    cl = c.by_id[cid]
    return cell_total(cl.value, cl.decimals, n, 14).total  # type: ignore[arg-type]


def pick_rows(pool: list[Row], count: int, total: int) -> list[Row]:
    """Exactly `count` rows of `pool` whose checks sum to `total` (engine.pick_subset)."""
    return [pool[i] for i in pick_subset([r["checks_passed"] for r in pool], count, total)]


def _folds(b: Builder, c: Claims) -> None:
    """R19: five folds per row; printed clipped folds spread over the cell; finish_length = parse failures."""
    for r in b.rows:
        r["folds_clipped"] = 0
    for cell, cid in (("ceiling.j", "ceiling.j.folds_clipped"), ("ceiling.u", "ceiling.u.folds_clipped")):
        rows = [r for r in b.rows if r["cell"] == cell and r["valid"]]
        for r, x in zip(rows, spread(int(_v(c, cid)), len(rows)), strict=True):
            r["folds_clipped"] = x
    for r in b.rows:
        r["finish_length"] = r["parse_failures"]
        r["finish_stop"] = r["folds"] - r["finish_length"]


def _prompt_tokens(b: Builder, c: Claims) -> None:
    """R20 (placeholder): the printed session length (5 chunks of 30,000 tokens) plus the carried text re-read by
    folds 2-5 (chars / 4)."""
    session = int(_v(c, "design.session_tokens"))
    for r in b.rows:
        cc = r.get("carried_chars") or 0
        r["prompt_tokens_est"] = session + 4 * (cc // 4)


def _answers(b: Builder, c: Claims, params_markers: tuple[str, ...] = ("not recorded",)) -> None:
    """R21: answer text (the printed 400-char prefix); the first printed number of failing rows of j q n t f
    fabricate, with the page's fabricated port, timestamp and shard count (read from the claims) and placeholders."""
    prefix = int(_v(c, "design.answer_prefix_chars"))
    fabricated = dict(FABRICATED)
    for label, (cid, form) in FABRICATED_FROM_CLAIMS.items():
        fabricated[label] = form.format(_v(c, cid))
    failing: dict[str, list[Row]] = {}
    for r in b.rows:
        r["_fab"] = False
        if _valid_s5(r) and 2 * r["checks_passed"] < r["checks_total"]:
            failing.setdefault(r["arm"], []).append(r)
    for a in "jqntf":
        for r in failing.get(a, [])[: int(_v(c, f"fab.{a}.silent_fabrication"))]:
            r["_fab"] = True
    for r in b.rows:
        if not _has_outcome(r):
            r["answer"] = None
            continue
        labels = S5_CHECKS if r["scenario"] == "S5" else S1_CHECKS
        lines = []
        for i, (label, expected) in enumerate(labels):
            if i < r["checks_passed"]:
                lines.append(f"{label}: {expected}")
            elif r["_fab"]:
                lines.append(f"{label}: {fabricated.get(label, 'n/a')}")
            else:
                lines.append(f"{label}: {params_markers[0]}")
        r["answer"] = "\n".join(lines)[:prefix]


def _carrier_audit(b: Builder, c: Claims) -> None:
    """R22: audited rows = all valid ceiling-run rows + the first valid panel j and q rows up to the printed
    counts; the first printed number of audited rows with a failed check carry one missed value."""
    for r in b.rows:
        r["_audited"] = False
        r["_discrepant"] = False
    ceiling = [r for r in b.rows if _valid_s5(r) and r["execution_group"].startswith("ceiling-")]
    panel = [r for r in b.rows if _valid_s5(r) and r["execution_group"].startswith("partition-")]
    for a in ("j", "q", "m", "t", "u"):
        want = int(_v(c, f"audit.{a}.rows"))
        rows = [r for r in ceiling if r["arm"] == a]
        rows += [r for r in panel if r["arm"] == a][: max(0, want - len(rows))]
        if len(rows) != want:
            raise ReconstructionError(f"arm {a}: {len(rows)} auditable rows, the page prints {want}")
        for r in rows:
            r["_audited"] = True
        disc = int(_v(c, f"audit.{a}.discrepant_rows"))
        cand = [r for r in rows if r["checks_passed"] < r["checks_total"]]
        if len(cand) < disc:
            raise ReconstructionError(f"arm {a}: only {len(cand)} audited rows can show a missed carrier value")
        for r in sorted(cand, key=lambda r: r["row_id"])[:disc]:
            r["_discrepant"] = True


def annotate(b: Builder, c: Claims) -> None:
    """All attribute rules, in order."""
    from analysis.reconstruct.populations import rule
    for ids, step in ((("R16",), _carried_chars), (("R17", "R17b"), _headings), (("R18",), _parse_failures),
                      (("R19",), _folds), (("R21",), _answers), (("R22",), _carrier_audit)):
        with rule(c, *ids):
            step(b, c)
    with rule(c, "R20"):
        _prompt_tokens(b, c)
