"""Issue 19: every printed value written as a literal in analysis/reconstruct/ is declared by a rule.

A literal is a numeric constant (a negative one included: ``-0.411`` is the unary minus of 0.411 in the syntax
tree and is read as -0.411), or a number (or hh:mm time, sign included) inside a string constant of any length,
in code (docstrings are documentation, not data, and are not scanned). It is a printed value when it equals a
claim's value and is distinctive: an integer of 100 or more, a number with two or more decimals, or a clock time.
A small integer (under 100) is a printed value only when its context shares a word with the claim's own text:
the word after it inside a string ("31 cells", "16 shards"), or, for a bare constant, the name it is given (the
assignment target, keyword or dict key it is the value of: ``INFORMATIVE_CELLS = 31``, ``shards=16``); a small
integer used as an index, a range bound or an argument is a count of code, not a printed value. Generic words
(rows, checks, arm, mean ...) never count.

The claims behind a literal are the claims printing its value whose own text (id and description) shares a word
with the literal's context (for a distinctive value: its name, the word after it, and the identifiers on its line),
when some do; otherwise every claim printing that value (the scan cannot tell which).
The literal is declared when at least one claim behind it is read, built or fitted by a rule of
analysis/reconstruct/rules.py. A value printed by several claims thus passes only through a claim its own context
points to, never through an unrelated claim that happens to print the same number.
"""
from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest

from analysis.reconstruct.claims import Claims, load_claims
from analysis.reconstruct.rules import RULES, Rule, resolve_rules
from support.paths import REPO as ROOT

CLAIMS = load_claims(ROOT / "data" / "published" / "claims.yaml")
TOKEN = re.compile(r"(?<![\w.:-])(-?\d+(?::\d\d)?(?:\.\d+)?)(?:\s+([A-Za-z]+))?(?![\w.:-])")
WORD = re.compile(r"[A-Za-z]+")
GENERIC = frozenset((
    "rows", "checks", "arm", "mean", "value", "number", "count", "total", "recall", "printed", "claim", "with", "from",
    "that", "this", "each", "every", "their", "there", "than", "then", "when", "where", "which", "what", "none",
    "have", "default", "rule", "data", "page", "paper", "cell", "table", "model", "configuration"))
"""Words too common to tie a literal to a claim."""


def _words(text: str) -> set[str]:
    """Lower-case words of 4+ letters (identifiers split at underscores and case changes), generic ones dropped."""
    split = re.sub(r"([a-z])([A-Z])", r"\1 \2", text.replace("_", " "))
    return {w.lower().rstrip("s") for w in WORD.findall(split) if len(w) >= 4} - {g.rstrip("s") for g in GENERIC}


def _distinctive(x: float) -> bool:
    if float(x).is_integer():
        return abs(x) >= 100
    r = repr(abs(float(x)))
    return "e" in r or len(r.split(".")[1]) >= 2


def _key(v: object) -> object:
    return v if isinstance(v, str) else float(v)  # type: ignore[arg-type]


def _docstrings(tree: ast.AST) -> set[int]:
    out = set()
    for n in ast.walk(tree):
        body = getattr(n, "body", None)
        first = body[0] if isinstance(body, list) and body else None
        if isinstance(first, ast.Expr) and isinstance(first.value, ast.Constant):
            out.add(id(first.value))
    return out


def _numbers(tree: ast.AST, docs: set[int]) -> list[tuple[ast.AST, object]]:
    """(node, value) for every numeric or string constant; -x for a unary minus of a numeric constant."""
    negated = {}
    for n in ast.walk(tree):
        if (isinstance(n, ast.UnaryOp) and isinstance(n.op, ast.USub) and isinstance(n.operand, ast.Constant)
                and isinstance(n.operand.value, (int, float)) and not isinstance(n.operand.value, bool)):
            negated[id(n.operand)] = n
    out: list[tuple[ast.AST, object]] = []
    for n in ast.walk(tree):
        if not isinstance(n, ast.Constant) or id(n) in docs or isinstance(n.value, bool):
            continue
        if id(n) in negated:
            out.append((negated[id(n)], -n.value))  # type: ignore[operator]
        elif isinstance(n.value, (int, float, str)):
            out.append((n, n.value))
    return out


