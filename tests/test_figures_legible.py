"""Figures that explain themselves (issue 34): text a reader can read at the size a figure is shown, legends
that cover no data, a per-configuration interval on the forest plot with its method named, arm codes defined,
and on the plan's figure labels beside their markers and nothing drawn beyond the user's grid.

Shown size: a PNG is shown at its pixel width, or scaled down to Quarto's 799 px column (the narrower render)
where it is wider; a text of s points in a figure W inches wide then measures
s * min(W * 150, 799) / (W * 96) CSS points (analysis.figures.common.shown_scale).
"""

from __future__ import annotations

import numpy as np
import pytest
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.collections import PathCollection
from matplotlib.lines import Line2D
from matplotlib.text import Text

from analysis.evidence import load_package
from analysis.figures.common import MIN_SHOWN_PT, shown_scale, style
from analysis.figures.registry import build_figures
from report_support import HANDMADE, context

V1 = HANDMADE.parents[2] / "data" / "v1"


@pytest.fixture(scope="module")
def specs(scripted_scenario) -> list:
    """Every report figure of the hand-made package and of the scripted-server run (which has a fact timeline)."""
    from analysis.params import DEFAULT_PARAMS
    from analysis.results import build_results

    scripted = load_package(scripted_scenario)
    with style():
        out = build_figures(context()) + build_figures(context(scripted, build_results(scripted, DEFAULT_PARAMS)))
        for s in out:
            FigureCanvasAgg(s.figure).draw()  # lays out text and legends (constrained layout)
    return out


def _texts(fig) -> list[Text]:
    return [t for t in fig.findobj(Text) if t.get_visible() and t.get_text().strip()]


def test_every_text_is_at_least_8_pt_where_it_is_shown(specs) -> None:
    small = []
    for s in specs:
        scale = shown_scale(s.figure.get_figwidth())
        small += [f"{s.name}: {t.get_text()[:40]!r} {t.get_fontsize() * scale:.1f} pt" for t in _texts(s.figure)
                  if t.get_fontsize() * scale < MIN_SHOWN_PT - 1e-9]
    assert small == []


def _data_points(ax) -> np.ndarray:
    pts = [np.empty((0, 2))]
    for a in ax.get_children():
        if isinstance(a, Line2D) and a.get_marker() not in (None, "None", "", " ") and len(a.get_xydata()):
            pts.append(a.get_transform().transform(a.get_xydata()))
        elif isinstance(a, PathCollection) and len(a.get_offsets()):
            pts.append(a.get_offset_transform().transform(a.get_offsets()))
    return np.concatenate(pts)


def test_no_legend_covers_a_data_point(specs) -> None:
    covered = []
    for s in specs:
        renderer = s.figure.canvas.get_renderer()
        legends = [(ax, ax.get_legend()) for ax in s.figure.axes if ax.get_legend()]
        legends += [(ax, leg) for leg in s.figure.legends for ax in s.figure.axes]
        for ax, leg in legends:
            box = leg.get_window_extent(renderer)
            pts = _data_points(ax)
            inside = (pts[:, 0] > box.x0) & (pts[:, 0] < box.x1) & (pts[:, 1] > box.y0) & (pts[:, 1] < box.y1)
            if inside.any():
                covered.append(s.name)
    assert covered == []


def test_the_forest_plot_draws_an_interval_per_configuration_and_names_its_method(specs) -> None:
    forest = next(s for s in specs if s.name == "forest")
    labels = [t.get_text() for leg in forest.figure.legends for t in leg.get_texts()]
    assert "95% t interval over the configuration's pairs" in labels
    ax = forest.figure.axes[0]
    # the hand-made panel: alpha-1 [0, 1] and beta-1 [1, 0.5] (t intervals clipped to [-1, 1]); alpha-2 has one
    # difference twice, no spread, so its interval is not estimable (issue 30) and draws no bar: two error bars
    # (tests/test_est_configuration_intervals)
    bars = [c for c in ax.containers if c.__class__.__name__ == "ErrorbarContainer"]
    assert len(bars) == 2
    # the configuration without a bar says why, on its row and in the legend
    ticks = [t.get_text() for t in ax.get_yticklabels()]
    assert [t for t in ticks if "no interval" in t] == ["acme/alpha-2  (pairs 2, no interval)"]
    assert any(lab.startswith("no interval: not estimable") for lab in labels)
    assert "j: one opaque field; q: five named fields" in ax.get_xlabel()


def test_each_figure_about_j_and_q_says_what_they_are(specs) -> None:
    for s in specs:
        if s.name in ("forest", "sensitivity", "fill_effect", "ladder", "fact_survival") and not s.empty_reason:
            text = " ".join(t.get_text().replace("\n", ": ", 1) for t in _texts(s.figure))  # "j\none opaque field"
            assert "j: one opaque field" in text and "q: five named fields" in text, s.name


