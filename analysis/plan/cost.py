"""Tokens, money and wall time of a v2 study, from the fixture's sizing and a user price table.

Methods note. Tokens of one row (one arm's fold-and-recall trajectory) are a planning estimate
from the runner's frozen offline sizing (analysis.runner.sizing), computed the way the protocol
computes each call's prompt estimate: per fold, system prompt + schema + message template +
the chunk's `tokens_est` + the previous carrier + per-message overhead; the carrier is taken at
its ceiling min(carry_cap, output_tokens) (an upper planning figure: real carriers are often
shorter), and each fold's output at the same ceiling; the recall turn adds its own prompt with
the carrier and an output of `recall_max_tokens`. Lost folds, retries and reasoning tokens are
not included. A paired repeat costs one row of each arm. Money is
tokens x price per million; wall time of a row is prompt tokens / prompt_tokens_per_second +
output tokens / output_tokens_per_second, run one call after another (divide by the sweep's
concurrency for elapsed time).

Price table (TOML or CSV, chosen by the file suffix):

    # prices.toml
    [[endpoint]]
    name = "openrouter/qwen/qwen3.5-9b"       # any label
    input_per_million = 0.10                  # currency units per million prompt tokens
    output_per_million = 0.40                 # per million output tokens
    prompt_tokens_per_second = 2000           # optional (default 1000)
    output_tokens_per_second = 60             # optional (default 50)

    # prices.csv
    endpoint,input_per_million,output_per_million,prompt_tokens_per_second,output_tokens_per_second
    openrouter/qwen/qwen3.5-9b,0.10,0.40,2000,60

A design's money is K (c_config + R x money of one paired repeat), c_config from `--config-cost`
(default 0: the table prices tokens only); the recommended design is the cheapest by this money
(analysis.plan.advice). A design cell's money and hours use the mean over the table's endpoints (a v2 panel spreads its
K configurations over the endpoints it can buy); the per-endpoint figures are reported as well.
"""

from __future__ import annotations

import csv
import io
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from analysis.safeio import SafeIOError, loads_toml, read_text

DEFAULT_PROMPT_TPS = 1000.0
DEFAULT_OUTPUT_TPS = 50.0


PRICE_TABLE_LIMIT = 4 << 20
"""Largest --price-table file read."""


class PriceTableError(ValueError):
    """The price table cannot be read; the message says the fix."""


@dataclass(frozen=True, slots=True)
class Price:
    """One endpoint's prices and throughput."""

    endpoint: str
    """Label from the table."""
    input_per_million: float
    """Price per million prompt tokens."""
    output_per_million: float
    """Price per million output tokens."""
    prompt_tokens_per_second: float
    """Prompt processing throughput (for wall time)."""
    output_tokens_per_second: float
    """Generation throughput (for wall time)."""


@dataclass(frozen=True, slots=True)
class RowTokens:
    """Estimated tokens of one row of one arm."""

    arm: str
    """Arm code."""
    calls: int
    """Fold calls plus the recall call."""
    prompt_tokens: int
    """Prompt tokens over all calls."""
    output_tokens: int
    """Output tokens over all calls (ceiling)."""


def _number(value: Any, where: str, field: str, *, positive: bool = False) -> float:
    try:
        out = float(value)
    except (TypeError, ValueError):
        raise PriceTableError(f"{where}: {field} = {value!r} is not a number; write e.g. 0.25") from None
    if not math.isfinite(out) or out < 0 or (positive and out == 0):
        raise PriceTableError(f"{where}: {field} = {value!r} must be a finite number "
                              f"{'> 0' if positive else '>= 0'}")
    return out


def _price(entry: Mapping[str, Any], where: str) -> Price:
    name = entry.get("name", entry.get("endpoint"))
    if not isinstance(name, str) or not name.strip():
        raise PriceTableError(f"{where}: missing endpoint name; add name = \"...\" (CSV: column endpoint)")
    for key in ("input_per_million", "output_per_million"):
        if entry.get(key) in (None, ""):
            raise PriceTableError(f"{where}: endpoint {name!r} lacks {key}; add it")
    pps = entry.get("prompt_tokens_per_second")
    ops = entry.get("output_tokens_per_second")
    return Price(name.strip(), _number(entry["input_per_million"], where, "input_per_million"),
                 _number(entry["output_per_million"], where, "output_per_million"),
                 DEFAULT_PROMPT_TPS if pps in (None, "")
                 else _number(pps, where, "prompt_tokens_per_second", positive=True),
                 DEFAULT_OUTPUT_TPS if ops in (None, "")
                 else _number(ops, where, "output_tokens_per_second", positive=True))


