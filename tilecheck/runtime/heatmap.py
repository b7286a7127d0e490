"""The nondeterminism report as a figure: each output array laid out by its own dimensions (the
last two as the image, leading ones as small multiples), coloured by what the runs did to each
element, with the detector's racing elements circled. Needs matplotlib (the ``plot`` extra),
imported only here and only when a figure is drawn."""
from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Protocol

import numpy as np

from tilecheck.errors import TilecheckError
from tilecheck.runtime.outcomes import ArrayDiff

if TYPE_CHECKING:
    from tilecheck.report import Finding

MAX_PANELS = 64  # over all arrays of one figure
MAX_PIXELS = 256  # per panel axis; larger images are pooled (a pixel is red if any element differs)
MAX_RACE_LINES = 5
FIGURE_WIDTH = 14.0  # inches
# ArrayDiff.differing_mask codes -> drawing order (a pooled pixel shows the highest)
_DIFFERS, _UNWRITTEN = 1, 2
_RANK = np.array([0, 2, 1], np.uint8)  # identical 0, never written 1, differs 2
_COLOURS = ("#e4e4e4", "#8a8a8a", "#d62728")
_LABELS = ("identical in every run", "never written", "differs between runs")


@dataclass(frozen=True)
class ArrayPanels:
    """The panels drawn for one output array."""

    name: str
    shape: tuple[int, ...]
    shown: tuple[tuple[int, ...], ...]  # leading-dimension index of each drawn panel
    total: int  # panels the array has
    pooled: tuple[int, int]  # elements per pixel (rows, columns); (1, 1): one pixel each


@dataclass(frozen=True)
class HeatmapSummary:
    """What a drawn figure holds."""

    path: str
    arrays: tuple[ArrayPanels, ...]
    marked: int  # witnessed elements circled
    unplaced: int  # race findings whose element is not on a drawn panel

    @property
    def panels(self) -> int:
        return sum(len(a.shown) for a in self.arrays)

    @property
    def total_panels(self) -> int:
        return sum(a.total for a in self.arrays)


class Runs(Protocol):
    """What a figure reads of a nondeterminism report (``differential.NondeterminismReport``, which
    draws itself through ``save_heatmap``: a protocol here, so this module does not import it back)."""

    kernel: str
    grid: tuple[int, int, int]
    runs: int
    backend: str
    arrays: dict[str, ArrayDiff]
    constant_inputs: list[str]


@dataclass
class _Group:
    diff: ArrayDiff
    stack: np.ndarray  # (panels, rows, columns) mask codes
    leading: tuple[int, ...]
    marks: dict[int, list[tuple[int, int]]]  # panel -> (row, column) of witnessed elements
    shown: list[int]


def draw_heatmap(report: Runs, path: str, races: Sequence[Finding] | None = None,
                 max_panels: int = MAX_PANELS) -> HeatmapSummary:
    """Draw ``report`` as a PNG at ``path``; ``races`` (detector or verifier findings) have their
    witnessed elements circled and the first few listed under the figure."""
    Figure, FigureCanvasAgg, ListedColormap, Line2D, Patch = _matplotlib()
    check_heatmap_path(str(path))
    races = [f for f in races or () if f.witness is not None]
    groups = [_group(d) for d in report.arrays.values() if d.differing_mask is not None]
    if not groups:
        raise TilecheckError("no output arrays to draw")
    marked, unplaced = _place(groups, races)
    _choose_panels(groups, max_panels)

    layouts = [_layout(g) for g in groups]
    caption = _caption(report, groups, races, max_panels, unplaced)
    heights = [lay["height"] for lay in layouts] + [0.7 + 0.2 * len(caption)]
    fig = Figure(figsize=(FIGURE_WIDTH, sum(heights) + 0.8), layout="constrained")
    FigureCanvasAgg(fig)
    fig.suptitle(_title(report), fontsize=13, fontweight="bold")
    subfigs = fig.subfigures(len(heights), 1, height_ratios=heights, squeeze=False)[:, 0]
    cmap = ListedColormap(_COLOURS)
    summaries = []
    for g, lay, sub in zip(groups, layouts, subfigs):
        summaries.append(_draw_group(sub, g, lay, cmap))
    footer = subfigs[-1]
    handles = [Patch(facecolor=c, edgecolor="#444444", label=t) for c, t in zip(_COLOURS, _LABELS)]
    if races:
        handles.append(Line2D([], [], marker="o", linestyle="none", markersize=10, markerfacecolor="none",
                              markeredgecolor="black", markeredgewidth=1.8, label="racing element (witness)"))
    footer.legend(handles=handles, loc="upper center", ncols=len(handles), frameon=False, fontsize=10)
    footer.text(0.01, 0.98 - 0.45 / heights[-1], "\n".join(caption), ha="left", va="top", fontsize=9.5,
                family="monospace", transform=footer.transSubfigure)
    try:
        fig.savefig(path, dpi=100)
    except OSError as exc:
        raise TilecheckError(f"cannot write the heatmap to {path}: {exc.strerror or exc}") from None
    return HeatmapSummary(str(path), tuple(summaries), marked, unplaced)


