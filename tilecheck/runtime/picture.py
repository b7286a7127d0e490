"""A picture of the partition (issue 55): each written array of one launch as a grid of its
elements, coloured by the block that writes each, with the elements two blocks race on hatched and
labelled with both blocks, and the witness element outlined.

The truth is the exact detector's run of the launch (``interp.ownership``), not the verifier's
model: what is drawn is what this launch does. Arrays are drawn as their memory (what blocks touch):
the last dimension across, the leading ones collapsed into rows (a faint line between slices of a
3-D or 4-D array); a 1-D array wraps at ``WRAP`` elements. An array of more than ``max_cells``
elements is drawn in cells of several elements (the caption says how many): a cell takes its
writer's colour when one block writes all of it, grey when several do, and is hatched when any
element in it races.

SVG by default, written here with no dependency (diffable, and it renders in browsers and in
GitHub's file view); ``.png`` through matplotlib (the ``plot`` extra). Every cell carries what it
claims as data attributes (``data-owner``, ``data-race``, ``data-elements``), so a test, or a CI
step, can read the picture back.
"""
from __future__ import annotations

import colorsys
import html
import math
import textwrap
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from tilecheck.errors import TilecheckError
from tilecheck.interp.ownership import NO_BLOCK, ArrayOwners, Owners, owners
from tilecheck.interp.runs import block_of
from tilecheck.report import PICTURES

WRAP = 64  # a 1-D array's elements per row
MAX_CELLS = 4096  # per array; larger arrays are drawn in cells of several elements
MIXED = -2  # a cell several blocks write
MAX_LEGEND = 24  # blocks named in the legend
_CELL_PX = (6, 22)  # the smallest and largest cell, in pixels
_WIDTH_PX = 720  # about the width of an array's grid
_UNWRITTEN, _MIXED_FILL = "#ffffff", "#9a9a9a"
_LINE_CHARS = 118  # a caption line, about the picture's width


@dataclass(frozen=True)
class Panel:
    """One array laid out: its cells, each ``cell`` elements (rows, columns) of its memory."""

    array: ArrayOwners
    rows: int  # element rows
    cols: int  # elements per row
    cell: tuple[int, int]
    owner: np.ndarray  # (R, C) a cell's writing block, NO_BLOCK or MIXED
    racing: np.ndarray  # (R, C) bool
    first_race: np.ndarray  # (R, C) int64: the cell's least racing element (-1: none)
    race_count: np.ndarray  # (R, C): how many of the cell's elements race
    slice_rows: int  # cell rows per slice of a 3-D or 4-D array (0: no slices drawn)

    @property
    def sampled(self) -> bool:
        return self.cell != (1, 1)


@dataclass
class Picture:
    """The picture of one launch; ``svg()`` is its text, ``save(path)`` writes it."""

    owners: Owners
    panels: list[Panel]
    witness: tuple[str, int] | None = None  # (array, element of its memory) outlined

    def svg(self) -> str:
        return _svg(self)

    def save(self, path: str | Path) -> Path:
        """Write the picture: SVG, or PNG for a ``.png`` path (needs matplotlib: the ``plot`` extra)."""
        path = Path(path)
        if path.suffix.lower() == ".png":
            _png(self, path)
        else:
            path.write_text(self.svg())
        return path

    @property
    def racing(self) -> dict[str, list[int]]:
        """Per array, the elements (of its memory) two blocks race on."""
        return {p.array.name: p.array.racing_elements for p in self.panels if p.array.racing.any()}


