"""How few proofs a suite could pay if proofs spanned tile shapes and constants (issue 51).

    python scripts/tilegym_skeletons.py TILEGYM_SRC CAPTURE.pkl

Every captured launch compiled to Tile IR, its text compared per kernel at three levels of
abstraction: as compiled (names and locations dropped); with float types, float casts and float
constants erased and tile shapes made symbolic (a proof over symbolic tile shapes); and with every
integer literal erased as well (tile shapes and integer constants lifted into symbols). The count
of distinct texts at a level is the fewest proofs a scheme that abstracts that much would pay;
what stays apart at the last level differs in structure (a flag that adds or removes ops).
A measurement, not a verifier: textual, so an upper bound on what merges.
"""
from __future__ import annotations

import collections
import re
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "scripts"))

from tilecheck.ir.cutile import module_for  # noqa: E402
from tilegym_records import compiled_records, kernel_of  # noqa: E402

FLOATS = re.compile(r"(bf16|f16|f32|f64|tf32|f8E4M3FN|f8E5M2)")


def _levels(text: str) -> tuple[str, str, str]:
    text = re.sub(r"#loc\d*", "", re.sub(r"loc\([^)]*\)", "", text))
    compiled = re.sub(r"entry @\w+", "entry @K", text)
    floats = FLOATS.sub("F", compiled)
    floats = "\n".join(line for line in floats.splitlines() if " ftof " not in line and "constant <F:" not in line)
    floats = re.sub(r"%[\w.#]+", "%v", re.sub(r"0x[0-9A-Fa-f]+", "H", floats))  # a dropped cast renumbers
    shapes = re.sub(r"tile<(\d+x)+", "tile<S", floats)
    return compiled, shapes, re.sub(r"-?\d+", "N", shapes)


def main() -> None:
    sys.path.insert(0, sys.argv[1] + "/src")
    records = compiled_records(sys.argv[2], first_only=False)
    kernels: dict[tuple[str, str], object] = {}
    seen = [collections.defaultdict(set) for _ in range(3)]
    for r in records:
        key = (r["module"], r["kernel_name"])
        if key not in kernels:
            kernels[key] = kernel_of(r)
        module, _ = module_for(kernels[key], tuple(r["args"]))
        for level, text in zip(seen, _levels(str(module))):
            level[key].add(text)
    counts = [sum(map(len, level.values())) for level in seen]
    print(f"{len(records)} launches of {len(kernels)} kernels: distinct Tile IR {counts[0]}; "
          f"float types erased and tile shapes symbolic {counts[1]}; every integer literal too {counts[2]} "
          f"({counts[2] / len(kernels):.2f} per kernel)")
    most = sorted(((len(v), k[1]) for k, v in seen[2].items()), reverse=True)[:8]
    print("most variants at the last level: " + ", ".join(f"{name} {n}" for n, name in most))


if __name__ == "__main__":
    main()