def parse_price_table(text: str, suffix: str, source: str = "price table") -> tuple[Price, ...]:
    """Prices from TOML ([[endpoint]] tables) or CSV (header row) text."""
    if suffix.lower() == ".toml":
        try:
            doc = loads_toml(text, source)
        except SafeIOError as exc:
            raise PriceTableError(f"{exc}; write [[endpoint]] tables") from None
        entries = doc.get("endpoint")
        if not isinstance(entries, list) or not entries:
            raise PriceTableError(f"{source}: no [[endpoint]] tables; add one per endpoint")
        out = [_price(e, f"{source} endpoint {i}") for i, e in enumerate(entries, 1)]
    elif suffix.lower() == ".csv":
        reader = csv.DictReader(io.StringIO(text.lstrip("\ufeff")))
        missing = {"endpoint", "input_per_million", "output_per_million"} - set(reader.fieldnames or ())
        if missing:
            raise PriceTableError(f"{source}: header lacks {sorted(missing)}; the first line must name "
                                  "endpoint,input_per_million,output_per_million")
        out = [_price(row, f"{source} line {i}") for i, row in enumerate(reader, 2)]
        if not out:
            raise PriceTableError(f"{source}: no endpoint lines after the header")
    else:
        raise PriceTableError(f"{source}: use a .toml or .csv file (got suffix {suffix!r})")
    names = [p.endpoint for p in out]
    if len(set(names)) != len(names):
        raise PriceTableError(f"{source}: endpoint names repeat ({names}); give each a distinct name")
    return tuple(out)


def load_price_table(path: Path) -> tuple[Price, ...]:
    """Read and parse a price table file."""
    try:
        text = read_text(path, limit=PRICE_TABLE_LIMIT)
    except SafeIOError as exc:
        raise PriceTableError(f"--price-table {exc}") from None
    except OSError as exc:
        raise PriceTableError(f"--price-table {path}: {exc.strerror or exc}") from None
    return parse_price_table(text, Path(path).suffix, f"--price-table {path}")


def row_tokens(fixture: Any, arm: Any, recall_max_tokens: int = 1024) -> RowTokens:
    """Estimated tokens of one trajectory of `arm` over `fixture` (see the module note)."""
    from analysis.runner.graders import RECALL_SYSTEM_PROMPT, recall_prompt
    from analysis.runner.protocol import RunSettings, _static
    from analysis.runner.sizing import MESSAGE_OVERHEAD_TOKENS, estimate_tokens

    st = _static(arm, RunSettings())
    carrier = min(arm.carry_cap, arm.output_tokens)
    first = estimate_tokens("(none yet: this is the start of the session)")
    prompt = 0
    for i, chunk in enumerate(fixture.chunks):
        prompt += (st.system_tokens + st.schema_tokens + st.template_tokens + (first if i == 0 else carrier)
                   + chunk.tokens_est + 2 * MESSAGE_OVERHEAD_TOKENS)
    n_folds = len(fixture.chunks)
    recall = (estimate_tokens(RECALL_SYSTEM_PROMPT) + estimate_tokens(recall_prompt("", fixture.labels))
              + carrier + 2 * MESSAGE_OVERHEAD_TOKENS)
    return RowTokens(arm=arm.code, calls=n_folds + 1, prompt_tokens=prompt + recall,
                     output_tokens=n_folds * carrier + recall_max_tokens)


def row_cost(tokens: RowTokens, price: Price) -> dict[str, float]:
    """Money and sequential seconds of one row at one endpoint."""
    money = (tokens.prompt_tokens * price.input_per_million
             + tokens.output_tokens * price.output_per_million) / 1e6
    seconds = (tokens.prompt_tokens / price.prompt_tokens_per_second
               + tokens.output_tokens / price.output_tokens_per_second)
    return {"money": money, "seconds": seconds}


def repeat_cost(tokens: Sequence[RowTokens], prices: Sequence[Price]) -> dict[str, Any]:
    """Cost of one paired repeat (one row per arm): per endpoint and the mean over endpoints."""
    per: dict[str, dict[str, Any]] = {}
    money: list[float] = []
    seconds: list[float] = []
    for p in prices:
        rows = [row_cost(t, p) for t in tokens]
        money.append(sum(r["money"] for r in rows))
        seconds.append(sum(r["seconds"] for r in rows))
        per[p.endpoint] = {"money": money[-1], "seconds": seconds[-1],
                           "rows": {t.arm: r for t, r in zip(tokens, rows, strict=True)}}
    mean_money = sum(money) / len(money)
    mean_seconds = sum(seconds) / len(seconds)
    return {"per_endpoint": per, "mean_money": mean_money, "mean_seconds": mean_seconds}


def cell_cost(k: int, r: int, per_repeat: Mapping[str, Any], per_configuration: float = 0.0) -> dict[str, float]:
    """Money and sequential hours of K configurations x R paired repeats (mean endpoint).

    Money is K (per_configuration + R x money of a paired repeat): the cost model of
    analysis.plan.advice (per_configuration is `--config-cost`, default 0).
    """
    return {"money": k * (per_configuration + r * per_repeat["mean_money"]),
            "hours": k * r * per_repeat["mean_seconds"] / 3600.0}
