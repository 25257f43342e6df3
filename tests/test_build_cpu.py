"""CPU savings of the build (issue 21) that must not change a byte: each saving keeps its result exact."""
from __future__ import annotations

import subprocess
import sys
import types

import numpy as np
import polars as pl
import pytest
from audit_support import published_claims
from scipy import stats

from analysis.audit import context as audit_context
from analysis.audit.context import AuditContext, NotDeterminable
from analysis.audit.fill_search import pearson_r
from analysis.estimators import cells as cells_mod
from analysis.evidence import load_package
from analysis.params import DEFAULT_PARAMS
from analysis.tables.render import no_shell_probe
from support.paths import REPO as ROOT

GLM = "z-ai/glm-5.2"


def test_pearson_r_is_numpy_corrcoef_bit_for_bit():
    # Oracle: numpy's own np.corrcoef (exact equality, the fill search's least-squares path depends on the
    # last bit), and scipy.stats.pearsonr to the last few ulps (an independent implementation).
    rng = np.random.default_rng(21)
    for n in (3, 6, 8, 20, 57):
        for _ in range(300):
            a = rng.random(n)
            b = np.round(rng.random(n) * rng.integers(1, 5), int(rng.integers(1, 4)))
            got = pearson_r(a, b)
            assert got == float(np.corrcoef(a, b)[0, 1])
            assert got == pytest.approx(float(stats.pearsonr(a, b).statistic), abs=1e-12)
    a = np.array([0.62, 0.995, 0.949])
    assert pearson_r(a, a * 3.2203159751636727) == 1.0  # 1 + 1 ulp before numpy's clip to [-1, 1]


def test_fill_search_jacobian_is_the_numerical_derivative_of_its_residuals(monkeypatch):
    # Oracle: scipy's central-difference approx_derivative of the very residuals the search hands least_squares,
    # on the real audit problem (Table 3's printed fills and effects, the three populations, the margin, the
    # kept order), at random points inside the box; the analytic rows are derived in fit_problem's docstring.
    from scipy.optimize import _numdiff

    from analysis.audit import fill_search
    from analysis.audit.printed import PrintedCells
    from analysis.audit.printed_fills import printed_fill_search
    seen = []
    real = fill_search.least_squares

    def spy(fun, x0, jac, bounds, **kw):
        calls = []

        def counted(x):
            calls.append(1)
            return fun(x)
        sol = real(counted, x0, jac=jac, bounds=bounds, **kw)
        seen.append((fun, jac, bounds, len(calls), sol.nfev))
        return sol

    monkeypatch.setattr(fill_search, "least_squares", spy)
    assert printed_fill_search(PrintedCells(published_claims(), DEFAULT_PARAMS)).result.found
    assert seen
    rng = np.random.default_rng(2121)
    for fun, jac, (lo, hi), calls, nfev in seen:
        assert callable(jac) and calls == nfev  # one residual evaluation per step, none for the Jacobian
        order_rows = len(fun(lo)) - 4  # 3 Pearson targets and the margin, then one row per kept order
        assert order_rows > 0
        checked = active = 0
        while checked < 40:
            x = lo + rng.random(lo.shape[0]) * (hi - lo)
            pen = np.asarray(fun(x))[4:]
            if np.any((pen > 0) & (pen < 1e-3)):  # within 1e-6 of an order penalty's kink: its slope jumps there
                continue
            num = _numdiff.approx_derivative(lambda z, f=fun: np.asarray(f(z)), x, method="3-point", rel_step=1e-7)
            np.testing.assert_allclose(jac(x), num, rtol=1e-6, atol=1e-6 * np.abs(num).max())
            checked, active = checked + 1, active + int(np.any(pen > 0))
        assert 0 < active < checked  # both sides of the order penalties were checked


@pytest.fixture(scope="module")
def package():
    return load_package(ROOT / "data" / "v1")


