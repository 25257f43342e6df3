"""Command line of the project (``python generate.py ...``): a thin edge.

Library errors (:class:`EvidenceError`) become their message on stderr and
exit status 1, never a traceback. The analysis itself lives in
``analysis.pipeline.build`` (the report pipeline), imported when the main job runs
so that ``--help`` and the subcommands do not load it.
"""
from __future__ import annotations

import argparse
import difflib
import signal
import sys
import warnings
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from analysis.escape import emit
from analysis.evidence import LOCK_NAME, EvidenceError, verify_package, write_lock
from analysis.invocation import DocNotFoundError, add_docs_parser, analysis_command, doc_command, docs_text
from analysis.locations import checkout_root
from analysis.safeio import SafeIOError, loads_json
from analysis.version import __version__

REPO_ROOT: Path | None = checkout_root()
"""The repository checkout the package runs from; None when installed from a wheel, which carries
no data/ (analysis.locations): the paths below are then None."""


def _in_repository(*parts: str) -> Path | None:
    return REPO_ROOT.joinpath(*parts) if REPO_ROOT is not None else None


V1_EVIDENCE = _in_repository("data", "v1")
HANDMADE_EVIDENCE = _in_repository("tests", "fixtures", "handmade")
V2_LADDER_PILOT = _in_repository("data", "v2", "ladder-pilot")
"""The runner's embedded pilot on the load ladder: reported only when named (``--companion DIR``) or as
the evidence itself; the main report of data/v1 points to it in one paragraph (issue 30, option (b))."""
V2_PILOT = _in_repository("data", "v2", "pilot")
"""The first, null v2 pilot (small fixture), kept as a package: reported only when named."""
DEFAULT_OUT = REPO_ROOT
"""Default output root: results.json, tables/, figures/ and report/ of the repository, for the
shipped evidence only. None when installed: a wheel has no repository to write into, so every
build names its --out."""
NO_SHIPPED_EVIDENCE = (
    "this is an installed package: it carries no shipped evidence (the repository's data/v1 is not in the "
    "wheel); name a package: carriers verify DIR, carriers --evidence DIR --out OUT, "
    "carriers plan --evidence DIR --out OUT. To get one: carriers-runner embedded --out runs/embedded writes "
    "runs/embedded/evidence, and python -m analysis.reconstruct build --out v1 rebuilds the repository's data/v1 "
    "(the paper's reconstruction) from the claims file the package ships")

DESCRIPTION = """\
Analysis, audit and runner for 'Partitioned versus Undivided Compaction Carriers'.

With no arguments: verify the shipped evidence (data/v1 when it has a
provenance.lock, else the hand-made package tests/fixtures/handmade) and write the results,
tables, figures and report of that package alone into the repository (in a checkout; an
installed package names its --evidence and --out). A pilot is reported beside it only when
named: --companion DIR."""

EXAMPLES: tuple[tuple[str, str], ...] = (
    ("", "main job on the shipped evidence"),
    ("--evidence DIR --out OUT", "analyse another evidence package"),
    ("--evidence DIR --companion PILOT --out OUT", "... with a pilot reported beside it"),
    ("--check", "exit 1 if committed outputs are stale"),
    ("--check --ignore-code", "... apart from the code's digest (a refactor)"),
    ("verify [DIR]", "check a package's lock and format"),
    ("lock DIR [--files README.md ...]", "write DIR/provenance.lock"),
    ("plan --evidence DIR --out OUT", "power, precision and cost of a v2 study"),
    ("plan seal PLAN_DIR", "seal a preregistration (plan.toml -> plan.lock)"),
    ("regenerate [--dry-run]", "rewrite every generated file of the checkout"),
    ("docs [NAME] [--path]", "list the shipped docs, or print one"),
)
"""The examples of --help: arguments after the command's name, and what they do."""


def examples(cmd: str) -> str:
    """The examples block of --help, with the command named as the user runs it (``cmd``)."""
    lines = [f"{cmd} {args}".rstrip() for args, _ in EXAMPLES]
    width = max(len(line) for line in lines if len(line) <= 52) + 2
    out = ["examples:"]
    for line, (_, what) in zip(lines, EXAMPLES, strict=True):
        if len(line) + 2 > width:
            out += [f"  {line}", f"  {'':{width}}{what}"]
        else:
            out.append(f"  {line:{width}}{what}")
    return "\n".join(out)


