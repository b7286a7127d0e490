"""The picture of the partition (issue 55): the SVG is read back and checked against what it claims,
and its racing elements against the exact detector's."""
import gc
import shutil
import xml.etree.ElementTree as ET
from pathlib import Path

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings

import tilecheck
from corpus.kernels import attention, elementwise
from tests.oracle_kernels import cases
from tests.oracle_relation import load
from tests.tiers import examples
from tilecheck.cli import main
from tilecheck.interp.ownership import owners
from tilecheck.runtime.picture import MAX_CELLS, picture

CROSS_BLOCK = ("write-write", "read-write")


def _read(svg: str) -> dict:
    """What the picture claims: per array, the owners of its cells and its racing elements."""
    root = ET.fromstring(svg)
    out = {}
    for g in root.iter("{http://www.w3.org/2000/svg}g"):
        if "data-array" not in g.attrib:
            continue
        rects = list(g.iter("{http://www.w3.org/2000/svg}rect"))
        owners_ = {int(r.attrib["data-owner"]) for r in rects if "data-owner" in r.attrib}
        racing = set()
        for r in rects:
            if "data-elements" in r.attrib:
                racing |= {int(e) for e in r.attrib["data-elements"].split()}
        witness = [int(r.attrib["data-witness"]) for r in rects if "data-witness" in r.attrib]
        out[g.attrib["data-array"]] = {"owners": owners_ - {-1, -2}, "racing": racing, "witness": witness,
                                       "cell": g.attrib["data-cell"],
                                       "racing_cells": sum("data-race" in r.attrib for r in rects)}
    return out


def _case(kernel):
    case = tilecheck.cases_of(kernel)[0]
    return case.make_args(), case.grid


def test_a_race_free_kernel_is_a_clean_tiling_one_colour_per_block():
    args, grid = _case(elementwise.vector_add)
    blocks = int(np.prod(grid))
    drawn = _read(picture(elementwise.vector_add, args, grid).svg())
    assert set(drawn) == {"c"}  # only the written array
    assert drawn["c"]["owners"] == set(range(blocks)) and not drawn["c"]["racing"]


def test_the_papers_bug_is_hatched_where_detect_finds_it_and_its_fix_is_clean():
    args, grid = _case(attention.head_permute_swapped)
    found = owners(attention.head_permute_swapped, args, grid)
    pic = picture(attention.head_permute_swapped, args, grid, max_cells=1 << 17)
    drawn = _read(pic.svg())
    assert drawn["dst"]["cell"] == "1 1"  # every element drawn alone: the sets are exact
    assert drawn["dst"]["racing"] == set(found.arrays[0].racing_elements) and drawn["dst"]["racing"]
    report = tilecheck.detect(attention.head_permute_swapped, args, grid)
    first = report.races[0]
    drawn = _read(picture(attention.head_permute_swapped, args, grid, witness=first, max_cells=1 << 17).svg())
    assert drawn["dst"]["witness"] and drawn["dst"]["witness"][0] in drawn["dst"]["racing"]
    args, grid = _case(attention.head_permute_safe)
    assert not _read(picture(attention.head_permute_safe, args, grid).svg())["dst"]["racing"]


@pytest.mark.parametrize("name", ["head_permute_swapped", "head_permute_paper_fix", "head_permute_safe"])
def test_the_racing_set_is_what_the_detector_finds(name):
    kernel = getattr(attention, name)
    args, grid = _case(kernel)
    report = tilecheck.detect(kernel, args, grid)
    drawn = _read(picture(kernel, args, grid, max_cells=1 << 17).svg())
    racing = set().union(*(d["racing"] for d in drawn.values()))
    assert bool(racing) == any(f.kind in CROSS_BLOCK for f in report.findings)


@settings(max_examples=examples(40), deadline=None, derandomize=True,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much])
@given(case=cases())
def test_on_the_oracles_kernels_the_picture_races_where_detect_does(case, tmp_path_factory):
    """The picture's racing elements, read back from the SVG, are the detector's: none on a launch
    it finds free of cross-block races; on one it finds racy, a set holding each race's witness."""
    loaded = load(case, tmp_path_factory.mktemp("picture"))
    report = tilecheck.detect(loaded.kernel, loaded.args, loaded.grid, assume=loaded.assume)
    if report.status == "unknown":
        return
    try:
        drawn = _read(picture(loaded.kernel, loaded.args, loaded.grid, max_cells=1 << 16).svg())
    except tilecheck.TilecheckError:  # the launch cannot run (as detect said: unknown)
        return
    racing = {(name, e) for name, d in drawn.items() for e in d["racing"]}
    cross = [f for f in report.findings if f.kind in CROSS_BLOCK and f.witness is not None]
    assert bool(racing) == bool(cross), (report, sorted(racing)[:5])
    for f in cross:
        pic = picture(loaded.kernel, loaded.args, loaded.grid, witness=f, max_cells=1 << 16)
        if pic.witness is not None:
            assert pic.witness in racing, (f, sorted(racing)[:5])


