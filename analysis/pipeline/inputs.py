"""The inputs of one build, loaded lazily and at most once, that the stages share.

Methods note: the package (verified before parsing, once: the build hands in the package it verified
before creating OUT), the companion package named beside the evidence (``--companion``: a package
whose study.toml declares ``kind = "pilot"``, also verified first), the committed fixtures behind
entry folds (analysis.evidence.folds.load_fixture_library) and OUT/design.json (read once by the
build, which keys its stages on the same bytes). From them one ResultsInputs computes every estimate
once; results.json is assembled from it in memory (never read back from OUT), the claims audit
(v1 evidence only) reads the same assembled blocks, and the tables and figures render the same
typed estimates (``ReportContext.estimates``).
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from analysis.evidence import load_package
from analysis.evidence.describe import display_path, evidence_kind
from analysis.evidence.package import parse_verified
from analysis.invocation import analysis_command
from analysis.outdir import BuildError
from analysis.safeio import loads_json


class CompanionError(BuildError):
    """A companion package the report cannot show beside the evidence; the message says the fix."""


class BuildInputs:
    """One build's evidence, params, OUT (the staging directory) and lazily loaded inputs."""

    def __init__(self, evidence_dir: Path, out_dir: Path, params: Any, *, claims_path: Path,
                 pilot_dir: Path | None = None, package: Any = None,
                 design: Mapping[str, Any] | None = None, verified: Any = None,
                 pilot_verified: Any = None, fixtures: Any = None, pointer_dir: Path | None = None,
                 pointer_verified: Any = None) -> None:
        """``pilot_dir``: the companion package reported beside the evidence (its pilot), if any;
        ``pointer_dir``: a pilot the report points to in one paragraph without analysing it (issue 30);
        ``package``: the evidence package when the build already verified and loaded it;
        ``design``: OUT/design.json as the build read it (None: there is none);
        ``verified`` / ``pilot_verified``: the VerifiedFiles the build read (under OUT's lock, its stage
        keys are of them), parsed here instead of reading the package again (``pilot_verified`` may be the
        EvidenceError its verification raised, raised when the pilot is needed); ``fixtures``: the
        FixtureLibrary the build keyed; ``pointer_verified``: the pointed-to pilot's VerifiedFiles (or the
        EvidenceError of its verification). Each None: read here."""
        self.evidence_dir = Path(evidence_dir)
        self.evidence_label = display_path(self.evidence_dir).as_posix()
        self.out_dir = Path(out_dir)
        self.params = params
        self.claims_path = claims_path
        self.pilot_dir = Path(pilot_dir) if pilot_dir is not None else None
        self.pointer_dir = Path(pointer_dir) if pointer_dir is not None and pilot_dir is None else None
        self.design = design
        self._package: Any = package
        self._verified: Any = verified
        self._pilot_verified: Any = pilot_verified
        self._pointer_verified: Any = pointer_verified
        self._fixtures: Any = fixtures
        self._results: dict[str, Any] | None = None
        self._estimates: Any = None
        self._audit: Any = None
        self._audit_done = False
        self._pilot: Any = None
        self._pilot_done = False

    @property
    def package(self) -> Any:
        """The verified EvidencePackage (loaded, and so verified, once)."""
        if self._package is None:
            verified, self._verified = self._verified, None  # the bytes go once they are parsed
            self._package = load_package(self.evidence_dir) if verified is None \
                else parse_verified(self.evidence_dir, verified)
        return self._package

    @property
    def estimates(self) -> Any:
        """The one analysis.results.inputs.ResultsInputs of this build: every estimate, computed once."""
        if self._estimates is None:
            from analysis.evidence.folds import load_fixture_library
            from analysis.results.inputs import ResultsInputs

            fixtures = self._fixtures if self._fixtures is not None else load_fixture_library()
            pointer = self._pointer_package()
            self._estimates = ResultsInputs(self.package, self.params, pilot=self.pilot_package,
                                            pilot_path=self.pilot_dir, fixtures=fixtures,
                                            design=self.design, pointer=pointer, pointer_path=self.pointer_dir)
        return self._estimates

    def _pointer_package(self) -> Any:
        """The pilot the report points to, parsed from the bytes verified under OUT's lock (None: none)."""
        if self.pointer_dir is None:
            return None
        verified, self._pointer_verified = self._pointer_verified, None
        if isinstance(verified, BaseException):
            raise verified
        return load_package(self.pointer_dir) if verified is None else parse_verified(self.pointer_dir, verified)

    @property
    def results(self) -> dict[str, Any]:
        """results.json as a dict, assembled once in memory from :attr:`estimates` (the audit's headline
        included), as JSON holds it (tuples as lists): what the results stage writes and the report reads."""
        if self._results is None:
            from analysis.results.registry import assemble

            est = self.estimates
            audit = self.audit
            if audit is not None:
                from analysis.audit.headline import audit_block

                est.claims_audit = audit_block(audit)
            self._results = loads_json(json.dumps(assemble(est, ("evidence", "build"))), "results.json (in memory)")
        return self._results

    @property
    def pilot_package(self) -> Any:
        """The verified companion pilot package, or None when none is named or the evidence is itself a pilot."""
        if not self._pilot_done:
            self._pilot_done = True
            if self.pilot_dir is not None and evidence_kind(self.package) != "v2-pilot":
                verified, self._pilot_verified = self._pilot_verified, None
                if isinstance(verified, BaseException):
                    raise verified
                pilot = load_package(self.pilot_dir) if verified is None \
                    else parse_verified(self.pilot_dir, verified)  # the bytes verified under OUT's lock
                if evidence_kind(pilot) != "v2-pilot":
                    kind = pilot.study.kind
                    declared = "no kind" if kind is None else f"kind = {kind!r}"
                    raise CompanionError(
                        f"--companion {self.pilot_dir}: the report shows a pilot beside the evidence, and "
                        f"this package's study.toml declares {declared}; "
                        'add kind = "pilot" to its [study] table and re-lock it '
                        f"({analysis_command()} lock {self.pilot_dir}), "
                        "or leave out --companion")
                self._pilot = pilot
        return self._pilot

    @property
    def audit(self) -> Any:
        """The claims audit (analysis.audit.claims_audit.audit_claims) of the v1 evidence, else None.

        The audit compares the paper's printed numbers with values computed from the package, which
        is meaningful for the v1 reconstruction only; other packages (the hand-made fixture, a v2
        run) measure something else, and the report says that the audit was not run for them. It
        reads the evidence blocks of :attr:`estimates` (computed once, shared with results.json).
        """
        if not self._audit_done:
            self._audit_done = True
            if evidence_kind(self.package) == "v1" and self.claims_path.is_file():
                from analysis.audit.claims_audit import audit_claims
                from analysis.reconstruct.claims import load_claims
                from analysis.results.registry import assemble

                self._audit = audit_claims(self.package, load_claims(self.claims_path), self.params,
                                           results=assemble(self.estimates, ("evidence",)))
        return self._audit

    def context(self) -> Any:
        """The ReportContext every table and figure builder reads."""
        from analysis.tables.context import ReportContext
        from analysis.tables.pilot import PILOT_KEY

        pilot = self.pilot_package
        extras = {} if pilot is None else {PILOT_KEY: pilot}
        return ReportContext(self.package, self.results, self.params, self.audit, extras,
                             estimates=self.estimates)