def check_heatmap_path(path: str) -> None:
    """A ``TilecheckError`` unless ``path`` names a format the figure can be written in (its suffix:
    .png, .svg, .pdf, ...), so that a wrong name fails before the runs, with the formats listed."""
    from pathlib import Path

    suffix = Path(path).suffix.lower().lstrip(".")
    try:
        from matplotlib.backends.backend_agg import FigureCanvasAgg
    except ImportError:
        formats = {"png": ""}
    else:
        formats = FigureCanvasAgg.get_supported_filetypes()
    if suffix not in formats:
        raise TilecheckError(f"cannot write the heatmap to {path}: "
                             + (f"'.{suffix}' is not an image format" if suffix else "the name has no suffix")
                             + f" (use one of: {', '.join('.' + f for f in sorted(formats))})")


def _matplotlib() -> tuple[Any, ...]:
    try:
        import matplotlib  # noqa: F401
    except ImportError:
        raise TilecheckError("the heatmap needs matplotlib, which is not installed: "
                             "pip install 'tilecheck[plot]'") from None
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.colors import ListedColormap
    from matplotlib.figure import Figure
    from matplotlib.lines import Line2D
    from matplotlib.patches import Patch

    return Figure, FigureCanvasAgg, ListedColormap, Line2D, Patch


# ---- what to draw ----------------------------------------------------------------------------------
def _group(diff: ArrayDiff) -> _Group:
    """The array as a stack of 2-D panels: the last two dimensions are the image (a 1-D array is
    one row), the leading ones index the panels."""
    mask = np.asarray(diff.differing_mask)
    if mask.ndim < 2:
        stack, leading = mask.reshape(1, 1, -1), ()
    else:
        stack, leading = mask.reshape(-1, *mask.shape[-2:]), tuple(mask.shape[:-2])
    return _Group(diff, stack, leading, {}, [])


def _place(groups: list[_Group], races: list[Finding]) -> tuple[int, int]:
    """Put each witnessed element on its panel; (elements placed, findings not placed)."""
    by_name = {g.diff.name: g for g in groups}
    placed, unplaced = set(), 0
    for f in races:
        w = f.witness
        g = by_name.get(w.array)
        element = tuple(w.element) if w.element is not None else None
        if g is None or element is None or len(element) != len(g.diff.shape) or \
                any(not 0 <= i < n for i, n in zip(element, g.diff.shape)):
            unplaced += 1
            continue
        if len(element) < 2:
            panel, cell = 0, (0, element[0] if element else 0)
        else:
            panel = int(np.ravel_multi_index(element[:-2], g.leading)) if g.leading else 0
            cell = (element[-2], element[-1])
        if (g.diff.name, panel, cell) not in placed:
            placed.add((g.diff.name, panel, cell))
            g.marks.setdefault(panel, []).append(cell)
    return len(placed), unplaced