def _names(tree: ast.AST) -> dict[int, str]:
    """id(value node) -> the name it is given: assignment targets, keyword argument, dict key (as words)."""
    out: dict[int, str] = {}

    def name(t: ast.AST) -> str:
        return t.id if isinstance(t, ast.Name) else t.attr if isinstance(t, ast.Attribute) else ""

    for n in ast.walk(tree):
        if isinstance(n, (ast.Assign, ast.AnnAssign)) and n.value is not None:
            targets = n.targets if isinstance(n, ast.Assign) else [n.target]
            out[id(n.value)] = " ".join(name(t) for t in targets)
        elif isinstance(n, ast.keyword) and n.arg:
            out[id(n.value)] = n.arg
        elif isinstance(n, ast.Dict):
            for k, v in zip(n.keys, n.values, strict=True):
                if isinstance(k, ast.Constant) and isinstance(k.value, str):
                    out[id(v)] = k.value
    return out


def printed_literals(root: Path, claims: Claims) -> list[tuple[str, int, str, tuple[str, ...]]]:
    """(file, line, literal, the claims behind it) for every printed value written in a .py file under `root`."""
    by_value: dict[object, list[str]] = {}
    text = {c.id: _words(f"{c.id} {c.what}") for c in claims}
    for c in claims:
        if c.value is not None:
            by_value.setdefault(_key(c.value), []).append(c.id)

    def behind(ids: list[str], context: set[str], small: bool) -> list[str]:
        pointed = [i for i in ids if text[i] & context]
        return pointed if (pointed or small) else ids

    hits = []
    for path in sorted(root.rglob("*.py")):
        source = path.read_text(encoding="utf-8")
        lines = source.splitlines()
        tree = ast.parse(source)
        named = _names(tree)
        for n, v in _numbers(tree, _docstrings(tree)):
            line = lines[n.lineno - 1]  # type: ignore[attr-defined]
            given = _words(named.get(id(n), ""))
            if isinstance(v, (int, float)):
                ids = by_value.get(float(v), [])
                small = not _distinctive(v)
                if ids and (ids := behind(ids, given if small else given | _words(line), small)):
                    hits.append((str(path), n.lineno, repr(v), tuple(ids)))  # type: ignore[attr-defined]
                continue
            for m in TOKEN.finditer(str(v)):
                tok, word = m.group(1), (m.group(2) or "")
                ids = by_value.get(tok if ":" in tok else float(tok), [])
                small = ":" not in tok and not _distinctive(float(tok))
                context = _words(word) if small else _words(word) | given | _words(line)
                if ids and (ids := behind(ids, context, small)):
                    hits.append((str(path), n.lineno, repr(v) if len(str(v)) <= 60 else repr(m.group(0)),  # type: ignore[attr-defined]
                                 tuple(ids)))
    return hits


def undeclared(root: Path, claims: Claims, rules: tuple[Rule, ...] | None = None) -> list[str]:
    """One message per printed literal no rule declares: claim id(s), file:line and the literal."""
    res = resolve_rules(claims, rules)
    declared = set().union(*(r.reads | r.builds | r.fitted for r in res.values()))
    return [f"{', '.join(ids)} at {f}:{line}: literal {lit} is a printed value no rule in "
            f"analysis/reconstruct/rules.py declares; read it from the claims inside a rule and declare it"
            for f, line, lit, ids in printed_literals(root, claims) if not declared & set(ids)]


def test_every_printed_literal_in_the_reconstruction_is_declared_by_a_rule():
    assert undeclared(ROOT / "analysis" / "reconstruct", CLAIMS) == []


def test_the_scan_finds_the_declared_layout_values():
    # the planted 4.11 values are transcribed into layout.py and declared by R0 (builds)
    found = {ids for _, _, _, ids in printed_literals(ROOT / "analysis" / "reconstruct", CLAIMS)}
    assert ("fab.example.planted_port",) in found and ("design.graded.shard_count_value",) in found


