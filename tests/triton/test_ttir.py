"""The TTIR reader (tilecheck/ir/triton/ttir.py) on hand-written text: no Triton needed."""
import pytest

from tilecheck.ir.errors import FrontendError
from tilecheck.ir.triton.ttir import parse_ttir, split_top, strip_loc, value_refs

TEXT = '''#loc = loc("/k.py":3:0)
module {
  tt.func public @k(%x_ptr: !tt.ptr<f32> {tt.divisibility = 16 : i32} loc("x_ptr"(#loc)), %n: i32 loc("n"(#loc))) attributes {noinline = false} {
    %c0_i32 = arith.constant 0 : i32 loc(#loc1)
    %pid = tt.get_program_id x : i32 loc(#loc2)
    %0 = arith.cmpi eq, %pid, %c0_i32 : i32 loc(#loc3)
    cf.cond_br %0, ^bb1, ^bb2 loc(#loc3)
  ^bb1:  // pred: ^bb0
    tt.return loc(#loc4)
  ^bb2:  // pred: ^bb0
    %r:2 = scf.for %i = %c0_i32 to %n step %n iter_args(%a = %c0_i32, %b = %c0_i32) -> (i32, i32)  : i32 {
      %s = "tt.reduce"(%a) <{axis = 0 : i32}> ({
      ^bb0(%u: i32 loc(callsite(#loc5 at #loc6)), %v: i32 loc(callsite(#loc5 at #loc6))):
        %w = arith.addi %u, %v : i32 loc(#loc5)
        tt.reduce.return %w : i32 loc(#loc5)
      }) : (i32) -> i32 loc(#loc6)
      scf.yield %s, %b : i32, i32 loc(#loc7)
    } loc(#loc8)
    tt.return loc(#loc4)
  } loc(#loc)
} loc(#loc)
#loc1 = loc("/k.py":4:5)
#loc2 = loc("pid"(#loc9))
#loc3 = loc("/k.py":6:7)
#loc4 = loc("/k.py":9:4)
#loc5 = loc("/lib.py":20:11)
#loc6 = loc("/k.py":8:12)
#loc7 = loc("/k.py":8:4)
#loc8 = loc("/k.py":7:4)
#loc9 = loc("/k.py":5:10)
'''


def test_the_reader_keeps_regions_blocks_and_locations():
    func, locs = parse_ttir(TEXT, "k")
    assert func.name == "k"
    assert func.args == [("%x_ptr", "!tt.ptr<f32>"), ("%n", "i32")]
    names = [op.name for op in func.body.ops]
    assert names == ["arith.constant", "tt.get_program_id", "arith.cmpi", "cf.cond_br"]
    assert set(func.body.blocks) == {"^bb1", "^bb2"}
    loop = func.body.blocks["^bb2"].ops[0]
    assert loop.name == "scf.for" and loop.results == ["%r#0", "%r#1"]
    reduce = loop.regions[0].ops[0]
    assert reduce.name == "tt.reduce" and reduce.rest.endswith(": (i32) -> i32")  # the closing signature
    assert reduce.regions[0].args == [("%u", "i32"), ("%v", "i32")]
    assert locs.resolve(func.body.ops[1].loc_text).line == 5  # a named location is its inner one
    inlined = locs.resolve(reduce.regions[0].ops[0].loc_text)
    assert (inlined.file, inlined.line) == ("/lib.py", 20)
    callsite = locs.resolve("loc(callsite(#loc5 at #loc6))")
    assert (callsite.line, callsite.caller.line) == (20, 8)
    assert callsite.outermost().line == 8  # a finding shows the kernel's line


def test_text_helpers_respect_brackets_and_strings():
    assert split_top("a, tensor<4x!tt.ptr<f32>>, (b, c) -> d", ",") == ["a", " tensor<4x!tt.ptr<f32>>", " (b, c) -> d"]
    assert strip_loc('%x = foo %a : i32 loc(callsite(#loc1 at #loc2))') == ("%x = foo %a : i32",
                                                                           "loc(callsite(#loc1 at #loc2))")
    assert value_refs("%a, %r#1 : i32") == ["%a", "%r#1"]


@pytest.mark.parametrize("text, message", [
    ("module {\n}", "has no tt.func"),
    ("tt.func public @a() {\n  tt.return\n}\ntt.func public @b() {\n  tt.return\n}", "several functions (a, b)"),
    ("tt.func public @a() {\n  tt.return\n", "not closed"),
    ("tt.func public @a() {\n  ??? what\n}", "cannot read TTIR line 2"),
])
def test_malformed_ttir_is_a_frontend_error(text, message):
    with pytest.raises(FrontendError, match=message.replace("(", r"\(").replace(")", r"\)")):
        parse_ttir(text, "k")


SIBLINGS = '''module {
  tt.func public @k(%c: i1, %t: tensor<4xf32>) {
    scf.if %c {
      %a = tt.reshape %t allow_reorder : tensor<4xf32> -> tensor<4xf32>
      %s = "tt.reduce"(%a) <{axis = 0 : i32}> ({
      ^bb0(%u: f32, %v: f32):
        %w = arith.addf %u, %v : f32
        tt.reduce.return %w : f32
      }) : (tensor<4xf32>) -> f32
      scf.yield
    }
    scf.if %c {
      %s = "tt.reduce"(%t) <{axis = 0 : i32}> ({
      ^bb0(%u: f32, %a: f32):
        %w = arith.addf %u, %a : f32
        tt.reduce.return %w : f32
      }) : (tensor<4xf32>) -> f32
      scf.yield
    }
    tt.return
  }
}
'''


def test_a_names_uses_are_looked_for_where_it_is_visible():
    # Triton prints the same names in sibling regions (an unrolled tl.static_range's bodies): the
    # reshape's %a is used by its reduce only, not by the other body's combine argument %a
    from tilecheck.ir.triton.builder import Lowering

    func, locs = parse_ttir(SIBLINGS, "k")
    lowering = Lowering(func, locs, [])
    reshape = next(op for op in lowering.all_ops() if op.name == "tt.reshape")
    users = [op.name for op in lowering.scope_of(reshape) if op is not reshape and "%a" in value_refs(op.rest)]
    assert users == ["tt.reduce"], users
