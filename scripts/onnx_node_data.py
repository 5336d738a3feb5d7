"""Writes the onnx package's backend node tests in the standard backend
layout, from the generators the wheel ships (it ships no
`backend/test/data/node/`):

    OUT_DIR/node/<name>/model.onnx
    OUT_DIR/node/<name>/test_data_set_<i>/input_<j>.pb, output_<j>.pb

Run: python3 scripts/onnx_node_data.py OUT_DIR   (needs onnx and numpy)

Sequence-, map- and optional-typed values have no TensorProto form: such a
test is still written (its model is what `vigil run` refuses, with the
reason) but its data sets are left out, and the count is printed.

Tolerances: `vigil run` compares ONNX tests with ONNX's defaults (rtol 1e-3,
atol 1e-7). A case carrying other values gets them in
`<name>/tolerance.json` ({"rtol": .., "atol": ..}) and is counted, so a
reader can tell.
"""
import json, os, sys, warnings

import numpy as np
from onnx import TensorProto, numpy_helper
from onnx.backend.test.case.node import collect_testcases

DEFAULT_RTOL, DEFAULT_ATOL = 1e-3, 1e-7


def tensor_kinds(values):
    """The value infos' type kinds ('tensor_type', 'sequence_type', ...)."""
    return {v.type.WhichOneof("value") for v in values}


def write_pb(path, value, name):
    """An array, or a TensorProto as some generators give (float8, int4)."""
    if not isinstance(value, TensorProto):
        assert isinstance(value, (np.ndarray, np.generic)), f"{path}: {type(value).__name__}"
        value = numpy_helper.from_array(np.asarray(value), name)
    with open(path, "wb") as f:
        f.write(value.SerializeToString())


def main():
    if len(sys.argv) != 2:
        sys.exit("usage: onnx_node_data.py OUT_DIR")
    root = os.path.join(sys.argv[1], "node")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        cases = collect_testcases(None)
    written = non_tensor = other_tol = 0
    for case in cases:
        d = os.path.join(root, case.name)
        os.makedirs(d, exist_ok=True)
        with open(os.path.join(d, "model.onnx"), "wb") as f:
            f.write(case.model.SerializeToString())
        g = case.model.graph
        kinds = tensor_kinds(g.input) | tensor_kinds(g.output)
        if kinds - {"tensor_type"}:
            non_tensor += 1
            continue
        rtol, atol = getattr(case, "rtol", DEFAULT_RTOL), getattr(case, "atol", DEFAULT_ATOL)
        if (rtol, atol) != (DEFAULT_RTOL, DEFAULT_ATOL):
            other_tol += 1
            with open(os.path.join(d, "tolerance.json"), "w") as f:
                json.dump({"rtol": rtol, "atol": atol}, f)
        for i, (inputs, outputs) in enumerate(case.data_sets):
            ds = os.path.join(d, f"test_data_set_{i}")
            os.makedirs(ds, exist_ok=True)
            for kind, values, infos in (("input", inputs, g.input), ("output", outputs, g.output)):
                for j, v in enumerate(values):
                    write_pb(os.path.join(ds, f"{kind}_{j}.pb"), v, infos[j].name)
        written += 1
    print(
        f"{len(cases)} node tests -> {root}: {written} with data sets, "
        f"{non_tensor} skipped (sequence/map/optional-typed inputs or outputs: model only), "
        f"{other_tol} with non-default tolerances (tolerance.json)"
    )


if __name__ == "__main__":
    main()
