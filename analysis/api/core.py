"""Verify, load and analyse an evidence package from Python: the calls behind the command line.

``verify``/``load`` are the evidence layer's own ``verify_package``/``load_package``; ``analyse``
assembles results.json through the build's own inputs (analysis.pipeline.inputs.BuildInputs), so
``analyse(pkg).to_dict()`` is, key for key, what ``carriers --evidence DIR --out OUT`` writes to
OUT/results.json, and ``Results.table(name)`` is the table the build writes to OUT/tables/<name>.csv.
Nothing here computes a statistic of its own.
"""

from __future__ import annotations

import copy
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from analysis.evidence import EvidenceError, EvidencePackage, PackageSummary, load_package, verify_package
from analysis.evidence.errors import Problem
from analysis.params import DEFAULT_PARAMS, Params

if TYPE_CHECKING:
    import polars as pl
    from matplotlib.figure import Figure

    from analysis.pipeline.inputs import BuildInputs

PathLike = str | os.PathLike[str]
"""A package directory, as a string or a path."""

PackageLike = EvidencePackage | str | os.PathLike[str]
"""A loaded package (:func:`load`) or its directory (loaded, and so verified, on the call)."""

class ApiError(ValueError):
    """A call of the Python API that cannot be answered as asked; the message says the fix."""


class UnknownTableError(ApiError):
    """``Results.table(name)`` with a name that is no report table; the message lists the known names."""


class NotAPackageError(ApiError):
    """A package argument that is neither a loaded package nor a directory path."""


def verify(path: PathLike) -> PackageSummary:
    """Verify an evidence package: its provenance lock, then its format and cross-file rules.

    The check ``carriers verify DIR`` runs (analysis.evidence.verify_package), as a function.

    Parameters
    ----------
    path : str or os.PathLike
        The package directory (it holds ``provenance.lock``, ``study.toml``, ``rows.csv``, ``checks.csv``).

    Returns
    -------
    analysis.evidence.PackageSummary
        Files verified, rows, checks and configurations; ``.line()`` is the command's one-line summary.

    Raises
    ------
    analysis.evidence.PackageNotFoundError
        The directory does not exist.
    analysis.evidence.ProvenanceError
        A locked file's bytes differ from its digest (the message names the file and both digests).
    analysis.evidence.EvidenceError
        Any other problem of the package, every one listed with its file, line and column.

    References
    ----------
    docs/EVIDENCE_FORMAT.md (the evidence package format and its provenance lock).

    Examples
    --------
    >>> import analysis
    >>> analysis.verify("tests/fixtures/handmade").rows
    22
    >>> analysis.verify("no/such/package")
    Traceback (most recent call last):
    ...
    analysis.evidence.errors.PackageNotFoundError: ...
    """
    return verify_package(Path(path))


def load(path: PathLike) -> EvidencePackage:
    """Verify and load an evidence package (its lock is checked before a byte is parsed).

    Parameters
    ----------
    path : str or os.PathLike
        The package directory.

    Returns
    -------
    analysis.evidence.EvidencePackage
        The study, the rows and checks as polars DataFrames, the digests of the locked files.

    Raises
    ------
    analysis.evidence.EvidenceError
        As :func:`verify` (PackageNotFoundError, ProvenanceError, ...): nothing is loaded from a
        package that fails verification.

    References
    ----------
    docs/EVIDENCE_FORMAT.md.

    Examples
    --------
    >>> import analysis
    >>> pkg = analysis.load("tests/fixtures/handmade")
    >>> pkg.study.scenario, pkg.rows.height
    ('S5', 22)
    """
    return load_package(Path(path))


def as_package(package: PackageLike) -> EvidencePackage:
    """``package`` itself when loaded, else :func:`load` of the directory it names."""
    if isinstance(package, EvidencePackage):
        return package
    if isinstance(package, str | os.PathLike):
        return load(package)
    raise NotAPackageError(
        f"expected an evidence package (analysis.load(DIR)) or its directory, got {type(package).__name__}; "
        "pass the directory, for example analysis.analyse('data/v1')")