@pytest.mark.skipif(not (V1 / "provenance.lock").is_file(), reason="data/v1 not present")
def test_the_plan_figure_keeps_labels_off_stars_and_stars_inside_the_grid() -> None:
    from analysis.params import DEFAULT_PLAN_PARAMS
    from analysis.plan.figure import power_figure
    from analysis.plan.run import make_design

    plan = DEFAULT_PLAN_PARAMS.replace(configurations=(10, 40), repeats=(2, 8), effects=(0.0, 0.1), sims=20)
    design = make_design(load_package(V1), plan)
    fig = power_figure(design)
    FigureCanvasAgg(fig).draw()
    renderer = fig.canvas.get_renderer()
    k_axes = fig.axes[:len(plan.effects)]
    beyond = 0
    for ax in fig.axes:
        stars = [a for a in ax.get_children() if isinstance(a, Line2D) and a.get_gid() == "recommended"]
        for star in stars:
            x, y = star.get_xydata()[0]
            if ax in k_axes:  # never drawn beyond the K the user asked for
                assert min(plan.configurations) <= x <= max(plan.configurations)
            px, py = ax.transData.transform((x, y))
            for t in ax.texts:
                box = t.get_window_extent(renderer)
                assert not (box.x0 - 6 < px < box.x1 + 6 and box.y0 - 6 < py < box.y1 + 6), t.get_text()
        beyond += sum(t.get_gid() == "recommended-beyond" for t in ax.texts)
    recs = [r for r in design.recommended if r.get("configurations") is not None]
    outside = [r for r in recs if not min(plan.configurations) <= r["configurations"] <= max(plan.configurations)]
    assert beyond == len(outside)  # said in words where it is not drawn
    assert "j: " in fig._suptitle.get_text() and "q: " in fig._suptitle.get_text()
    small = [t.get_text() for t in fig.findobj(Text) if t.get_visible() and t.get_text().strip()
             and t.get_fontsize() < MIN_SHOWN_PT]  # shown at its own size (design_power.png, 120 dpi)
    assert small == []


def test_the_plan_figures_design_labels_clear_every_star_and_each_other() -> None:
    """The last panel puts every recommendation on one power line, 0.05 apart in effect: a label beside its
    star ran into the next star and its label (the committed data/v1 plan, effects 0.05, 0.1, 0.15)."""
    from analysis.params import DEFAULT_PLAN_PARAMS
    from analysis.plan.figure import power_figure
    from analysis.plan.run import make_design

    plan = DEFAULT_PLAN_PARAMS.replace(configurations=(10, 40), repeats=(2, 8), effects=(0.0, 0.05, 0.1, 0.15),
                                       sims=20)
    fig = power_figure(make_design(load_package(V1), plan))
    FigureCanvasAgg(fig).draw()
    renderer = fig.canvas.get_renderer()
    last = fig.axes[len(plan.effects)]
    stars = [a for a in last.get_children() if isinstance(a, Line2D) and a.get_gid() == "recommended"]
    labels = [t for t in last.texts if t.get_text().startswith("K=")]
    assert len(stars) == len(labels) == 3
    half = 12 * fig.dpi / 72 / 2  # the star's marker size (ms=12 points), half of it in pixels
    boxes = [t.get_window_extent(renderer) for t in labels]
    for star in stars:
        px, py = last.transData.transform(star.get_xydata()[0])
        for t, box in zip(labels, boxes, strict=True):
            assert not (box.x0 - half < px < box.x1 + half and box.y0 - half < py < box.y1 + half), t.get_text()
    for i, a in enumerate(boxes):
        for b in boxes[i + 1:]:
            assert not a.overlaps(b), [t.get_text() for t in labels]


# ------------------------------------------------------------------ many folds stay linear

def test_a_million_folds_draw_with_capped_ticks() -> None:
    import time

    from analysis.figures.common import new_figure
    from analysis.figures.survival import MAX_FOLD_TICKS, set_fold_ticks

    fig, (ax,) = new_figure(1)
    t0 = time.perf_counter()
    ax.set_xlim(-0.1, 1_000_000.1)
    set_fold_ticks(ax, 1_000_000)
    fig.canvas.draw()
    assert time.perf_counter() - t0 < 5 and len(ax.get_xticks()) <= MAX_FOLD_TICKS + 2
    _fig2, (bx,) = new_figure(1)
    set_fold_ticks(bx, 5)
    assert list(bx.get_xticks()) == [0, 1, 2, 3, 4, 5]  # a short row keeps one tick per fold

