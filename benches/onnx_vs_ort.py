"""Vigil's plain run of the onnx package's light models against
onnxruntime, both on one thread, same input, alternating rep by rep.

    /tmp/venv/bin/pip install onnx onnxruntime numpy
    cargo build --release
    /tmp/venv/bin/python benches/onnx_vs_ort.py [--vigil target/release/vigil] [--reps 7] [MODEL...]
    /tmp/venv/bin/python benches/onnx_vs_ort.py --pools [--batch 1] [--reps 101]

MODEL is a light model's short name (resnet50, vgg19, ...; default all nine).
`--pools` times single-op models instead, `--inner` warm runs a side per
round (Vigil's in one `vigil bench` process): the CNN pools (max and average,
3x3 stride 2 pad 1, 2x2 stride 2, 3x3 stride 1 pad 1) on a [N, 64, 112, 112]
f32 input (ResNet-50's stem output at batch N), written with onnx.helper
into a temporary directory as ONNX test cases (random input, onnxruntime's
output as the expected one), so both sides compute the same thing.
Each round times one Vigil rep (`vigil bench --modes plain --reps 1
--format json`, with RAYON_NUM_THREADS=1 so that Vigil's intra-op
parallelism is off; the figure is `runner::check` of the loaded case, see
docs/bench-format.md) and then one onnxruntime `run` (intra_op_num_threads=1,
inter_op_num_threads=1, sequential execution, all graph optimizations; the
session is built once, outside the timing). Both are fed ONNX's dummy input
for light models, `arange(n) / n`, which is what `vigil run` feeds them.
Prints medians, the ratio Vigil / ort, and the load average around the run.

Not part of `cargo test`. Without onnxruntime it prints one skip line and
exits 0.
"""

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time

try:
    import numpy as np
    import onnx
    import onnxruntime as ort
except ImportError as e:
    print(f"skip: onnx_vs_ort needs onnx, onnxruntime and numpy ({e.name} is not installed)")
    sys.exit(0)

LIGHT = os.path.join(os.path.dirname(onnx.__file__), "backend", "test", "data", "light")


def dummy_feeds(model):
    """ONNX's light-model input: arange(n)/n for every non-initializer input."""
    inits = {i.name for i in model.graph.initializer}
    feeds = {}
    for x in model.graph.input:
        if x.name in inits:
            continue
        shape = tuple(d.dim_value if d.HasField("dim_value") else 1 for d in x.type.tensor_type.shape.dim)
        n = int(np.prod(shape))
        feeds[x.name] = (np.arange(n).reshape(shape) / n).astype(np.float32)
    return feeds


def ort_session(path):
    so = ort.SessionOptions()
    so.intra_op_num_threads = 1
    so.inter_op_num_threads = 1
    so.execution_mode = ort.ExecutionMode.ORT_SEQUENTIAL
    so.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
    return ort.InferenceSession(path, so, providers=["CPUExecutionProvider"])


POOLS = [
    ("MaxPool", 3, 2, 1),
    ("MaxPool", 2, 2, 0),
    ("MaxPool", 3, 1, 1),
    ("AveragePool", 2, 2, 0),
    ("AveragePool", 3, 2, 1),
    ("AveragePool", 3, 1, 1),
]


def pool_case(root, op, k, s, p, batch):
    """One pool as an ONNX test case directory under `root`: model.onnx and
    test_data_set_0 (the input and onnxruntime's output). Returns the
    directory, the onnxruntime session and its feeds."""
    from onnx import TensorProto, helper, numpy_helper

    shape = [batch, 64, 112, 112]
    node = helper.make_node(op, ["x"], ["y"], kernel_shape=[k, k], strides=[s, s], pads=[p] * 4)
    graph = helper.make_graph(
        [node],
        "pool",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, shape)],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)],
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])
    case = os.path.join(root, f"{op.lower()}_{k}x{k}_s{s}_p{p}")
    data = os.path.join(case, "test_data_set_0")
    os.makedirs(data)
    path = os.path.join(case, "model.onnx")
    onnx.save(model, path)
    x = np.random.default_rng(0).standard_normal(shape).astype(np.float32)
    sess = ort_session(path)
    feeds = {"x": x}
    (y,) = sess.run(None, feeds)
    for name, arr in [("input_0.pb", x), ("output_0.pb", y)]:
        with open(os.path.join(data, name), "wb") as f:
            f.write(numpy_helper.from_array(arr).SerializeToString())
    return case, sess, feeds