def picture(kernel: Any, args: Sequence[Any], grid: Any, *, witness: Any = None,
            max_cells: int = MAX_CELLS) -> Picture:
    """The picture of ``kernel`` launched on ``args`` over ``grid`` (the launch runs once on the
    interpreter, on copies). ``witness``: a ``Finding`` (or its ``Witness``) whose element is outlined."""
    from tilecheck import checks
    from tilecheck.interp.engine import InterpreterError

    checks.kernel("picture(kernel=...)", kernel, module=True)
    checks.arguments("picture(args=...)", args, by_name=True)
    max_cells = checks.integer("picture(max_cells=...)", max_cells, minimum=1)
    try:
        found = owners(kernel, args, grid)
    except InterpreterError as exc:
        raise TilecheckError(f"no picture: the interpreter could not run this launch: {exc}") from None
    panels = [_panel(a, max_cells) for a in found.arrays]
    return Picture(found, panels, _witness_element(witness, found))


def save_report_picture(report: Any, path: str | Path, max_cells: int = MAX_CELLS) -> Path:
    """``Report.save_picture``: the launch the report is about, its first race's witness outlined."""
    launch = report.launch.get() if report.launch is not None else None
    if launch is None:
        for f in report.findings:
            case = f.launch_case()
            if case is not None and case[1] is not None and case[2] is not None:
                launch = case
                break
    if launch is None:
        raise TilecheckError(f"{report.kernel}: this report names no launch whose arrays are still alive "
                             "(a verdict for every grid, or the arrays were freed): draw one with "
                             "tilecheck.picture(kernel, args, grid).save(path)")
    kernel, args, grid = launch
    first = next((f for f in report.races if f.witness is not None), None)
    return picture(kernel, args, grid, witness=first, max_cells=max_cells).save(path)