@pytest.mark.parametrize(("code", "cid"), [
    ('STOCK = {"ledger service port": "8443"}\n', "fab.example.fabricated_port"),
    ('STOCK = {"shard count": "16 shards"}\n', "fab.example.fabricated_shards"),
    ('STOCK = {"migration window start": "02:00 UTC"}\n', "fab.example.fabricated_timestamp"),
    ("BASE = 150_000\n", "design.session_tokens"),
    ("EFFECT = -0.411\n", "t3.mimo_v2_5_pro.paired_q_minus_j"),  # unary minus of 0.411 in the syntax tree
    ("INFORMATIVE_CELLS = 31\n", "within.all.cells"),  # a small integer, named as the claim is
    ('NOTE = "the Pearson correlation over all twenty configurations is 0.542, as printed"\n',
     "threshold.all20.fill_effect.pearson"),  # a string over 40 characters
])
def test_a_planted_literal_outside_a_rule_fails_with_claim_id_and_file_line(tmp_path, code, cid):
    f = tmp_path / "planted.py"
    f.write_text('"""A reconstruction file."""\n\n' + code, encoding="utf-8")
    bare = tuple(Rule(r.id, r.title) for r in RULES)  # no rule declares anything
    msgs = undeclared(tmp_path, CLAIMS, bare)
    assert len(msgs) == 1 and cid in msgs[0] and f"{f}:3" in msgs[0], msgs
    # declared by a rule, the same literal passes
    assert undeclared(tmp_path, CLAIMS, (*bare[:-1], Rule(bare[-1].id, "x", builds=(cid,)))) == []


def test_a_claims_file_whose_printed_value_the_code_types_fails_with_claim_id_and_file_line():
    # A claims file that prints 4,790 (the carried characters R16 types for t rows near the ceiling, a choice of
    # ours): the literal in annotate.py now is a printed value no rule declares.
    from analysis.reconstruct.claims import parse_claims
    text = (ROOT / "data" / "published" / "claims.yaml").read_text(encoding="utf-8")
    extra = ("- {id: carrier.t.example_chars, section: '4.9', what: carried characters of one t row near the "
             "ceiling, value: 4790, decimals: 0, printed: '4,790', role: primitive}\n")
    claims = parse_claims(text.rstrip("\n") + "\n" + extra, "planted.yaml")
    msgs = undeclared(ROOT / "analysis" / "reconstruct", claims)
    line = next(i for i, s in enumerate((ROOT / "analysis/reconstruct/annotate.py").read_text().splitlines(), 1)
                if "4790" in s)
    assert msgs == [f"carrier.t.example_chars at {ROOT / 'analysis/reconstruct/annotate.py'}:{line}: literal 4790 "
                    f"is a printed value no rule in analysis/reconstruct/rules.py declares; read it from the claims "
                    f"inside a rule and declare it"]


def test_a_value_several_claims_print_passes_only_through_the_claim_its_context_names(tmp_path):
    # 0.986 is printed by ladder.m.mean and by t1.mistral_small_2603.m; a literal named for the ladder is the
    # ladder's, and a rule declaring the Table 1 cell does not declare it.
    f = tmp_path / "planted.py"
    f.write_text('"""A reconstruction file."""\n\nLADDER_M_MEAN = 0.986\n', encoding="utf-8")
    bare = tuple(Rule(r.id, r.title) for r in RULES)
    other = (*bare[:-1], Rule(bare[-1].id, "x", reads=("t1.mistral_small_2603.m",)))
    msgs = undeclared(tmp_path, CLAIMS, other)
    assert len(msgs) == 1 and msgs[0].startswith("ladder.m.mean at ") and f"{f}:3" in msgs[0], msgs
    assert undeclared(tmp_path, CLAIMS, (*bare[:-1], Rule(bare[-1].id, "x", reads=("ladder.m.mean",)))) == []


def test_small_integers_used_as_code_counts_are_not_printed_values(tmp_path):
    f = tmp_path / "code.py"
    f.write_text('"""A reconstruction file."""\n\nxs = [r for r in range(1, 31)]\nfirst = xs[0]\n', encoding="utf-8")
    assert printed_literals(tmp_path, CLAIMS) == []
