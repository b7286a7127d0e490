"""No vacuous proofs: a case that breaks the kernel's own assume ops is not 'verified'."""
import numpy as np

import tilecheck
from tests.interp import kernels as K


def test_a_reversed_output_breaks_the_stride_assumption_and_is_not_verified():
    x, y = np.arange(64, dtype=np.float32), np.zeros(64, np.float32)
    report = tilecheck.verify(K.xor_partner_halved, (x, y[::-1], 3, 8), (8, 1, 1))
    assert report.status == "unknown"
    (f,) = report.findings
    assert f.kind == "assumption-violated" and not f.is_race
    assert "y.strides[0] = -1" in f.message and f.loc.line
    assert any("break the kernel's own assumptions" in r for r in report.reasons)


def test_the_same_kernel_with_a_forward_output_has_its_race_found():
    x, y = np.arange(64, dtype=np.float32), np.zeros(64, np.float32)
    assert tilecheck.verify(K.xor_partner_halved, (x, y, 3, 8), (8, 1, 1)).status == "race"