def test_a_large_launch_is_drawn_in_cells_and_stays_small():
    n = 1 << 20
    tile = 1 << 12
    args = (np.ones(n, np.float32), np.ones(n, np.float32), np.zeros(n, np.float32), tile)
    svg = picture(elementwise.vector_add, args, (n // tile, 1, 1)).svg()
    assert len(svg.encode()) < 2 * 1024 * 1024
    drawn = _read(svg)["c"]
    assert drawn["cell"] != "1 1" and len(drawn["owners"]) == n // tile


def test_a_report_keeps_no_array_alive_and_draws_its_launch_while_they_are(tmp_path):
    args, grid = _case(elementwise.vector_add)
    report = tilecheck.verify(elementwise.vector_add, args, grid, cache=False)
    path = report.save_picture(tmp_path / "p.svg")
    assert _read(path.read_text())["c"]["owners"]
    del args
    gc.collect()
    with pytest.raises(tilecheck.TilecheckError, match="arrays are still alive"):
        report.save_picture(tmp_path / "q.svg")


def test_png_through_the_plot_extra(tmp_path):
    pytest.importorskip("matplotlib")
    args, grid = _case(attention.head_permute_swapped)
    path = picture(attention.head_permute_swapped, args, grid).save(tmp_path / "p.png")
    assert path.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_the_cli_writes_pictures_and_refuses_other_formats_first(tmp_path, capsys):
    target = f"{Path(attention.__file__)}::head_permute_swapped"
    assert main(["explain", target, "--picture", str(tmp_path / "race.svg")]) == 1
    assert _read((tmp_path / "race.svg").read_text())["dst"]["racing_cells"]
    target = f"{Path(elementwise.__file__)}::vector_add"
    assert main(["run", target, "--repeat", "2", "--picture", str(tmp_path / "clean.svg")]) == 0
    assert not _read((tmp_path / "clean.svg").read_text())["c"]["racing_cells"]
    assert main(["run", target, "--picture", str(tmp_path / "x.pdf")]) == 3
    assert "drawn as .svg" in capsys.readouterr().err and not (tmp_path / "x.pdf").exists()


def _browser():
    """A headless Chromium through Playwright (PyPI), or the reason there is none."""
    try:
        from playwright.sync_api import sync_playwright
    except ImportError:
        return None, "playwright is not installed"
    executable = shutil.which("chromium") or shutil.which("chromium-browser") or shutil.which("google-chrome")
    return (sync_playwright, executable), None


def test_the_picture_renders_in_a_real_browser_without_errors(tmp_path):
    found, why = _browser()
    if found is None:
        pytest.skip(why)
    sync_playwright, executable = found
    args, grid = _case(attention.head_permute_swapped)
    path = picture(attention.head_permute_swapped, args, grid).save(tmp_path / "p.svg")
    errors = []
    with sync_playwright() as p:
        try:
            browser = p.chromium.launch(**({"executable_path": executable} if executable else {}))
        except Exception as exc:  # noqa: BLE001 - no browser could be started here
            pytest.skip(f"no headless browser: {str(exc).splitlines()[0]}")
        page = browser.new_page()
        page.on("console", lambda m: errors.append(m.text) if m.type == "error" else None)
        page.on("pageerror", lambda e: errors.append(str(e)))
        page.goto(path.as_uri())
        rendered = page.evaluate("() => { const s = document.querySelector('svg');"
                                 " const b = s.getBBox(); return [b.width, b.height,"
                                 " document.querySelectorAll('rect[data-race]').length]; }")
        browser.close()
    assert not errors and rendered[0] > 100 and rendered[1] > 100 and rendered[2] > 0


def _corpus_params():
    from tests.conftest import ROOT
    from tests.test_corpus import ENTRIES, EVERY_ENTRY

    return ROOT, ENTRIES, [p for p in EVERY_ENTRY if ENTRIES[p.values[0]]["file"].endswith(".py")]


_ROOT, _ENTRIES, _PY_ENTRIES = _corpus_params()


@pytest.mark.parametrize("index", _PY_ENTRIES)
def test_on_the_corpus_the_picture_races_where_detect_does(index):
    """Every corpus entry with a launch (the fast tier: its sample; --thorough: all): hatched elements
    where and only where ``detect`` finds a cross-block race, each witness among them."""
    from tilecheck.collect import MissingFrontend, load_module

    entry = _ENTRIES[index]
    try:
        module = load_module(_ROOT / "corpus" / entry["file"])
    except MissingFrontend:
        pytest.skip("needs tilecheck[triton]")
    kernel = getattr(module, entry.get("kernel", Path(entry["file"]).stem))
    case = tilecheck.cases_of(kernel)[entry.get("case", 0)]
    args = case.make_args()
    assume = [tilecheck.requirements.parse(s) for s in entry.get("assume", [])]
    report = tilecheck.detect(kernel, args, case.grid, assume=assume)
    if report.status == "unknown":
        pytest.skip("the detector cannot run this launch: " + "; ".join(report.reasons))
    pic = picture(kernel, args, case.grid, max_cells=1 << 18)
    racing = {(name, e) for name, d in _read(pic.svg()).items() for e in d["racing"]}
    cross = [f for f in report.findings if f.kind in CROSS_BLOCK and f.witness is not None]
    assert bool(racing) == bool(cross), (report.status, sorted(racing)[:5])
    for f in cross:
        drawn = picture(kernel, args, case.grid, witness=f, max_cells=1 << 18)
        if drawn.witness is not None:
            assert drawn.witness in racing, (f.witness.element_text(), sorted(racing)[:5])


def test_blocks_are_named_as_the_interpreter_numbers_them():
    from tilecheck.interp.engine import linear_block_ids
    from tilecheck.interp.ownership import Owners
    from tilecheck.runtime.picture import _block_name

    grid = (3, 2, 2)
    blocks = np.array([(x, y, z) for x in range(3) for y in range(2) for z in range(2)])
    found = Owners("k", grid, [])
    for (x, y, z), linear in zip(blocks.tolist(), linear_block_ids(blocks, grid).tolist()):
        assert _block_name(found, linear) == f"({x}, {y}, {z})"
