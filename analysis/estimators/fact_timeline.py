"""Fact timeline: where each graded value enters, stays in and leaves the carrier.

Methods note. Inputs are the folds frame (analysis.evidence.folds.SCHEMA) and one line per
(row, graded value) with the value's chunk (:data:`FACT_COLUMNS`). For each row and value:

* **entry fold** — the first fold that read the value's chunk and was not lost (a lost fold
  keeps the old carrier and its chunk is folded again with the next call);
* **presence** after each fold from entry on — the value as a whole token in that fold's
  carrier, the package's presence rule (analysis.evidence.tokens.contains_token: Unicode NFC,
  space runs collapsed, word boundaries with the joiner rule; the recall answer's label-bound
  grader adds the label and one-value-per-line conditions, which a carrier has no use for);
* **captured** — present after the entry fold;
* **loss fold** — the first fold after the first presence whose carrier lacks the value,
  with whether that fold was clipped at the carry cap or failed to parse. For a captured value
  this is the first fold after entry without it: loss is time to the FIRST absence, the
  standard time-to-first-event definition, and a value that comes back later stays lost;
* **survived** — captured and never lost: present in every carrier from the entry fold to the
  last fold's (the carrier the recall turn receives), so captured = lost + survived;
* **present in the final carrier** — the last fold's carrier holds the value, whatever happened
  before; **reappeared** — captured, lost, and back in the final carrier (a loss, never a
  survivor); **appeared late** — not in the entry fold's carrier but in a later one: such a value
  was not captured at entry, so it is outside the survival analysis (whose time origin is the
  entry fold) and is counted apart.

Grading is vectorised: carriers are deduplicated and normalised once, each value is searched
in all carriers at once (polars literal ``str.contains``), and the hits are checked for token
boundaries by one regex per value (:func:`token_pattern`, the grader's boundary rule written as
context classes; its verdict equals the grader's, tested property-wise). Case-insensitive values
use the grader itself.
"""

from __future__ import annotations

import re
import unicodedata
from dataclasses import dataclass

import numpy as np
import polars as pl

from analysis.estimators.common import EstimatorError, require_columns
from analysis.evidence.tokens import JOINERS, JOINERS_BEFORE, contains_token, normalise_text

FOLD_COLUMNS = ("row_id", "fold", "chunks", "carrier", "parse_ok", "clipped")
FACT_COLUMNS = ("row_id", "check", "value", "value_class", "chunk", "case_sensitive")

TIMELINE_SCHEMA: dict[str, pl.DataType] = {
    "row_id": pl.String(), "check": pl.String(), "value": pl.String(), "value_class": pl.String(),
    "chunk": pl.Int64(), "entry_fold": pl.Int64(), "last_fold": pl.Int64(), "distance": pl.Int64(),
    "captured": pl.Boolean(), "entry_clipped": pl.Boolean(), "entry_parse_failed": pl.Boolean(),
    "first_present": pl.Int64(), "loss_fold": pl.Int64(), "loss_clipped": pl.Boolean(),
    "loss_parse_failed": pl.Boolean(), "survived": pl.Boolean(), "present_final": pl.Boolean(),
    "reappeared": pl.Boolean(), "appeared_late": pl.Boolean(), "duration": pl.Int64(), "event": pl.Boolean(),
}
"""Columns of :attr:`FactTimeline.facts` (null where undefined, e.g. no entry fold)."""


@dataclass(frozen=True)
class FactTimeline:
    """The timeline of every graded value of every row."""

    facts: pl.DataFrame
    """One line per (row, value), :data:`TIMELINE_SCHEMA`: ``entry_fold`` (null: the row never
    read the value's chunk), ``last_fold``, ``distance`` = last - entry, ``captured`` (present
    after the entry fold), ``entry_clipped``/``entry_parse_failed`` (the entry fold's flags),
    ``first_present``, ``loss_fold`` (first fold absent after first presence; null: never lost),
    ``loss_clipped``/``loss_parse_failed`` (that fold's flags), ``survived`` (captured and present
    after every fold from entry to the last: never lost), ``present_final`` (present after the last
    fold), ``reappeared`` (captured, lost, present after the last fold), ``appeared_late`` (not
    captured at entry, present after a later fold), ``duration`` (folds since entry to the first
    loss, else to the last fold) and ``event`` (lost; false = right-censored at the last fold).
    ``duration``/``event`` are null when not captured; every field but ``entry_fold``, ``last_fold``
    and the value's own columns is null without an entry fold."""
    presence: pl.DataFrame
    """One line per (row, value, fold >= entry): ``row_id, check, fold, present``."""