def _choose_panels(groups: list[_Group], max_panels: int) -> None:
    """At most ``max_panels`` panels in all, shared fairly between arrays; within an array, panels
    with a witness first, then with differing elements, then never-written ones, then the rest,
    drawn in index order."""
    budget, left = max(max_panels, len(groups)), len(groups)
    for g in sorted(groups, key=lambda g: len(g.stack)):
        take = min(len(g.stack), budget // left)
        differs = (g.stack == _DIFFERS).any(axis=(1, 2))
        unwritten = (g.stack == _UNWRITTEN).any(axis=(1, 2))
        rank = np.where(differs, 1, np.where(unwritten, 2, 3))
        rank[list(g.marks)] = 0
        g.shown = sorted(int(i) for i in np.argsort(rank, kind="stable")[:take])
        budget, left = budget - take, left - 1


def _pool(panel: np.ndarray, rows: int, cols: int) -> np.ndarray:
    """Pool ``rows`` x ``cols`` elements into one pixel, which shows the highest-ranked code
    (differs over never written over identical); the result holds ranks 0..2."""
    ranks = _RANK[panel]
    r, c = ranks.shape
    padded = np.zeros((math.ceil(r / rows) * rows, math.ceil(c / cols) * cols), np.uint8)
    padded[:r, :c] = ranks
    return padded.reshape(padded.shape[0] // rows, rows, padded.shape[1] // cols, cols).max(axis=(1, 3))


# ---- drawing -----------------------------------------------------------------------------------------
def _layout(g: _Group) -> dict[str, Any]:
    rows, cols = g.stack.shape[1:]
    n = len(g.shown)
    if len(g.diff.shape) < 2:
        ncols, width, height = 1, FIGURE_WIDTH - 1.5, 0.45
    else:
        ncols = min(n, 8)
        width = min((FIGURE_WIDTH - 1.0) / ncols - 0.35, 4.5)
        height = min(max(width * rows / cols, 0.6), 4.5)
    nrows = math.ceil(n / ncols)
    titled = bool(g.leading)
    return {"ncols": ncols, "nrows": nrows, "aspect": "auto" if len(g.diff.shape) < 2 else "equal",
            "height": nrows * (height + (0.3 if titled else 0.0)) + (0.75 if titled else 0.45)
            + (0.35 if len(g.diff.shape) >= 2 else 0.3)}


def _draw_group(sub: Any, g: _Group, lay: dict[str, Any], cmap: Any) -> ArrayPanels:
    d = g.diff
    rows, cols = g.stack.shape[1:]
    pool = (max(1, math.ceil(rows / MAX_PIXELS)), max(1, math.ceil(cols / MAX_PIXELS)))
    ndim = len(d.shape)
    sub.suptitle(_group_title(g), fontsize=11, x=0.01, ha="left")
    axes = sub.subplots(lay["nrows"], lay["ncols"], squeeze=False)
    for k, ax in enumerate(axes.flat):
        if k >= len(g.shown):
            ax.set_axis_off()
            continue
        p = g.shown[k]
        image = _pool(g.stack[p], *pool)
        extent = (-0.5, image.shape[1] * pool[1] - 0.5, image.shape[0] * pool[0] - 0.5, -0.5)
        ax.imshow(image, cmap=cmap, vmin=-0.5, vmax=2.5, interpolation="nearest", extent=extent,
                  aspect=lay["aspect"])
        ax.set_xlim(-0.5, cols - 0.5)
        ax.set_ylim(rows - 0.5, -0.5)
        for r, c in g.marks.get(p, ()):
            for colour, width in (("white", 3.2), ("black", 1.6)):  # a ring visible on every colour
                ax.plot([c], [r], marker="o", markersize=11, markerfacecolor="none", markeredgecolor=colour,
                        markeredgewidth=width, clip_on=False)
        ax.tick_params(labelsize=7)
        if g.leading:
            index = np.unravel_index(p, g.leading)
            ax.set_title(f"[{', '.join(str(int(i)) for i in index)}, :, :]", fontsize=9)
        if ndim < 2:
            ax.set_yticks([])
            ax.set_xlabel("index", fontsize=8)
            continue
        if k // lay["ncols"] == lay["nrows"] - 1 or k + lay["ncols"] >= len(g.shown):
            ax.set_xlabel(f"column (axis {ndim - 1})", fontsize=8)
        if k % lay["ncols"] == 0:
            ax.set_ylabel(f"row (axis {ndim - 2})", fontsize=8)
    shown = tuple(tuple(int(i) for i in np.unravel_index(p, g.leading)) if g.leading else () for p in g.shown)
    return ArrayPanels(d.name, tuple(d.shape), shown, len(g.stack), pool)


def _group_title(g: _Group) -> str:
    d = g.diff
    size = max(math.prod(d.shape), 1)
    differ = int((g.stack == _DIFFERS).sum())
    text = f"{d.name}  shape {tuple(d.shape)}: {differ / size:.1%} of elements differ"
    if d.unwritten:
        text += f", {d.unwritten:,} never written"
    if g.leading:
        axes = ", ".join(str(i) for i in range(len(g.leading)))
        text += f"\none panel per index of axis {axes}" if len(g.leading) == 1 else \
            f"\none panel per index of axes {axes}"
        if len(g.shown) < len(g.stack):
            text += (f": {len(g.shown)} of {len(g.stack)} shown (panels with a witness, then with differing "
                     "elements, come first)")
    return text


def _title(report: Runs) -> str:
    total = sum(max(math.prod(d.shape), 1) for d in report.arrays.values())
    differ = sum(int((np.asarray(d.differing_mask) == _DIFFERS).sum()) for d in report.arrays.values()
                 if d.differing_mask is not None)
    grid = " x ".join(str(n) for n in report.grid)
    return (f"{report.kernel}: grid {grid}, {report.runs} runs ({report.backend}); "
            f"{differ / max(total, 1):.1%} of {total:,} output elements differ in some run")


def _caption(report: Runs, groups: list[_Group], races: list[Finding], max_panels: int,
             unplaced: int) -> list[str]:
    lines = []
    for f in races[:MAX_RACE_LINES]:
        w = f.witness
        if w.second is None:
            lines.append(f"block {_block(w.first.block)}: {f.kind} on {_element(w)}")
        else:
            lines.append(f"blocks {_block(w.first.block)} and {_block(w.second.block)} race on "
                         f"{_element(w)} ({f.kind})")
    if len(races) > MAX_RACE_LINES:
        lines.append(f"... and {len(races) - MAX_RACE_LINES} more race finding(s)")
    if unplaced:
        lines.append(f"{unplaced} witness(es) name an element not in a drawn array")
    shown, total = sum(len(g.shown) for g in groups), sum(len(g.stack) for g in groups)
    if shown < total:
        lines.append(f"{shown} of {total} panels shown (at most {max_panels})")
    for g in groups:
        rows, cols = g.stack.shape[1:]
        pool = (math.ceil(rows / MAX_PIXELS), math.ceil(cols / MAX_PIXELS))
        if pool != (1, 1):
            lines.append(f"{g.diff.name}: each pixel covers up to {pool[0]} x {pool[1]} elements "
                         "(red if any of them differs)")
    if report.constant_inputs:
        lines.append(f"inputs {', '.join(report.constant_inputs)} are constant: a race whose writers store "
                     "equal values cannot show here")
    if not lines:
        lines.append("no race findings to mark")
    return lines


def _element(w: Any) -> str:
    if w.element is None and w.offset is None:
        return f"an element of {w.array}"
    return w.element_text()


def _block(block: Sequence[int]) -> str:
    return f"({', '.join(str(int(i)) for i in block)})"
