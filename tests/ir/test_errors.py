"""Bad input: malformed text and bytecode give the project's own errors, never a traceback."""
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.tiers import examples
from tilecheck import ir
from tilecheck.ir.bytecode.reader import read_bytecode

DATA = Path(__file__).parent / "data"
SAMPLES = [(DATA / n).read_text() for n in ("vector_add.tileir", "layer_norm_bwd.tileir",
                                            "branch_on_bid.tileir", "softmax.tileir")]


def test_parse_error_has_line_column_and_caret():
    text = "entry @k(%a: tile<i32>) {\n  %0 = addi %a, %b : tile<i32>\n  return\n}\n"
    with pytest.raises(ir.TileIRParseError) as info:
        ir.parse(text, "k.tileir")
    err = info.value
    assert (err.line, err.col) == (2, 17)
    assert "undefined value %b" in str(err)
    assert "k.tileir:2:17" in str(err) and "\n  " + " " * 16 + "^" in str(err)


@pytest.mark.parametrize("text, message", [
    ("entry @k() {\n  %0 = make_token : token\n", "missing '}'"),
    ("entry @k(%a: tile<i32>) {\n  %0 = addi %a, %a : tile<4xq7>\n}\n", "unknown type 'q7'"),
    ("entry @k(%a: tile<i32>) {\n  %0 = cmpi sideways %a, %a, signed : tile<i32> -> tile<i1>\n}\n",
     "not a predicate"),
    ("entry @k(%a: tile<i32>) {\n  %0, %1 = addi %a, %a : tile<i32>\n}\n", "has 1 results, 2 named"),
    ("entry @k(%a: tile<i32>, %a: tile<i32>) {\n}\n", "defined twice"),
    ("garbage", "expected 'entry' or 'func'"),
    ("", "no entry or function"),
])
def test_malformed_text_messages(text, message):
    with pytest.raises(ir.TileIRParseError, match=message):
        ir.parse(text)


_NOISE = st.sampled_from(list("%@#<>()[]{},:=-x?\n ") + ["tile", "token", "->", "%0", "0x", "loc(",
                                                          "for", "if", "}", "\"", "1", "f32"])


@settings(max_examples=examples(300), deadline=None, derandomize=True,
          suppress_health_check=[HealthCheck.too_slow])
@given(sample=st.sampled_from(SAMPLES), data=st.data())
def test_mutated_text_parses_or_raises_parse_error(sample, data):
    text = sample
    for _ in range(data.draw(st.integers(1, 3))):
        pos = data.draw(st.integers(0, len(text)))
        action = data.draw(st.sampled_from(["delete", "insert", "replace", "duplicate"]))
        width = data.draw(st.integers(1, 12))
        if action == "delete":
            text = text[:pos] + text[pos + width:]
        elif action == "insert":
            text = text[:pos] + data.draw(_NOISE) + text[pos:]
        elif action == "replace":
            text = text[:pos] + data.draw(_NOISE) + text[pos + width:]
        else:
            text = text[:pos] + text[pos:pos + width] + text[pos:]
    try:
        module = ir.parse(text)
    except ir.TileIRParseError as err:
        assert err.line >= 1 and err.col >= 1
        return
    # whatever parsed must print and re-parse to the same text
    printed = module.to_text()
    assert ir.parse(printed).to_text() == printed


def _bytecode(compiled=None):
    from tests.conftest import _compiled

    return _compiled("norms", "layer_norm_bwd").bytecode


def test_bytecode_bad_magic_and_version(compiled):
    data = _bytecode(compiled)
    with pytest.raises(ir.BytecodeError, match="bad magic"):
        read_bytecode(b"\x7fNotTile" + data[8:])
    with pytest.raises(ir.BytecodeError, match="version 9.9 is not supported"):
        read_bytecode(data[:8] + bytes([9, 9]) + data[10:])


@settings(max_examples=examples(200), deadline=None, derandomize=True)
@given(data=st.data())
def test_corrupted_bytecode_raises_bytecode_error(data):
    raw = bytearray(_bytecode())
    if data.draw(st.booleans()):
        raw = raw[:data.draw(st.integers(0, len(raw) - 1))]
    else:
        for _ in range(data.draw(st.integers(1, 4))):
            raw[data.draw(st.integers(10, len(raw) - 1))] = data.draw(st.integers(0, 255))
    try:
        read_bytecode(bytes(raw))
    except ir.BytecodeError as err:
        assert "byte" in str(err) and err.section
