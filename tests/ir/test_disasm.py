"""Cross-check against NVIDIA's disassembler, where the optional toolkit is installed.

``pip install -e ".[disasm]"`` brings ``tileirdisasm`` (cuda-tile[tileiras], ~200 MB of wheels).
Without it these tests skip; the recorded outputs in tests/ir/data keep the check in CI.
"""
import importlib.util
import shutil
import subprocess
from pathlib import Path

import pytest

from tests.ir.test_text import _structure
from tilecheck import ir


def _disasm() -> str | None:
    found = shutil.which("tileirdisasm")
    if found:
        return found
    spec = importlib.util.find_spec("nvidia")
    for root in (spec.submodule_search_locations or []) if spec else []:
        candidate = Path(root) / "cu13" / "bin" / "tileirdisasm"
        if candidate.exists():
            return str(candidate)
    return None


DISASM = _disasm()
pytestmark = [pytest.mark.disasm,
              pytest.mark.skipif(DISASM is None, reason="tileirdisasm not installed (extra: disasm)")]


@pytest.mark.parametrize("family, kernel", [("elementwise", "vector_add_gather"), ("gemm", "matmul"),
                                            ("norms", "layer_norm_bwd"), ("attention", "flash_attention_fwd")])
def test_our_reader_agrees_with_tileirdisasm(family, kernel, compiled, tmp_path):
    result = compiled(family, kernel)
    path = tmp_path / "k.tilebc"
    path.write_bytes(result.bytecode)
    text = subprocess.run([DISASM, "-g", str(path)], capture_output=True, text=True, check=True).stdout
    assert _structure(ir.parse(text)) == _structure(result.module)