EPILOG_TEMPLATE = """\
{examples}

OUT safety: the build replaces only the files it writes (and removes only files an
earlier build wrote, listed in OUT/.build-stamp.json); other files in OUT are never
touched. New outputs are staged and swapped in at the end, so Ctrl-C or SIGTERM leaves
OUT as it was. Builds of one OUT run one at a time (OUT/.build.lock); a second one
waits up to --wait seconds. OUT may not be empty, nor the evidence package or inside it.

Without --out only the shipped evidence writes into the repository; --evidence DIR
(or --companion) without --out is a usage error, so a run of your own never replaces
the committed outputs. Every build ends by printing the path of the report it wrote.
Installed from a wheel (the console command carriers), the package carries no data/ and
has no repository: name both, carriers --evidence DIR --out OUT. An evidence package is
a folder the runner (carriers-runner) writes; its format: {format_doc}. The docs ship with
the package: {docs_cmd} lists them.

exit status: 0 done; 1 the evidence, the endpoint or another input failed a check (the message
lists every problem); 2 bad usage (a missing or wrong argument, an --out that cannot be used);
130 interrupted (SIGINT), 143 terminated (SIGTERM)."""


def shipped_evidence() -> Path:
    """data/v1 when it carries a provenance lock, else the hand-made package (both in the checkout).

    An installed package has neither: :class:`UsageError` says to name a package.
    """
    if V1_EVIDENCE is not None and (V1_EVIDENCE / LOCK_NAME).is_file():
        return V1_EVIDENCE
    if HANDMADE_EVIDENCE is not None and HANDMADE_EVIDENCE.is_dir():
        return HANDMADE_EVIDENCE
    raise UsageError(NO_SHIPPED_EVIDENCE)


def pointers_of(evidence: Path, companions: Sequence[Path] = ()) -> list[Path]:
    """The pilot the report of ``evidence`` points to without analysing it: the v2 ladder pilot beside the
    checkout's data/v1 when no companion is named and the pilot is locked (issue 30, option (b)), else none."""
    if companions or V1_EVIDENCE is None or V2_LADDER_PILOT is None:
        return []
    if Path(evidence).resolve() != V1_EVIDENCE.resolve() or not (V2_LADDER_PILOT / LOCK_NAME).is_file():
        return []
    return [V2_LADDER_PILOT]


def say(message: object, *, err: bool = True, one_line: bool = False) -> None:
    """Print one message of the CLI; the one place where text reaches the terminal.

    Messages can carry strings from an evidence package (file names, study keys, study
    names), so control characters and bidi overrides are made visible (escape.terminal);
    ``one_line`` (success lines) escapes newlines too. Characters the stream's encoding cannot
    carry (PYTHONIOENCODING=ascii) become backslash escapes, never an exception.
    """
    emit(str(message), sys.stderr if err else sys.stdout, one_line=one_line)


def _progress(message: str) -> None:
    say(message)


def _nonempty_path(text: str) -> Path:
    """argparse type: a path that is not empty (an empty --out would mean the current directory)."""
    if not text.strip():
        raise argparse.ArgumentTypeError("must not be empty; name a directory (use . for the current one)")
    return Path(text)


class CliError(Exception):
    """A user error outside the evidence (bad output directory, a build that cannot run)."""


class UsageError(CliError):
    """Bad usage found after parsing (exit status 2), e.g. no evidence named in an installed package."""


