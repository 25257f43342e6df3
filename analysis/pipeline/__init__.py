"""The generation pipeline behind ``python generate.py``: verify -> results -> tables -> figures -> report.

The orchestrator on top: it decides which stages run (content keys, the stamp), stages and commits
their outputs, and holds the lock. Each stage's work lives with what it produces:

- verify: analysis.evidence.stage (plus the report's check that its front matter can hold the path)
- results: analysis.results.stage (every block of analysis.results.registry) -> results.json
- tables: analysis.tables.registry.tables_stage -> tables/
- figures: analysis.figures.registry.figures_stage -> figures/
- report: analysis.report.stage (manuscript, Pandoc page, claims-audit copies, trajectory pages) -> report/

Its modules: analysis.pipeline.keys (each stage's content key), .stamp (OUT/.build-stamp.json),
.stages (each stage's work), .inputs (what the stages share: loaded lazily, at most once, and the
estimates computed once), .pipeline (``build``: which stages run, staging, the commit, the lock) and
.check (``check``: regenerate and compare). The sources each stage runs are listed in
analysis.sources (its key, and results.json's code digest).

Methods note: every stage has a content key, the SHA-256 of what it reads: the bytes of the
evidence files named in the provenance lock, the analysis Params, the source files of the
code it runs, the versions of the libraries that shape its bytes, and the key of the stage
before it. A stage whose key and output digests match ``OUT/.build-stamp.json`` is skipped,
so an unchanged input costs a few file hashes and no heavy import. Outputs are deterministic
(sorted JSON, fixed figure metadata, no timestamps), which is what ``check`` relies on.

Layout of OUT (``python generate.py`` uses OUT = the repository root)::

    results.json             headline estimates (docs/RESULTS_KEYS.md) + claims_audit headline
    tables/<name>.csv|md|html every table: full-precision CSV, Markdown, great_tables HTML
    figures/<name>.png|svg    every figure
    report/_quarto.yml, report/index.qmd   the Quarto manuscript (``quarto render report/`` writes
                              report/_quarto/manuscript.html, never report/index.html)
    report/index.html         the offline page: index.qmd rendered by Pandoc (no Quarto needed)
    .build-stamp.json         stage keys + the manifest: every file each stage wrote, with its digest
    .build.lock               serialises builds of one OUT (analysis.outdir)

Safety of OUT (analysis.outdir): stages write into a staging directory inside OUT, and the new files
replace the old ones in one short commit with SIGINT/SIGTERM deferred; the build replaces or removes
only files it writes or that the manifest says an earlier build wrote, never a user's own file.
"""

from analysis.outdir import BuildError, BuildInterrupted
from analysis.pipeline.check import UNMANAGED_REPORT_DIRS, VOLATILE_RESULT_KEYS, check, diff_outputs, managed_files
from analysis.pipeline.keys import CLAIMS, STAGE_LIBS, STAGES, STAMP_VERSION, evidence_key, stage_keys
from analysis.pipeline.pipeline import BuildSummary, Progress, build, stderr_progress
from analysis.pipeline.stages import run_stage
from analysis.pipeline.stamp import STAMP_LIMIT, STAMP_NAME, read_stamp

_CLAIMS = CLAIMS  # the names tests and older callers import
_STAGE_LIBS = STAGE_LIBS
_read_stamp = read_stamp

__all__ = [
    "CLAIMS", "STAGES", "STAGE_LIBS", "STAMP_LIMIT", "STAMP_NAME", "STAMP_VERSION", "UNMANAGED_REPORT_DIRS",
    "VOLATILE_RESULT_KEYS", "BuildError", "BuildInterrupted", "BuildSummary", "Progress", "build", "check",
    "diff_outputs", "evidence_key", "managed_files", "read_stamp", "run_stage", "stage_keys", "stderr_progress",
]