def test_audit_cell_is_computed_once_per_audit_and_handed_out_as_copies(package, monkeypatch):
    calls = []
    real = cells_mod.cell_summary

    def counting(*args, **kwargs):
        calls.append(1)
        return real(*args, **kwargs)

    monkeypatch.setattr(audit_context.cells_mod, "cell_summary", counting)
    ctx = AuditContext(package=package, results={}, params=DEFAULT_PARAMS)
    first = ctx.cell(GLM, ["partition-20"], "j")
    first["rows_partial"] = -1  # a caller's change must not reach the memo
    second = ctx.cell(GLM, ("partition-20",), "j")  # a tuple of the same groups is the same cell
    assert len(calls) == 1
    assert second["rows_partial"] != -1
    # Oracle: the summary computed directly, as before the memo.
    sub = package.rows.filter(pl.col("configuration") == GLM, pl.col("execution_group").is_in(["partition-20"]))
    direct = real(sub, DEFAULT_PARAMS, by_execution_group=False, arms=["j"], scenario="S5").table.row(0, named=True)
    assert second == direct
    other = ctx.cell(GLM, ["partition-20"], "q")
    assert len(calls) == 1  # one grouped summary holds every arm of the pooled cell
    assert other == real(sub, DEFAULT_PARAMS, by_execution_group=False, arms=["q"],
                         scenario="S5").table.row(0, named=True)
    with pytest.raises(NotDeterminable, match="no valid zz rows"):
        ctx.cell(GLM, ["partition-20"], "zz")
    ctx.cell(GLM, ["partition-20", "no-such-group"], "j")
    assert len(calls) == 2  # other groups are another cell
    assert AuditContext(package=package, results={}, params=DEFAULT_PARAMS).cells == {}  # no state across audits


def test_table_html_does_not_import_ipython():
    code = ("import sys, polars as pl\n"
            "from analysis.tables.render import to_html\n"
            "from analysis.tables.spec import TableSpec\n"
            "d = pl.DataFrame({'a': [1]})\n"
            "html = to_html(TableSpec('t', 'T', d, d))\n"
            "assert 'id=\"t\"' in html, html\n"
            "print('IPython' in sys.modules)\n")
    done = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, check=True,
                          env={"PYTHONPATH": str(ROOT), "PATH": "/usr/bin:/bin"})
    assert done.stdout.strip() == "False"


def test_no_shell_probe_leaves_a_running_ipython_alone(monkeypatch):
    shell = types.ModuleType("IPython")
    monkeypatch.setitem(sys.modules, "IPython", shell)
    with no_shell_probe():
        assert sys.modules["IPython"] is shell
    assert sys.modules["IPython"] is shell
    monkeypatch.delitem(sys.modules, "IPython")
    with no_shell_probe(), pytest.raises(ImportError):
        import IPython  # noqa: F401
    assert "IPython" not in sys.modules


def test_saving_a_figure_draws_it_once_per_file_and_lays_it_out_once(tmp_path, monkeypatch):
    # One Agg draw makes the PNG (savefig would draw again to encode it) and one draw makes the SVG; the
    # constrained layout runs in the first draw only. Counted on the figure's own draw and layout calls.
    from matplotlib.figure import Figure
    from matplotlib.layout_engine import ConstrainedLayoutEngine

    from analysis.figures.common import FigureSpec, new_figure, save, style

    draws, layouts = [], []
    real_draw, real_execute = Figure.draw, ConstrainedLayoutEngine.execute
    monkeypatch.setattr(Figure, "draw", lambda self, renderer: (draws.append(type(renderer).__name__),
                                                                real_draw(self, renderer))[1])
    monkeypatch.setattr(ConstrainedLayoutEngine, "execute",
                        lambda self, fig: (layouts.append(1), real_execute(self, fig))[1])
    with style():
        fig, (ax,) = new_figure()
        ax.plot([0, 1], [1, 0], label="line")
        ax.legend()
    save(FigureSpec("probe", "probe", fig, "a line"), tmp_path)
    assert draws == ["RendererAgg", "MixedModeRenderer"]  # the SVG backend draws through a MixedModeRenderer
    assert len(layouts) == 1