def run_main_job(evidence: Path, out: Path, *, check: bool = False, force: bool = False,
                 progress: Callable[[str], None] = _progress, wait: float | None = None,
                 companions: Sequence[Path] = (), ignore_code: bool = False,
                 pointers: Sequence[Path] | None = None) -> int:
    """Verify ``evidence`` and build every output into ``out`` (or compare, with ``check``).

    The build pipeline (``analysis.pipeline``) does the work: it verifies the package first and
    writes nothing when verification fails. ``companions``: packages reported beside the
    evidence (a pilot, ``--companion``); ``pointers``: a pilot the report points to in one paragraph
    (default :func:`pointers_of`: the ladder pilot beside data/v1, when no companion is named).
    """
    from analysis import pipeline  # loaded only for the main job: --help stays light
    from analysis.outdir import BuildError, OutUsageError
    from analysis.params import DEFAULT_PARAMS

    pointers = pointers_of(evidence, companions) if pointers is None else pointers
    try:
        if check:
            differ = pipeline.check(evidence, out, DEFAULT_PARAMS, progress=progress, companions=companions,
                                    ignore_code=ignore_code, pointers=pointers)
            for rel in differ:
                say(f"differs: {rel}")
            if differ:
                say(f"error: {len(differ)} output files in {out} are not what the evidence, "
                    f"params and code produce now; run `{analysis_command()}` and commit")
                return 1
            say(f"OK {out}: outputs are up to date", err=False, one_line=True)
            return 0
        options: dict[str, Any] = {} if wait is None else {"wait": wait}
        pipeline.build(evidence, out, DEFAULT_PARAMS, progress=progress, force=force, companions=companions,
                       pointers=pointers, **options)
        report = out / "report" / "index.html"
        if report.is_file():
            say(f"report: {report}", err=False)
    except OutUsageError as exc:  # an --out the build may not use: bad usage (exit 2)
        raise UsageError(str(exc)) from None
    except BuildError as exc:
        raise CliError(str(exc)) from None
    return 0


def _cmd_verify(args: argparse.Namespace) -> int:
    root = Path(args.dir) if args.dir else shipped_evidence()
    say(verify_package(root).line(), err=False, one_line=True)
    return 0


def _previously_locked(root: Path) -> list[str]:
    """Names in an existing lock (best effort), so re-locking keeps extra pinned files."""
    from analysis.evidence.depth import MAX_DEPTH
    from analysis.evidence.files import LOCK_LIMIT, read_evidence_file

    try:  # read under the evidence file rules: a FIFO, a device or a huge lock is never read
        raw = read_evidence_file(root, LOCK_NAME, LOCK_LIMIT)
        files = loads_json(raw, root / LOCK_NAME, max_depth=MAX_DEPTH).get("files", {})
    except (OSError, ValueError, AttributeError, RecursionError, EvidenceError):
        return []  # the lock is rewritten whole (atomically) anyway
    return [name for name in files if isinstance(name, str)] if isinstance(files, dict) else []


def _cmd_lock(args: argparse.Namespace) -> int:
    root = Path(args.dir)
    doc = write_lock(root, [*_previously_locked(root), *(args.files or [])])
    say(f"wrote {root / LOCK_NAME}: {len(doc['files'])} files "
        + " ".join(f"{k}={v}" for k, v in doc["files"].items()), err=False, one_line=True)
    if not args.no_check:
        say(verify_package(root).line(), err=False, one_line=True)
    return 0


REGENERATE_STEPS: tuple[str, ...] = ("docs", "build", "golden")
"""What ``generate.py regenerate`` rewrites, in this order: ``docs``, the generated index of
docs/RESULTS_KEYS.md (analysis.results.registry.write_docs_index, with the readers the table and figure
builders declare, analysis.figures.registry.block_readers); ``build``, the main job on the shipped evidence into
the checkout (results.json, tables/, figures/, report/, as ``python generate.py``); ``golden``, the
golden table files tests/golden/tables of the hand-made package (analysis.tables.golden.write_golden,
the texts tests/test_tables_golden.py compares)."""
GOLDEN_TABLES = ("tests", "golden", "tables")
"""Where the golden table files live in a checkout."""


