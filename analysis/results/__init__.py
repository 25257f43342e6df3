"""Assemble results.json: the docs/RESULTS_CONTRACT.md contract keys plus documented extras.

`build_results(package, params)` computes every block of analysis.results.registry that the
package alone determines and returns a JSON-ready dict: the keys of docs/RESULTS_CONTRACT.md exactly (counts as
ints, floats at full precision, `None` for undefined statistics), then the extra keys documented
in docs/RESULTS_KEYS.md, in registry order. It does no file work except hashing the analysis
sources for `provenance.code_sha256`; `write_results` is the one writer. The build's results stage
(analysis.results.stage) adds the blocks only it can compute.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

from analysis.params import Params


def build_results(package: Any, params: Params) -> dict[str, Any]:
    """Every docs/RESULTS_CONTRACT.md key of `package` (an EvidencePackage), plus the documented extras."""
    from analysis.results.inputs import ResultsInputs
    from analysis.results.registry import assemble

    return assemble(ResultsInputs(package, params))


def write_results(results: Mapping[str, Any], path: Path) -> None:
    """Write results.json (indent 2, full-precision floats, no NaN tokens, trailing newline)."""
    from analysis.safeio import write_json

    write_json(path, dict(results), sort_keys=False)