# ---- layout -------------------------------------------------------------------------------------------
def _layout(array: ArrayOwners, max_cells: int) -> tuple[int, int, int, int, int]:
    """(rows, columns, rows per slice, cell rows, cell columns) of an array's memory. A 1-D array
    (or one whose memory is not its shape) wraps at ``WRAP`` cells a row, each cell a run of
    consecutive elements; a 2-D or larger one keeps its last dimension across, its cells blocks of
    rows and columns."""
    n = len(array.writer)
    shape = array.shape
    if len(shape) >= 2 and shape[-1] > 0 and n % shape[-1] == 0:
        cols = shape[-1]
        slice_rows = shape[-2] if len(shape) >= 3 and math.prod(shape) == n else 0
        rows = n // cols
        ch = cw = 1
        while -(-rows // ch) * -(-cols // cw) > max_cells:  # coarsen the longer side of the cells' grid
            if -(-cols // cw) >= -(-rows // ch):
                cw *= 2
            else:
                ch *= 2
        return rows, cols, slice_rows, ch, cw
    cw = 1
    while -(-n // cw) > max_cells:
        cw *= 2
    cols = max(1, min(-(-n // cw), WRAP)) * cw
    return -(-n // cols), cols, 0, 1, cw


def _panel(array: ArrayOwners, max_cells: int) -> Panel:
    rows, cols, slice_rows, ch, cw = _layout(array, max_cells)
    n = len(array.writer)
    R, C = -(-rows // ch), -(-cols // cw)

    def grid_of(values: np.ndarray, fill: Any) -> np.ndarray:
        out = np.full(rows * cols, fill, values.dtype)
        out[:n] = values
        full = np.full((R * ch, C * cw), fill, values.dtype)
        full[:rows, :cols] = out.reshape(rows, cols)
        return full.reshape(R, ch, C, cw).transpose(0, 2, 1, 3).reshape(R, C, ch * cw)

    writer = grid_of(array.writer.astype(np.int64), NO_BLOCK)
    written = writer != NO_BLOCK
    high = np.where(written, writer, -1).max(axis=2)
    low = np.where(written, writer, np.iinfo(np.int64).max).min(axis=2)
    owner = np.where(high == -1, NO_BLOCK, np.where(low == high, high, MIXED))
    racing_cells = grid_of(array.racing, False)
    index = grid_of(np.arange(n, dtype=np.int64), -1)
    first_race = np.where(racing_cells, index, np.iinfo(np.int64).max).min(axis=2)
    first_race[first_race == np.iinfo(np.int64).max] = -1
    return Panel(array, rows, cols, (ch, cw), owner, racing_cells.any(axis=2), first_race, racing_cells.sum(axis=2),
                 slice_rows // ch if slice_rows and slice_rows % ch == 0 else 0)


def _witness_element(witness: Any, found: Owners) -> tuple[str, int] | None:
    w = getattr(witness, "witness", witness)
    if w is None or getattr(w, "array", None) is None:
        return None
    array = next((a for a in found.arrays if a.name == w.array), None)
    if array is None:
        return None
    if w.offset is not None:
        return w.array, int(w.offset)
    strides = w.strides.get(w.array) if w.strides else None
    if w.element is not None and strides and len(strides) == len(w.element):
        return w.array, int(sum(i * s for i, s in zip(w.element, strides)))
    if w.element is not None and len(w.element) == len(array.shape):  # a contiguous array
        return w.array, int(np.ravel_multi_index(w.element, array.shape)) if all(
            0 <= i < d for i, d in zip(w.element, array.shape)) else None
    return None


# ---- colours ------------------------------------------------------------------------------------------
def colour(block: int) -> str:
    """A block's colour: hues spread by the golden ratio, so neighbouring blocks differ, and the same
    block has the same colour in every picture."""
    if block == NO_BLOCK:
        return _UNWRITTEN
    if block == MIXED:
        return _MIXED_FILL
    r, g, b = colorsys.hls_to_rgb((block * 0.6180339887) % 1.0, 0.62 - 0.12 * (block % 3) / 2, 0.58)
    return f"#{int(r * 255):02x}{int(g * 255):02x}{int(b * 255):02x}"


def _block_name(found: Owners, block: int) -> str:
    x, y, z = block_of(block, found.grid)
    _, gy, gz = found.grid
    return f"({x}, {y}, {z})" if gz > 1 else f"({x}, {y})" if gy > 1 else f"({x})"


# ---- SVG ----------------------------------------------------------------------------------------------
def _svg(pic: Picture) -> str:
    found = pic.owners
    parts: list[str] = []
    y = 34
    width = 760
    blocks: set[int] = set()
    for panel in pic.panels:
        blocks |= {int(b) for b in np.unique(panel.owner) if b >= 0}
        body, height, panel_width = _svg_panel(pic, panel, y)
        parts.append(body)
        y += height + 28
        width = max(width, panel_width + 40)
    legend, legend_height = _svg_legend(found, sorted(blocks), y, width)
    parts.append(legend)
    y += legend_height
    title = html.escape(f"{found.kernel}: which block writes which element, grid {found.grid}")
    head = (f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{y + 10}" '
            f'viewBox="0 0 {width} {y + 10}" font-family="sans-serif" data-kernel="{html.escape(found.kernel)}" '
            f'data-grid="{" ".join(map(str, found.grid))}">\n'
            '<defs><pattern id="race" width="6" height="6" patternUnits="userSpaceOnUse" '
            'patternTransform="rotate(45)"><rect width="6" height="6" fill="#ffffff" fill-opacity="0.35"/>'
            '<line x1="0" y1="0" x2="0" y2="6" stroke="#000000" stroke-width="2.5"/></pattern></defs>\n'
            f'<rect width="100%" height="100%" fill="#ffffff"/>\n'
            f'<text x="20" y="22" font-size="15" font-weight="bold">{title}</text>\n')
    return head + "".join(parts) + "</svg>\n"


def _svg_panel(pic: Picture, panel: Panel, top: int) -> tuple[str, int, int]:
    a = panel.array
    R, C = panel.owner.shape
    px = max(_CELL_PX[0], min(_CELL_PX[1], _WIDTH_PX // max(C, 1)))
    races = int(a.racing.sum())
    lines = [f"{a.name} {tuple(a.shape)}: {len(a.writer)} elements of memory, {panel.rows} x {panel.cols}"
             + (f"; each cell is {panel.cell[0]} x {panel.cell[1]} elements (grey: several blocks write it)"
                if panel.sampled else "")]
    orders = f" in any of {pic.owners.orders} block orders" if pic.owners.orders > 1 else ""
    lines.append(f"{races} element(s) two blocks race on{orders}, hatched: " + _pairs(pic.owners, a) if races
                 else f"no element two blocks race on{orders}")
    lines = [part for line in lines for part in textwrap.wrap(line, _LINE_CHARS)]
    out = [f'<g data-array="{html.escape(a.name)}" data-rows="{panel.rows}" data-cols="{panel.cols}" '
           f'data-cell="{panel.cell[0]} {panel.cell[1]}" data-racing="{races}">\n',
           *(f'<text x="20" y="{top + 12 + 15 * n}" font-size="12">{html.escape(line)}</text>\n'
             for n, line in enumerate(lines))]
    y0 = top + 8 + 15 * len(lines)
    x0 = 20
    cells_per_row = panel.cell[0] * panel.cols
    for r in range(R):
        c = 0
        while c < C:  # a run of equal, race-free cells is one rectangle
            owner = int(panel.owner[r, c])
            end = c + 1
            if not panel.racing[r, c]:
                while end < C and not panel.racing[r, end] and int(panel.owner[r, end]) == owner:
                    end += 1
            first = r * cells_per_row + c * panel.cell[1]
            out.append(f'<rect x="{x0 + c * px}" y="{y0 + r * px}" width="{(end - c) * px}" height="{px}" '
                       f'fill="{colour(owner)}" stroke="#ffffff" stroke-width="0.5" data-owner="{owner}" '
                       f'data-cells="{end - c}" data-first="{first}"/>\n')
            c = end
    for r, c in zip(*np.nonzero(panel.racing)):
        element = int(panel.first_race[r, c])
        lo, hi = (int(v) for v in a.blocks[element])
        names = f"{_block_name(pic.owners, lo)} / {_block_name(pic.owners, hi)}"
        # an element drawn alone names itself; a cell of several says how many of its elements race
        members = (f'data-elements="{element}"' if not panel.sampled
                   else f'data-first-race="{element}" data-races="{int(panel.race_count[r, c])}"')
        out.append(f'<rect x="{x0 + c * px}" y="{y0 + r * px}" width="{px}" height="{px}" fill="url(#race)" '
                   f'stroke="#000000" stroke-width="0.8" data-race="{lo} {hi}" {members}><title>element '
                   f'{element}: blocks {html.escape(names)}</title></rect>\n')
        if px >= 18:
            out.append(f'<text x="{x0 + c * px + px / 2}" y="{y0 + r * px + px * 0.62}" font-size="{px * 0.36:.1f}" '
                       f'text-anchor="middle" fill="#000000">{lo}/{hi}</text>\n')
    if panel.slice_rows:  # in cell rows
        for s in range(panel.slice_rows, R, panel.slice_rows):
            out.append(f'<line x1="{x0}" y1="{y0 + s * px}" x2="{x0 + C * px}" y2="{y0 + s * px}" '
                       f'stroke="#404040" stroke-width="1.2"/>\n')
    out.append(f'<rect x="{x0}" y="{y0}" width="{C * px}" height="{R * px}" fill="none" stroke="#404040" '
               f'stroke-width="1"/>\n')
    if pic.witness is not None and pic.witness[0] == a.name and 0 <= pic.witness[1] < len(a.writer):
        element = pic.witness[1]
        r, c = element // panel.cols // panel.cell[0], element % panel.cols // panel.cell[1]
        out.append(f'<rect x="{x0 + c * px - 2}" y="{y0 + r * px - 2}" width="{px + 4}" height="{px + 4}" '
                   f'fill="none" stroke="#000000" stroke-width="3" data-witness="{element}"/>\n'
                   f'<text x="{x0 + C * px + 6}" y="{y0 + r * px + px * 0.8}" font-size="11" '
                   f'font-weight="bold">&lt;- witness</text>\n')
    out.append("</g>\n")
    return "".join(out), 8 + 15 * len(lines) + R * px, C * px + 60


def _pairs(found: Owners, a: ArrayOwners, most: int = 3) -> str:
    """The pairs of blocks that race on ``a``'s elements, most elements first."""
    pairs, counts = np.unique(a.blocks[a.racing], axis=0, return_counts=True)
    order = np.argsort(-counts, kind="stable")
    named = [f"{_block_name(found, int(pairs[i][0]))} and {_block_name(found, int(pairs[i][1]))} on {counts[i]}"
             for i in order[:most]]
    return "; ".join(named) + (f"; and {len(order) - most} more pairs" if len(order) > most else "")


def _svg_legend(found: Owners, blocks: list[int], top: int, width: int) -> tuple[str, int]:
    out = [f'<g data-legend="{len(blocks)}">\n<text x="20" y="{top + 12}" font-size="12" font-weight="bold">'
           f'colour: the block that writes the element (the least, where several do); {len(blocks)} shown'
           f'</text>\n']
    per_row = max(1, (width - 40) // 110)
    shown = blocks[:MAX_LEGEND]
    for n, block in enumerate(shown):
        x, y = 20 + (n % per_row) * 110, top + 20 + (n // per_row) * 18
        out.append(f'<rect x="{x}" y="{y}" width="12" height="12" fill="{colour(block)}" stroke="#606060" '
                   f'stroke-width="0.5" data-legend-block="{block}"/>'
                   f'<text x="{x + 16}" y="{y + 10}" font-size="11">block {html.escape(_block_name(found, block))}'
                   f'</text>\n')
    rows = -(-len(shown) // per_row)
    y = top + 20 + rows * 18
    notes = textwrap.wrap("hatched: an element two blocks race on (its writer and another block that touches it, "
                          "named in the caption and each cell's title; a cell's label gives their linear ids, "
                          "x * gy * gz + y * gz + z); outlined: the witness", _LINE_CHARS)
    if len(blocks) > len(shown):
        notes.insert(0, f"and {len(blocks) - len(shown)} more blocks (colours by linear block id)")
    for n, note in enumerate(notes):
        out.append(f'<text x="20" y="{y + 12 + 16 * n}" font-size="11">{html.escape(note)}</text>\n')
    out.append("</g>\n")
    return "".join(out), 20 + rows * 18 + 16 * len(notes) + 8


# ---- PNG ----------------------------------------------------------------------------------------------
def _png(pic: Picture, path: Path) -> None:
    """The same grids as an image (one after another, top to bottom; no legend: the SVG has it)."""
    try:
        import matplotlib.image as mimage
    except ImportError:
        raise TilecheckError("a PNG picture needs matplotlib: pip install 'tilecheck[plot]' "
                             "(or save it as .svg)") from None
    px = 6
    width = max(p.owner.shape[1] for p in pic.panels) * px if pic.panels else px
    images = []
    for p in pic.panels:
        R, C = p.owner.shape
        rgb = np.ones((R * px, width, 3))
        for r in range(R):
            for c in range(C):
                hexa = colour(int(p.owner[r, c]))
                rgb[r * px:(r + 1) * px, c * px:(c + 1) * px] = [int(hexa[i:i + 2], 16) / 255 for i in (1, 3, 5)]
                if p.racing[r, c]:
                    for d in range(px):
                        rgb[r * px + d, c * px + (d + r) % px] = 0.0
        images.append(rgb)
        images.append(np.ones((px * 2, width, 3)))
    mimage.imsave(str(path), np.concatenate(images) if images else np.ones((px, px, 3)))


PICTURES["report"] = save_report_picture
