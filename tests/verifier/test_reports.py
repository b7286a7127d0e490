"""How findings read (issue 14): scalars by parameter name; aliasing once per pair, with the bytes."""
import json

import cuda.tile as ct
import numpy as np

import tilecheck
from corpus.kernels import decode


@ct.kernel
def two_outputs(x, y, z):
    bid = ct.bid(0)
    t = ct.load(x, index=(bid,), shape=(4,))
    ct.store(y, index=(bid,), tile=t)
    ct.store(z, index=(bid,), tile=t)


def test_witness_names_scalars_by_parameter():
    kernel = decode.kv_cache_append_per_q_head
    case = tilecheck.cases_of(kernel)[0]
    report = tilecheck.verify(kernel, case.make_args(), case.grid)
    w = report.races[0].witness
    assert list(w.scalars) == ["pos"] and not any(k.startswith("arg") for k in w.scalars)
    assert f"pos={w.scalars['pos']}" in str(report)
    assert json.loads(report.to_json())["findings"][0]["witness"]["scalars"] == {"pos": w.scalars["pos"]}


def test_two_written_arrays_that_overlap_are_one_finding_with_both_names_and_the_bytes():
    buf = np.zeros(20, np.float32)
    report = tilecheck.verify(two_outputs, (np.ones(16, np.float32), buf[0:16], buf[4:20]), (4, 1, 1))
    aliasing = [f for f in report.findings if f.kind == "aliasing"]
    assert len(aliasing) == 1
    f = aliasing[0]
    assert f.message == ("'y' is written and overlaps argument 'z' (also written) in memory: "
                         "bytes [16, 64) of 'y' are bytes [0, 48) of 'z'")
    text = str(f)
    assert "witness: bytes [16, 64) of 'y' are bytes [0, 48) of 'z' (48 bytes); y (16), z (16)" in text
    assert "block ()" not in text and "grid ()" not in text and "None" not in text
    assert f.witness.overlap == {"y": (16, 64), "z": (0, 48)}


def test_a_read_argument_overlapping_a_written_one_is_one_finding():
    x = np.ones(16, np.float32)
    report = tilecheck.verify(two_outputs, (x, x, np.zeros(16, np.float32)), (4, 1, 1))
    [f] = [f for f in report.findings if f.kind == "aliasing"]
    assert f.message.startswith("'y' is written and overlaps argument 'x' in memory: bytes [0, 64) of 'y'")


def test_self_overlap_names_both_elements():
    zero = np.broadcast_to(np.zeros(1, np.float32), (16,))
    report = tilecheck.verify(two_outputs, (np.ones(16, np.float32), zero, np.zeros(16, np.float32)), (4, 1, 1))
    [f] = [f for f in report.findings if f.kind == "aliasing"]
    assert "witness: y[0] and y[1] are the same bytes [0, 4) of 'y'; y (16)" in str(f)