def _build_inputs(package: EvidencePackage, params: Params, companion: PathLike | None) -> BuildInputs:
    from analysis.pipeline.inputs import BuildInputs
    from analysis.pipeline.keys import CLAIMS

    root = Path(package.root)
    return BuildInputs(root, root, params, claims_path=CLAIMS, package=package,
                       pilot_dir=Path(companion) if companion is not None else None)


def no_primary_rows(package: EvidencePackage) -> EvidenceError | None:
    """The named error for a package with no valid row of its primary scenario, else None."""
    scenario = package.study.scenario
    rows = package.rows
    if rows.height and rows.filter((rows["scenario"] == scenario) & rows["valid"]).height:
        return None
    scenarios = sorted(set(rows.get_column("scenario").to_list())) if rows.height else []
    return EvidenceError(
        [Problem("study.toml", None, "scenario",
                 f"the primary scenario {scenario!r} has no valid row in rows.csv (its scenarios: "
                 f"{', '.join(scenarios) or 'none'})")],
        summary="nothing to estimate",
        fix="set [study] scenario in study.toml to a scenario rows.csv holds, then re-lock with "
            "`carriers lock DIR`")


@dataclass(frozen=True)
class Results:
    """Every result of one package: results.json as a dict, and every report table as a DataFrame.

    Made by :func:`analyse`; the same in-memory assembly the build writes (analysis.pipeline.inputs).
    """

    package: EvidencePackage
    """The analysed package."""
    params: Params
    """The analysis tunables used."""
    inputs: BuildInputs = field(repr=False)
    """The build's inputs of this package: every estimate computed once (``inputs.estimates``)."""
    _tables: dict[str, Any] = field(default_factory=dict, repr=False, compare=False)
    _figures: dict[str, Any] = field(default_factory=dict, repr=False, compare=False)

    def to_dict(self) -> dict[str, Any]:
        """results.json as a dict (a copy): the same keys, in the same order, as the file the build writes.

        Examples
        --------
        >>> import analysis
        >>> r = analysis.analyse(analysis.load("tests/fixtures/handmade"))
        >>> r.to_dict()["panel"]["mean"]
        0.25
        """
        return copy.deepcopy(self.inputs.results)

    def _specs(self) -> dict[str, Any]:
        if not self._tables:
            from analysis.tables.registry import build_tables

            self._tables.update({s.name: s for s in build_tables(self.inputs.context())})
        return self._tables

    @property
    def table_names(self) -> tuple[str, ...]:
        """The names of every report table, in report order (the file stems under OUT/tables/)."""
        return tuple(self._specs())

    def table(self, name: str) -> pl.DataFrame:
        """One report table at full precision: what the build writes to ``OUT/tables/<name>.csv``.

        Parameters
        ----------
        name : str
            The table's name (one of :attr:`table_names`, e.g. ``"t3_panel"``).

        Raises
        ------
        UnknownTableError
            ``name`` is no report table; the message lists the known names.

        Examples
        --------
        >>> import analysis
        >>> r = analysis.analyse(analysis.load("tests/fixtures/handmade"))
        >>> r.table("t3_panel").height
        3
        """
        specs = self._specs()
        if name not in specs:
            raise UnknownTableError(f"no report table is named {name!r}; the known names: {', '.join(specs)}")
        return specs[name].data.clone()


    def _figure_specs(self) -> dict[str, Any]:
        if not self._figures:
            from analysis.figures.registry import build_figures

            self._figures.update({s.name: s for s in build_figures(self.inputs.context())})
        return self._figures

    @property
    def figure_names(self) -> tuple[str, ...]:
        """The names of every report figure, in report order (the file stems under OUT/figures/)."""
        return tuple(self._figure_specs())

    def figure(self, name: str) -> Figure:
        """One report figure, drawn as the build draws it into ``OUT/figures/<name>.png``.

        Parameters
        ----------
        name : str
            The figure's name (one of :attr:`figure_names`, e.g. ``"forest"``).

        Raises
        ------
        UnknownTableError
            ``name`` is no report figure; the message lists the known names.

        Examples
        --------
        >>> import analysis
        >>> r = analysis.analyse("tests/fixtures/handmade")
        >>> r.figure("forest").axes[0].get_xlabel() != ""
        True
        """
        specs = self._figure_specs()
        if name not in specs:
            raise UnknownTableError(f"no report figure is named {name!r}; the known names: {', '.join(specs)}")
        return specs[name].figure


