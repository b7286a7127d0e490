"""Fuzzing both Tile IR readers (issue 14): whatever the input, the text parser and the bytecode
reader return a Module or raise a TilecheckError (with a location / section and offset), never
anything else; what they return can be printed and summarised."""
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.cli import fuzz_inputs as F
from tests.tiers import examples
from tilecheck import ir
from tilecheck.errors import TilecheckError
from tilecheck.ir.summary import summarize

FUZZ = settings(max_examples=examples(250), deadline=None, derandomize=True, database=None,
                suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])


def _read(read, data):
    try:
        module = read(data)
    except TilecheckError as exc:
        assert str(exc)
        return None
    module.to_text()
    summarize(module)
    return module


@FUZZ
@given(text=st.one_of(F.tileir_text(), st.text(max_size=300)))
def test_text_parser_raises_only_tilecheck_errors(text):
    _read(lambda t: ir.parse(t, "fuzz.tileir"), text)


@FUZZ
@given(data=F.tileir_bytes())
def test_bytecode_reader_raises_only_tilecheck_errors(data):
    _read(ir.read_bytecode, data)


def test_zero_alignment_is_a_bytecode_error_not_a_crash():
    import pytest

    seed = bytearray((F.IR_DATA / "vector_add.tilebc").read_bytes())
    # the first section's id with the 'aligned' flag, then its length, then an alignment of 0
    header = 8 + 4
    seed[header:] = bytes([0x80 | 0x01, 0x01, 0x00]) + bytes(seed[header + 3:])
    with pytest.raises(ir.BytecodeError, match="alignment 0"):
        ir.read_bytecode(bytes(seed))


def test_deep_nesting_is_an_error_not_a_recursion_error():
    import pytest

    text = "entry @k() {\n  %0 = make_token : " + "tile<" * 5000 + "f32" + ">" * 5000 + "\n}\n"
    with pytest.raises(ir.TileIRError, match="nested too deeply"):
        ir.parse(text, "deep.tileir")