def regenerate(repo: Path, steps: Sequence[str] = REGENERATE_STEPS, *, dry_run: bool = False,
               progress: Callable[[str], None] = _progress) -> int:
    """Rewrite what is generated in the checkout ``repo`` after the code changed (e.g. a statistic was
    added, docs/ADDING_A_STATISTIC.md): each step of ``steps`` (REGENERATE_STEPS) in REGENERATE_STEPS order.
    The evidence read is the checkout's own (data/v1 alone, tests/fixtures/handmade).
    ``dry_run``: name what each step would write, write nothing. Returns the exit status."""
    unknown = sorted(set(steps) - set(REGENERATE_STEPS))
    if unknown:
        raise UsageError(f"regenerate has no step {', '.join(unknown)}; choose from {', '.join(REGENERATE_STEPS)}")
    for step in (s for s in REGENERATE_STEPS if s in steps):
        if step == "docs":
            from analysis.figures.registry import block_readers
            from analysis.results.registry import DOCS_PATH, write_docs_index

            progress(f"regenerate docs: the index of {repo / DOCS_PATH}")
            _inside(repo, DOCS_PATH.split("/"))
            if not dry_run:
                write_docs_index(repo, block_readers())
        elif step == "build":
            evidence = shipped_evidence()
            progress(f"regenerate build: {evidence} into {repo} (results.json, tables/, figures/, report/)")
            if not dry_run:
                status = run_main_job(evidence, repo, progress=progress)
                if status:
                    return status
        else:
            from analysis.params import DEFAULT_PARAMS
            from analysis.tables.golden import write_golden

            if HANDMADE_EVIDENCE is None:
                raise UsageError("regenerate golden reads tests/fixtures/handmade; run it from a checkout")
            progress(f"regenerate golden: {repo.joinpath(*GOLDEN_TABLES)} from {HANDMADE_EVIDENCE}")
            _inside(repo, GOLDEN_TABLES)
            if not dry_run:
                write_golden(HANDMADE_EVIDENCE, repo.joinpath(*GOLDEN_TABLES), DEFAULT_PARAMS)
    done = ", ".join(s for s in REGENERATE_STEPS if s in steps)
    say("dry run: nothing written" if dry_run else f"regenerated {done}", err=False, one_line=True)
    return 0


def _inside(repo: Path, parts: Sequence[str]) -> Path:
    """The build's output-directory safety for a regenerate step (analysis.outdir.validate_target): no
    component of the target below ``repo`` may be a symbolic link or lead outside it. CliError otherwise."""
    from analysis.outdir import BuildError, validate_target

    try:
        return validate_target(repo, parts)
    except BuildError as exc:
        raise CliError(str(exc)) from None


def _cmd_docs(args: argparse.Namespace) -> int:
    try:
        say(docs_text(args.name, path_only=args.path), err=False)
    except DocNotFoundError as exc:
        raise UsageError(str(exc)) from None
    return 0


def _cmd_regenerate(args: argparse.Namespace) -> int:
    if REPO_ROOT is None:
        raise UsageError("regenerate rewrites the generated files of a source checkout; an installed package has none")
    return regenerate(REPO_ROOT, args.only or REGENERATE_STEPS, dry_run=args.dry_run)