def vigil_reps(vigil, path, inner):
    """`inner` timed plain reps of Vigil on `path`, in ms, after its own
    warm-up run in the same process."""
    env = dict(os.environ, RAYON_NUM_THREADS="1")
    r = subprocess.run(
        [vigil, "bench", path, "--modes", "plain", "--reps", str(inner), "--format", "json"],
        capture_output=True,
        text=True,
        env=env,
        check=False,
    )
    if r.returncode != 0:
        raise SystemExit(f"vigil bench {path} exited {r.returncode}: {r.stderr.strip() or r.stdout[:300]}")
    res = json.loads(r.stdout)["cases"][0]["results"][0]
    return res["times_ms"]


def load():
    try:
        with open("/proc/loadavg") as f:
            return float(f.read().split()[0])
    except OSError:
        return float("nan")


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--vigil", default="target/release/vigil")
    ap.add_argument("--reps", type=int, default=7)
    ap.add_argument("--pools", action="store_true", help="time the CNN pools instead of the light models")
    ap.add_argument("--batch", type=int, default=1, help="the pools' batch (with --pools)")
    ap.add_argument("--inner", type=int, default=5, help="timed runs per side per round (with --pools)")
    ap.add_argument("models", nargs="*")
    a = ap.parse_args()
    if not os.path.exists(a.vigil):
        raise SystemExit(f"no vigil binary at {a.vigil} (cargo build --release)")
    if a.pools:
        return pools(a)
    names = a.models or sorted(f[6:-5] for f in os.listdir(LIGHT) if f.startswith("light_") and f.endswith(".onnx"))
    def cases():
        for name in names:
            path = os.path.join(LIGHT, f"light_{name}.onnx")
            if not os.path.exists(path):
                raise SystemExit(f"no light model '{name}' in {LIGHT}")
            yield name, path, ort_session(path), dummy_feeds(onnx.load(path))

    compare(a, cases(), 1, "model", 1, f"{a.reps} reps each")


def compare(a, cases, inner, what, digits, how):
    """Times each (name, path, session, feeds) of `cases` with
    [`alternate`], then prints the table and the conditions."""
    before = load()
    rows = []
    for name, path, sess, feeds in cases:
        v, o = alternate(a.vigil, path, sess, feeds, a.reps, inner)
        rows.append((name, v, o))
        print(f"{name}: vigil {v:.{digits}f} ms, ort {o:.{digits}f} ms, {v / o:.2f}x", file=sys.stderr, flush=True)
    print(f"| {what} | Vigil plain ms | onnxruntime ms | Vigil / ort |\n|---|---|---|---|")
    for name, v, o in rows:
        print(f"| {name} | {v:.{digits}f} | {o:.{digits}f} | {v / o:.2f}x |")
    print(
        f"\n{how}, alternating, medians; one thread each (ort {ort.__version__}); "
        f"load average {before:.2f} -> {load():.2f}"
    )


def alternate(vigil, path, sess, feeds, reps, inner):
    """Medians in ms of `reps` rounds, each `inner` Vigil reps (after a
    warm-up in its process) then `inner` onnxruntime runs (after a warm-up
    run too, when `inner` > 1: Vigil's process start evicts the caches,
    which a run of a few hundred microseconds would otherwise pay)."""
    sess.run(None, feeds)  # warm-up
    vt, ot = [], []
    for _ in range(reps):
        vt.extend(vigil_reps(vigil, path, inner))
        if inner > 1:
            sess.run(None, feeds)
        for _ in range(inner):
            t = time.perf_counter()
            sess.run(None, feeds)
            ot.append((time.perf_counter() - t) * 1e3)
    return statistics.median(vt), statistics.median(ot)


def pools(a):
    with tempfile.TemporaryDirectory() as root:

        def cases():
            for op, k, s, p in POOLS:
                case, sess, feeds = pool_case(root, op, k, s, p, a.batch)
                yield f"{op} {k}x{k}/{s} pad {p}", case, sess, feeds

        what = f"pool, [{a.batch}, 64, 112, 112] f32"
        compare(a, cases(), a.inner, what, 3, f"{a.reps} rounds of {a.inner} warm runs each")


if __name__ == "__main__":
    main()