def analyse(package: PackageLike, params: Params | None = None, *, companion: PathLike | None = None) -> Results:
    """Compute every result of a package: what ``carriers --evidence DIR --out OUT`` writes to results.json.

    Parameters
    ----------
    package : EvidencePackage or str or os.PathLike
        A package from :func:`load`, or its directory (verified and loaded here).
    params : analysis.params.Params, optional
        The analysis tunables; default ``analysis.params.DEFAULT_PARAMS`` (the paper's).
    companion : str or os.PathLike, optional
        A pilot package reported beside the evidence (``--companion DIR``).

    Returns
    -------
    Results
        ``.to_dict()`` (results.json), ``.table(name)`` (any report table as a polars DataFrame).

    Raises
    ------
    analysis.evidence.EvidenceError
        The package fails verification, or has no valid row of its primary scenario.

    References
    ----------
    docs/RESULTS_CONTRACT.md and docs/RESULTS_KEYS.md (every key of results.json).

    Examples
    --------
    >>> import analysis
    >>> r = analysis.analyse("tests/fixtures/handmade")
    >>> r.to_dict()["panel"]["configurations"]
    3
    """
    pkg = as_package(package)
    problem = no_primary_rows(pkg)
    if problem is not None:
        raise problem
    return Results(pkg, params or DEFAULT_PARAMS, _build_inputs(pkg, params or DEFAULT_PARAMS, companion))


def report(package: PackageLike, out: PathLike, params: Params | None = None, *,
           companion: PathLike | None = None, force: bool = False) -> Path:
    """Build results.json, tables, figures and the report of a package into ``out``; the page written.

    The build ``carriers --evidence DIR --out OUT`` runs (analysis.pipeline.build), with the same
    safety of OUT: only files the build writes are replaced, and nothing is written when the
    package fails verification.

    Parameters
    ----------
    package : EvidencePackage or str or os.PathLike
        A package from :func:`load`, or its directory.
    out : str or os.PathLike
        The output directory (created when missing; not the package nor inside it).
    params : analysis.params.Params, optional
        The analysis tunables; default the paper's.
    companion : str or os.PathLike, optional
        A pilot package reported beside the evidence.
    force : bool
        Rebuild every stage even when its inputs are unchanged.

    Returns
    -------
    pathlib.Path
        ``out/report/index.html``.

    Raises
    ------
    analysis.evidence.EvidenceError
        The package fails verification.
    analysis.outdir.BuildError
        ``out`` cannot hold the outputs (the message says why and what to pass).

    References
    ----------
    docs/ARCHITECTURE.md (the build's stages and the safety of OUT).

    Examples
    --------
    >>> import analysis, tempfile, pathlib
    >>> out = pathlib.Path(tempfile.mkdtemp()) / "out"
    >>> page = analysis.report("tests/fixtures/handmade", out)
    >>> page.relative_to(out).as_posix(), page.is_file()
    ('report/index.html', True)
    """
    from analysis import pipeline

    pkg = as_package(package)
    pipeline.build(Path(pkg.root), Path(out), params or DEFAULT_PARAMS, progress=None, force=force,
                   companions=[Path(companion)] if companion is not None else [])
    return Path(out) / "report" / "index.html"