def build_parser() -> argparse.ArgumentParser:
    """The argument parser (also used by the docs test)."""
    from analysis.invocation import invoked_as

    parser = argparse.ArgumentParser(
        prog=invoked_as("analysis", "generate.py"), description=DESCRIPTION,
        epilog=EPILOG_TEMPLATE.format(examples=examples(analysis_command()), format_doc=doc_command("evidence_format"),
                                     docs_cmd=f"{analysis_command()} docs"),
        formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--evidence", metavar="DIR", type=_nonempty_path, default=None,
                        help="evidence package to analyse (default, in a checkout: data/v1 if locked, "
                             "else tests/fixtures/handmade; an installed package has none)")
    parser.add_argument("--companion", metavar="DIR", type=_nonempty_path, action="append", default=None,
                        help="a pilot package to report beside the evidence (its study.toml declares "
                             'kind = "pilot"); default: data/v2/ladder-pilot beside data/v1 when --evidence '
                             "is not given, else none")
    parser.add_argument("--out", metavar="OUT", type=_nonempty_path, default=None,
                        help="output directory, created when missing (default, in a checkout: the "
                             "repository root, i.e. results.json, tables/, figures/, report/, for the "
                             "shipped evidence only: with --evidence or --companion, --out is required; "
                             "an installed package has no default); not empty, not the evidence package "
                             "or inside it")
    parser.add_argument("--check", action="store_true",
                        help="do not write: regenerate into a temporary directory and exit 1 if "
                             "any output in OUT differs (for CI)")
    parser.add_argument("--ignore-code", action="store_true",
                        help="with --check: do not compare the code's identity (provenance.code_sha256 and "
                             "what derives from it), so a refactor that changes no output passes")
    parser.add_argument("--force", action="store_true",
                        help="rebuild every stage even when its inputs are unchanged")
    parser.add_argument("--wait", metavar="SECONDS", type=float, default=None,
                        help="how long to wait while another build of the same OUT runs "
                             "(default 600; 0: exit 1 at once)")
    parser.add_argument("--version", action="version", version=f"%(prog)s {__version__}")
    sub = parser.add_subparsers(dest="command", metavar="{verify,lock,plan,calibrate,regenerate,docs}")
    verify = sub.add_parser(
        "verify", help="verify a package's provenance lock and format",
        description="Verify the provenance lock (every byte of every locked file), then the "
                    "format and cross-file rules. Exit 0 with a one-line summary, or 1 with "
                    "every problem (file, line, column).")
    verify.add_argument("dir", nargs="?", metavar="DIR",
                        help="package directory (default: the shipped evidence)")
    verify.set_defaults(func=_cmd_verify)
    lock = sub.add_parser(
        "lock", help="write provenance.lock for a package you produced",
        description="Hash study.toml, rows.csv, checks.csv, the files an existing lock already "
                    "names, and any --files; write DIR/provenance.lock (sorted keys, indent 2); "
                    "then verify the package.")
    lock.add_argument("dir", metavar="DIR", help="package directory")
    lock.add_argument("--files", nargs="+", default=None, metavar="NAME",
                      help="extra files to pin, relative to DIR with '/' separators")
    lock.add_argument("--no-check", action="store_true",
                      help="only write the lock; do not validate the package afterwards")
    lock.set_defaults(func=_cmd_lock)
    from analysis.plan.cli import add_plan_parser  # issue 13: plan (design) and plan seal/check
    add_plan_parser(sub, default_evidence=shipped_evidence)
    from analysis.plan.calibrate_report import add_calibrate_parser  # issue 35: planted-truth calibration
    add_calibrate_parser(sub)
    regen = sub.add_parser(
        "regenerate", help="rewrite every generated file of the checkout (after adding a statistic)",
        description="In a source checkout, rewrite in order: the generated index of docs/RESULTS_KEYS.md, "
                    "the outputs of the shipped evidence (results.json, tables/, figures/, report/), and "
                    "the golden table files tests/golden/tables. Commit them with the code.")
    regen.add_argument("--only", nargs="+", choices=REGENERATE_STEPS, default=None, metavar="STEP",
                       help=f"only these steps ({', '.join(REGENERATE_STEPS)}); default: all")
    regen.add_argument("--dry-run", action="store_true", help="name what each step would write; write nothing")
    regen.set_defaults(func=_cmd_regenerate)
    add_docs_parser(sub).set_defaults(func=_cmd_docs)
    return parser


def _option_strings(parser: argparse.ArgumentParser) -> set[str]:
    """Every long option of ``parser`` and of its subcommands (for naming a misspelled flag)."""
    found: set[str] = set()
    for action in parser._actions:
        found.update(o for o in action.option_strings if o.startswith("--"))
        if isinstance(action, argparse._SubParsersAction):
            for sub in action.choices.values():
                found |= _option_strings(sub)
    return found


def unknown_option(parser: argparse.ArgumentParser, argv: Sequence[str]) -> str | None:
    """A usage message for the first ``--flag`` in ``argv`` that no command knows, else None.

    argparse reports ``--evidnce data/v1`` as an invalid subcommand 'data/v1', because the
    unknown flag is skipped and its value taken for a command; this names the flag instead
    (with the closest known spelling). Unambiguous abbreviations, which argparse accepts, pass.
    """
    known = _option_strings(parser)
    for token in argv:
        if token == "--":
            return None
        if not token.startswith("--") or token == "--":
            continue
        name = token.split("=", 1)[0]
        if any(option.startswith(name) for option in known):
            continue
        close = difflib.get_close_matches(name, sorted(known), n=1)
        hint = f"; did you mean {close[0]}?" if close else "; see --help"
        return f"unknown option {name}{hint}"
    return None


def refuses_repository_overwrite(args: argparse.Namespace) -> str | None:
    """Why a main job without --out may not write into the repository, else None.

    Without --out the outputs go to the repository root, which holds the committed results of
    the shipped evidence. Only the default invocation (the shipped evidence alone, no companion) may
    write there; anything else must name its OUT, so a user's run never replaces them.
    """
    if args.command is not None or args.out is not None:
        return None
    if DEFAULT_OUT is None:  # installed from a wheel: no repository, no shipped evidence
        if args.evidence is None:
            return NO_SHIPPED_EVIDENCE
        return "an installed package has no repository to write into; add --out OUT (for example --out carriers-out)"
    if args.check:
        return None
    shipped = shipped_evidence().resolve()
    if args.evidence is not None and args.evidence.resolve() != shipped:
        return ("--evidence without --out would replace the repository's committed results.json, tables/, "
                "figures/ and report/ with those of another package; add --out OUT "
                "(for example --out runs/my-study)")
    if args.companion is not None:
        return ("--companion without --out would replace the repository's committed outputs; add --out OUT "
                "(for example --out runs/my-study)")
    return None


