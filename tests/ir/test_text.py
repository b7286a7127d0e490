"""The text form: tileirdisasm output parses; print -> parse -> print is a fixed point."""
from pathlib import Path

import pytest

from tests.cli.fuzz_inputs import long_tileir
from tilecheck import ir
from tilecheck.ir.bytecode.reader import read_bytecode
from tilecheck.ir.opdefs import Effect

DATA = Path(__file__).parent / "data"
FIXTURES = sorted(DATA.glob("*.tileir"))


def test_fixtures_present():
    assert len(FIXTURES) >= 20


@pytest.mark.parametrize("path", FIXTURES, ids=lambda p: p.stem)
def test_round_trip_is_fixed_point(path):
    module = ir.parse(path.read_text(), str(path))
    text = module.to_text()
    again = ir.parse(text)
    assert again.to_text() == text
    assert [op.name for op in again.walk()] == [op.name for op in module.walk()]


def _structure(module):
    out = []
    for op in module.walk():
        loc = op.loc.outermost()
        if op.opdef.terminator and not op.operands:
            loc = ir.Loc.unknown()  # MLIR elides these terminators in text, and their locations
        out.append((op.name, tuple(str(v.type) for v in op.results), len(op.operands),
                    {k: v for k, v in op.attrs.items() if k != "value"},
                    (Path(loc.file).name, loc.line) if loc.is_known() else None))
    return out


@pytest.mark.parametrize("path", FIXTURES, ids=lambda p: p.stem)
def test_disassembler_text_matches_our_bytecode_reader(path):
    """For the same bytes, tileirdisasm -g (recorded) and our bytecode reader give the same IR."""
    ours = read_bytecode(path.with_suffix(".tilebc").read_bytes())
    theirs = ir.parse(path.read_text(), str(path))
    assert _structure(ours) == _structure(theirs)


def test_memory_ops_carry_python_lines():
    module = ir.parse((DATA / "layer_norm_bwd.tileir").read_text())
    mem = [op for op in module.walk() if op.opdef.effect is not Effect.NONE]
    assert mem and all(op.loc.is_known() and op.loc.file.endswith("norms.py") for op in mem)


def test_multi_result_groups_and_hash_uses():
    text = (DATA / "layer_norm_bwd.tileir").read_text()
    assert "%1:2 = get_index_space_shape" in text and "%1#1" in text
    module = ir.parse(text)
    shape_op = next(op for op in module.walk() if op.name == "get_index_space_shape")
    loop = next(op for op in module.walk() if op.name == "for")
    assert len(shape_op.results) == 2
    assert loop.operand("upperBound") is shape_op.results[1]


def test_elided_terminators_are_restored():
    module = ir.parse((DATA / "head_permute_swapped.tileir").read_text())
    loop = next(op for op in module.walk() if op.name == "for")
    assert loop.regions[0].block.ops[-1].name == "continue"
    assert "continue" not in module.to_text()  # printed like MLIR: implicit


def test_unknown_op_is_kept_with_its_location():
    text = """entry @k(%a: tile<i32>) {
  %0 = make_token : token
  %1 = frobnicate %a, %0 {mode = 3} : tile<i32> loc("k.py":7:3)
  return
}
"""
    module = ir.parse(text)
    op = next(op for op in module.walk() if op.name == "frobnicate")
    assert op.opdef is None and not op.is_known
    assert op.operands == (module.entry.args[0], module.entry.body.ops[0].result)
    assert str(op.results[0].type) == "tile<i32>"
    assert (op.loc.file, op.loc.line) == ("k.py", 7)
    assert "frobnicate" in module.to_text()


def test_view_types_print_and_parse():
    text = """entry @k(%p: tile<ptr<f32>>, %s: tile<i32>) {
  %tv = make_tensor_view %p, shape = [%s, %s], strides = [%s, %s] : tile<i32> -> tensor_view<?x?xf32, strides=[?,?]>
  %pv = make_partition_view %tv : partition_view<tile=(32x16), padding_value = neg_inf, tensor_view<?x?xf32, strides=[?,?]>, dim_map=[1, 0]>
  %sv = make_strided_view %tv : strided_view<tile=(8x8), traversal_strides=[4,8], tensor_view<?x?xf32, strides=[?,?]>>
  return
}
"""
    module = ir.parse(text)
    pv, sv = (op.result.type for op in module.walk() if op.name.startswith("make_") and "view" in op.name
              and op.name != "make_tensor_view")
    assert pv.tile_shape == (32, 16) and pv.dim_map == (1, 0) and pv.padding == "neg_inf"
    assert sv.traversal_strides == (4, 8) and sv.tile_shape == (8, 8)
    assert ir.parse(module.to_text()).to_text() == module.to_text()


def test_constants_keep_exact_bits():
    text = """entry @k() {
  %a = constant <f32: 0xFF800000> : tile<4xf32>
  %b = constant <f32: -0.0> : tile<f32>
  %c = constant <i32: [1, 2, 3]> : tile<3xi32>
  %d = constant <i1: true> : tile<i1>
  return
}
"""
    module = ir.parse(text)
    a, b, c, d = (op.attrs["value"] for op in module.walk() if op.name == "constant")
    assert a.values == (0xFF800000,) and a.python_values()[0] == float("-inf")
    assert b.values == (0x80000000,)
    assert c.values == (1, 2, 3)
    assert d.values == (1,)
    assert ir.parse(module.to_text()).to_text() == module.to_text()


class _CountingText(str):
    """Text that counts the characters its slices and scans touch: a deterministic measure of the
    parser's work (copying the rest of the text at every backtrack made parsing quadratic)."""

    touched = 0

    def __getitem__(self, key):
        part = str.__getitem__(self, key)
        _CountingText.touched += len(part)
        return part

    def _scan(self, name, start=0, end=None):
        _CountingText.touched += len(range(len(self))[slice(start, end)])

    def count(self, sub, start=0, end=None):
        self._scan("count", start, end)
        return str.count(self, sub, start, len(self) if end is None else end)

    def rfind(self, sub, start=0, end=None):
        self._scan("rfind", start, end)
        return str.rfind(self, sub, start, len(self) if end is None else end)

    def splitlines(self, keepends=False):
        self._scan("splitlines")
        return str.splitlines(self, keepends)


def test_parsing_is_linear_in_the_input_size():
    """Issue 23: a 10 MB .tileir file must parse. The work (characters sliced or scanned) of four
    times the ops is about four times the work, not sixteen."""
    work = []
    for n in (300, 1200):
        _CountingText.touched = 0
        module = ir.parse(_CountingText(long_tileir(n)), "big.tileir")
        assert sum(op.name == "addf" for op in module.walk()) == n
        work.append(_CountingText.touched)
    assert work[1] <= 5 * work[0], work
