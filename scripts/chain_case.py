"""Writes the 16-op elementwise chain of `benches/debugmode.rs`
(`chain16_8m`) as a case directory, for timing DebugMode against the plain
run the way a user would:

    python3 scripts/chain_case.py OUT_DIR [N]      # N f32 elements, 8M by default
    vigil bench OUT_DIR --modes plain,debug --reps 9

Needs numpy.
"""
import json
import os
import sys

import numpy as np

# (op, second operand): none, the constant c, the input x, or the running
# value itself; the same chain as `workloads::chain16`.
CHAIN = [
    ("mul", "c"), ("exp", None), ("add", "c"), ("log", None),
    ("tanh", None), ("add", "x"), ("sigmoid", None), ("mul", "self"),
    ("sqrt", None), ("sub", "x"), ("abs", None), ("mul", "c"),
    ("exp", None), ("add", "c"), ("log", None), ("tanh", None),
]


def main():
    if len(sys.argv) not in (2, 3):
        sys.exit(__doc__)
    out = sys.argv[1]
    n = int(sys.argv[2]) if len(sys.argv) == 3 else 8 * 1024 * 1024
    os.makedirs(os.path.join(out, "inputs"), exist_ok=True)
    nodes, prev = [], "x"
    for i, (op, with_) in enumerate(CHAIN):
        inputs = [prev] + ([] if with_ is None else [prev if with_ == "self" else with_])
        name = "y" if i == len(CHAIN) - 1 else f"t{i}"
        nodes.append({"name": f"n{i}_{op}", "op": op, "inputs": inputs, "outputs": [name]})
        prev = name
    graph = {
        "format": "vigil-graph/1",
        "name": "chain16_math",
        "inputs": [{"name": "x", "dtype": "f32", "shape": [n]}],
        "constants": [{"name": "c", "dtype": "f32", "shape": [1], "data": [0.5]}],
        "nodes": nodes,
        "outputs": ["y"],
    }
    with open(os.path.join(out, "graph.json"), "w") as f:
        json.dump(graph, f, indent=1)
    x = np.random.default_rng(7).uniform(0.0, 1.0, n).astype(np.float32)
    np.save(os.path.join(out, "inputs", "x.npy"), x)


if __name__ == "__main__":
    main()