def _sigterm_interrupts() -> Any:
    """SIGTERM raises BuildInterrupted while the CLI runs (so it ends with one line, exit 143)."""
    from analysis.outdir import BuildInterrupted

    def handler(signum: int, _frame: Any) -> None:
        raise BuildInterrupted(signum)

    try:
        previous = signal.signal(signal.SIGTERM, handler)
    except ValueError:  # not the main thread: leave signals alone
        return None
    return signal.SIG_DFL if previous is None else previous


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point; returns the exit status."""
    from analysis.outdir import BuildInterrupted

    parser = build_parser()
    argv = list(sys.argv[1:] if argv is None else argv)
    misspelled = unknown_option(parser, argv)
    if misspelled:
        parser.print_usage(sys.stderr)
        say(f"{parser.prog}: error: {misspelled}")
        return 2
    args = parser.parse_args(argv)
    refused = _refused_options(args)
    if refused:
        say(f"error: {refused}")
        return 2
    previous_sigterm = _sigterm_interrupts()
    out = args.out or DEFAULT_OUT or Path()  # DEFAULT_OUT is None only when installed, where a main job without
    # --out was refused above; a subcommand does not use out
    main_job = args.command is None and not args.check
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        try:
            status = _run_command(args, out)
        except (EvidenceError, CliError, SafeIOError, OSError, BuildInterrupted, KeyboardInterrupt) as exc:
            status = _failure_status(exc, out, main_job)
        finally:
            if previous_sigterm is not None:
                signal.signal(signal.SIGTERM, previous_sigterm)
            for message in dict.fromkeys(str(w.message) for w in caught):
                say(f"warning: {message}")
    return status


def _refused_options(args: argparse.Namespace) -> str | None:
    """Why the parsed options cannot run together (checked before anything runs), else None."""
    try:
        overwrite = refuses_repository_overwrite(args)
    except UsageError as exc:
        overwrite = str(exc)
    if overwrite:
        return overwrite
    if args.wait is not None and not 0 <= args.wait < float("inf"):
        return "--wait must be a number of seconds, 0 or more"
    if args.ignore_code and not args.check:
        return "--ignore-code only changes what --check compares; add --check, or leave it out"
    return None


def _run_command(args: argparse.Namespace, out: Path) -> int:
    """Run the main job, or the subcommand (which takes none of the main job's options); its exit status."""
    if args.command is None:
        evidence = args.evidence or shipped_evidence()
        companions = args.companion if args.companion is not None else []
        return run_main_job(evidence, out, check=args.check, force=args.force, wait=args.wait,
                            companions=companions, ignore_code=args.ignore_code)
    if (args.evidence or args.out or args.check or args.force or args.wait is not None
            or args.companion is not None):
        say("error: --evidence/--companion/--out/--check/--force/--wait belong to the main job, not "
            f"to '{args.command}'")
        return 2
    status: int = args.func(args)
    return status


def _failure_status(exc: BaseException, out: Path, main_job: bool) -> int:
    """Say why the command stopped, in one line on stderr; its exit status (2: usage, 1: a failed check,
    a file or the system; a signal's own status for an interrupt)."""
    from analysis.outdir import BuildInterrupted

    if isinstance(exc, UsageError):
        say(f"error: {exc}")
        return 2
    if isinstance(exc, (EvidenceError, CliError, SafeIOError)):
        say(f"error: {exc}")
        return 1
    if isinstance(exc, OSError):
        say(f"error: {exc.strerror or exc}: {exc.filename or ''}".rstrip(": "))
        return 1
    stop = exc if isinstance(exc, BuildInterrupted) else BuildInterrupted(signal.SIGINT)
    say(stop.message(str(out)) if main_job else f"interrupted ({signal.Signals(stop.signum).name})")
    return stop.exit_status


if __name__ == "__main__":  # python -m analysis.cli
    raise SystemExit(main())