_RUNS = r"[\t\u00a0\u2007\u202f][ \t\u00a0\u2007\u202f]*| [ \t\u00a0\u2007\u202f]+"
"""Space runs that the grader's normalisation changes (a lone space is already normal)."""
_W = r"\p{L}\p{N}_"  # the grader's word characters: str.isalnum() (letters, numbers) or "_"
_JB = re.escape("".join(c for c in JOINERS_BEFORE if c != "_"))
_JA = re.escape("".join(c for c in JOINERS if c != "_"))


def token_pattern(needle: str) -> str:
    """A regex (Rust syntax) that matches where ``needle`` occurs with the grader's token boundaries.

    Before the value: the start, a non-word non-joiner character, or a joiner that follows the start
    or a non-word character; after it likewise with the after-joiners (``:`` allowed after a value).
    Existence of a match is the grader's verdict (``_boundary_ok`` over every occurrence).
    """
    before = f"(?:^|[^{_W}{_JB}]|(?:^|[^{_W}])[{_JB}])"
    after = f"(?:$|[^{_W}{_JA}]|[{_JA}](?:[^{_W}]|$))"
    return before + re.escape(needle) + after


def normalise_carriers(carriers: list[str]) -> pl.Series:
    """The grader's normalisation (NFC, runs of spaces/tabs/NBSP -> one space), vectorised."""
    nfc = [c if c.isascii() or unicodedata.is_normalized("NFC", c) else unicodedata.normalize("NFC", c)
           for c in carriers]
    hay = pl.Series("c", nfc, dtype=pl.String)
    runs = np.flatnonzero(hay.str.contains(_RUNS).to_numpy())
    if runs.size:
        hay = hay.scatter(runs, hay.gather(runs).str.replace_all(_RUNS, " "))
    return hay


def presence_matrix(carriers: list[str], values: list[str], case_sensitive: list[bool]) -> np.ndarray:
    """``out[i, j]``: value j is a whole token of carrier i (same verdict as ``contains_token``).

    A literal search of each value over all carriers, then the boundary pattern on the hits only.
    """
    out = np.zeros((len(carriers), len(values)), dtype=bool)
    if not carriers or not values:
        return out
    hay = normalise_carriers(carriers)
    for j, (value, cs) in enumerate(zip(values, case_sensitive, strict=True)):
        needle = normalise_text(value).strip()
        if not needle:
            continue
        if not cs:
            out[:, j] = [contains_token(c, value, case_sensitive=False) for c in carriers]
            continue
        hits = np.flatnonzero(hay.str.contains(needle, literal=True).to_numpy())
        if hits.size:
            out[hits, j] = hay.gather(hits).str.contains(token_pattern(needle)).to_numpy()
    return out


def fact_timeline(folds: pl.DataFrame, facts: pl.DataFrame) -> FactTimeline:
    """The timeline of every (row, graded value) of ``facts`` over the row's ``folds``."""
    require_columns(folds, FOLD_COLUMNS, "folds")
    require_columns(facts, FACT_COLUMNS, "facts")
    if facts.select(pl.struct("row_id", "check").is_duplicated().any()).item():
        raise EstimatorError("facts has a (row_id, check) twice; one line per graded value of a row")
    folds = folds.select(*FOLD_COLUMNS, (pl.col("lost") if "lost" in folds.columns
                                         else pl.lit(None, pl.Boolean)).alias("lost"))
    facts = facts.select(*FACT_COLUMNS).filter(pl.col("row_id").is_in(folds.get_column("row_id").implode()))
    last = folds.group_by("row_id").agg(pl.col("fold").max().alias("last_fold"))
    reads = (folds.filter(~pl.col("lost").fill_null(False)).select("row_id", "fold", "chunks")
             .explode("chunks").rename({"chunks": "chunk"}))
    entry = reads.group_by("row_id", "chunk").agg(pl.col("fold").min().alias("entry_fold"))
    facts = (facts.join(entry, on=["row_id", "chunk"], how="left").join(last, on="row_id", how="left")
             .with_row_index("_f"))

    # presence after every fold from entry on, graded once per distinct (carrier, value);
    # carriers travel as integer ids, their text is never copied into the (row, value, fold) pairs
    carriers = folds.get_column("carrier").unique(maintain_order=True)
    c_index = pl.DataFrame({"carrier": carriers, "_c": pl.int_range(carriers.len(), eager=True)})
    fold_ids = folds.select("row_id", "fold", "carrier").join(c_index, on="carrier", how="left").drop("carrier")
    pairs = (facts.filter(pl.col("entry_fold").is_not_null()).select("_f", "row_id", "check", "value",
                                                                     "case_sensitive", "entry_fold")
             .join(fold_ids, on="row_id", how="inner")
             .filter(pl.col("fold") >= pl.col("entry_fold")))
    vals = facts.select("value", "case_sensitive").unique(maintain_order=True).with_row_index("_v")
    matrix = presence_matrix(carriers.to_list(), vals.get_column("value").to_list(),
                             vals.get_column("case_sensitive").to_list())
    pairs = pairs.join(vals, on=["value", "case_sensitive"], how="left")
    present = matrix[pairs.get_column("_c").to_numpy(), pairs.get_column("_v").cast(pl.Int64).to_numpy()] \
        if pairs.height else np.zeros(0, dtype=bool)
    presence = (pairs.select("_f", "row_id", "check", "fold").with_columns(pl.Series("present", present))
                .sort("_f", "fold"))

    flags = folds.select("row_id", "fold", pl.col("clipped").alias("_clip"),
                         pl.col("parse_ok").not_().fill_null(False).alias("_pfail"))
    seen_before = pl.col("present").cast(pl.Int8).cum_max().shift(1, fill_value=0).cast(pl.Boolean)
    agg = presence.group_by("_f").agg(  # folds run from entry to the last fold, in order
        pl.col("present").first().alias("captured"),
        pl.col("present").last().alias("present_final"),
        pl.col("fold").filter(pl.col("present")).min().alias("first_present"),
        pl.col("fold").filter(~pl.col("present") & seen_before).min().alias("loss_fold"),
    )
    out = (facts.join(agg, on="_f", how="left")
           .join(flags.rename({"fold": "entry_fold", "_clip": "entry_clipped", "_pfail": "entry_parse_failed"}),
                 on=["row_id", "entry_fold"], how="left")
           .join(flags.rename({"fold": "loss_fold", "_clip": "loss_clipped", "_pfail": "loss_parse_failed"}),
                 on=["row_id", "loss_fold"], how="left"))
    captured = pl.col("captured").fill_null(False)
    lost = pl.col("loss_fold").is_not_null()
    out = out.with_columns(
        (pl.col("last_fold") - pl.col("entry_fold")).alias("distance"),
        pl.when(pl.col("captured").is_not_null()).then(captured & ~lost).alias("survived"),
        pl.when(pl.col("captured").is_not_null()).then(captured & lost & pl.col("present_final"))
        .alias("reappeared"),
        pl.when(pl.col("captured").is_not_null()).then(~captured & pl.col("first_present").is_not_null())
        .alias("appeared_late"),
        pl.when(captured).then(pl.coalesce("loss_fold", "last_fold") - pl.col("entry_fold")).alias("duration"),
        pl.when(captured).then(pl.col("loss_fold").is_not_null()).alias("event"),
    ).sort("_f")
    return FactTimeline(
        facts=out.select([pl.col(c).cast(t) for c, t in TIMELINE_SCHEMA.items()]),
        presence=presence.select("row_id", "check", "fold", "present"),
    )
