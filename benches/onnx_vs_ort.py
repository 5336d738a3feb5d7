"""Vigil's plain run of the onnx package's light models, of exported real
models, or of single pools against onnxruntime, same input, alternating
rep by rep.

    /tmp/venv/bin/pip install onnx onnxruntime numpy
    cargo build --release
    /tmp/venv/bin/python benches/onnx_vs_ort.py [--vigil target/release/vigil] [--reps 7] [MODEL...]
    /tmp/venv/bin/python benches/onnx_vs_ort.py --real [--threads 1,2] [--reps 5] [--nodes 20] DIR...
    /tmp/venv/bin/python benches/onnx_vs_ort.py --pools [--batch 1] [--reps 101]
    /tmp/venv/bin/python benches/onnx_vs_ort.py --convs [--threads 1,2] [--reps 7]

MODEL is a light model's short name (resnet50, vgg19, ...; default all nine).
`--real` times exported models instead: each DIR holds `model.onnx` (with
its external data) and `test_data_set_0/` (scripts/export_models.py writes
them), fed that data set's inputs on both sides, at each thread count of
`--threads` (Vigil's rayon pool via RAYON_NUM_THREADS, onnxruntime's
intra-op threads). After the timing, `--profiles` (default 5) `vigil exec
--profile --warmup 5` runs per model and thread count give the per-op
breakdown (time per Vigil op name, the median over the runs: one run's
profile on a shared machine can be several times the usual) and the GFLOP/s
of the matmuls (MatMul, Gemm) and convs (Conv): their multiply-adds,
counted from ONNX shape inference on the data set's input shapes, times
two, over the time of Vigil's `matmul` and `conv` nodes. `--nodes K`
adds, per model and thread count, the K nodes Vigil spends most time in
against onnxruntime's own profiler (`--profiles` runs each side, medians),
matched by node name, or where onnxruntime fused a node with the
activation or add after it (its NCHWc convs), by the fused chain's output
name; the sums of the matched nodes come first.
`--pools` times single-op models instead, `--inner` warm runs a side per
round (Vigil's in one `vigil bench` process): the CNN pools (max and average,
3x3 stride 2 pad 1, 2x2 stride 2, 3x3 stride 1 pad 1) on a [N, 64, 112, 112]
f32 input (ResNet-50's stem output at batch N), written with onnx.helper
into a temporary directory as ONNX test cases (random input, onnxruntime's
output as the expected one), so both sides compute the same thing.
`--convs` times single convs the same way, at each thread count of
`--threads`: the shapes of resnet18's dense convs and of mobilenet's and
efficientnet's depthwise ones (batch 1, f32, no bias), with GFLOP/s.
Each round times one Vigil rep (`vigil bench --modes plain --reps 1
--warmup 5 --format json`, with RAYON_NUM_THREADS=1 so that Vigil's intra-op
parallelism is off; the figure is the run of the graph prepared once, the
in-place pass and the executor's plan left out as onnxruntime's session
building is, see docs/bench-format.md) and then one onnxruntime `run` (intra_op_num_threads=1,
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


def ort_session(path, threads=1, profiling=False):
    so = ort.SessionOptions()
    so.intra_op_num_threads = threads
    so.inter_op_num_threads = 1
    so.execution_mode = ort.ExecutionMode.ORT_SEQUENTIAL
    so.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
    so.enable_profiling = profiling
    return ort.InferenceSession(path, so, providers=["CPUExecutionProvider"])


POOLS = [
    ("MaxPool", 3, 2, 1),
    ("MaxPool", 2, 2, 0),
    ("MaxPool", 3, 1, 1),
    ("AveragePool", 2, 2, 0),
    ("AveragePool", 3, 2, 1),
    ("AveragePool", 3, 1, 1),
]


# (name, C, H=W, M, kernel, stride, group): resnet18's dense convs, then
# mobilenet_v3_small's and efficientnet_b0's depthwise ones (group = C).
CONVS = [
    ("resnet18 stem 3x224 7x7/2", 3, 224, 64, 7, 2, 1),
    ("resnet18 64x56 3x3/1", 64, 56, 64, 3, 1, 1),
    ("resnet18 64x56 3x3/2 ->128", 64, 56, 128, 3, 2, 1),
    ("resnet18 128x28 3x3/1", 128, 28, 128, 3, 1, 1),
    ("resnet18 256x14 3x3/1", 256, 14, 256, 3, 1, 1),
    ("resnet18 512x7 3x3/1", 512, 7, 512, 3, 1, 1),
    ("resnet18 64x56 1x1/2 ->128", 64, 56, 128, 1, 2, 1),
    ("pointwise 96x56 1x1 ->24", 96, 56, 24, 1, 1, 1),
    ("depthwise 96x112 3x3/2", 96, 112, 96, 3, 2, 96),
    ("depthwise 144x56 3x3/1", 144, 56, 144, 3, 1, 144),
    ("depthwise 240x28 5x5/1", 240, 28, 240, 5, 1, 240),
    ("depthwise 72x56 3x3/2", 72, 56, 72, 3, 2, 72),
    ("depthwise 576x7 5x5/1", 576, 7, 576, 5, 1, 576),
    ("depthwise 1152x7 5x5/1", 1152, 7, 1152, 5, 1, 1152),
    ("depthwise 672x14 5x5/1", 672, 14, 672, 5, 1, 672),
    ("depthwise 480x14 3x3/1", 480, 14, 480, 3, 1, 480),
    ("pointwise 1152x7 1x1 ->192", 1152, 7, 192, 1, 1, 1),
    ("pointwise 112x14 1x1 ->672", 112, 14, 672, 1, 1, 1),
]


def conv_case(root, name, c, hw, m, k, s, group):
    """One conv (pads k // 2) as an ONNX test case under `root`, as
    [`pool_case`]; also returns its GFLOP count."""
    from onnx import TensorProto, helper, numpy_helper

    rng = np.random.default_rng(0)
    p = k // 2
    w = rng.standard_normal([m, c // group, k, k]).astype(np.float32) * 0.1
    node = helper.make_node("Conv", ["x", "w"], ["y"], kernel_shape=[k, k], strides=[s, s], pads=[p] * 4, group=group)
    graph = helper.make_graph(
        [node],
        "conv",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, c, hw, hw])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)],
        [numpy_helper.from_array(w, "w")],
    )
    x = rng.standard_normal([1, c, hw, hw]).astype(np.float32)
    case, path, feeds, y = save_case(root, name.replace(" ", "_").replace("/", "s").replace(">", ""), graph, x)
    gflop = 2 * y.size * (c // group) * k * k / 1e9
    return case, path, feeds, gflop


def convs(a):
    threads = [int(t) for t in a.threads.split(",")]
    before = load()
    rows = []
    with tempfile.TemporaryDirectory() as root:
        for name, c, hw, m, k, s, g in CONVS:
            case, path, feeds, gflop = conv_case(root, name, c, hw, m, k, s, g)
            for t in threads:
                v, o = alternate(a.vigil, case, ort_session(path, t), feeds, a.reps, a.inner, t)
                rows.append((name, t, v, o, gflop))
                print(f"{name}, {t} thread(s): vigil {v:.3f} ms, ort {o:.3f} ms, {v / o:.2f}x", file=sys.stderr, flush=True)
    print("| conv, [1, C, H, W] f32 | threads | Vigil ms (GFLOP/s) | onnxruntime ms (GFLOP/s) | Vigil / ort |")
    print("|---|---|---|---|---|")
    for name, t, v, o, gf in rows:
        print(f"| {name} | {t} | {v:.3f} ({gf / v * 1e3:.0f}) | {o:.3f} ({gf / o * 1e3:.0f}) | {v / o:.2f}x |")
    print(
        f"\n{a.reps} rounds of {a.inner} warm runs each, alternating, medians; ort {ort.__version__}, "
        f"intra-op threads = Vigil's RAYON_NUM_THREADS; load average {before:.2f} -> {load():.2f}"
    )


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
    x = np.random.default_rng(0).standard_normal(shape).astype(np.float32)
    case, path, feeds, _ = save_case(root, f"{op.lower()}_{k}x{k}_s{s}_p{p}", graph, x)
    return case, ort_session(path), feeds


def save_case(root, name, graph, x):
    """`graph` (opset 13) as an ONNX test case directory `root/name`:
    model.onnx and test_data_set_0 with input `x` and onnxruntime's output.
    Returns the directory, the model's path, the feeds and the output."""
    from onnx import helper, numpy_helper

    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])
    case = os.path.join(root, name)
    data = os.path.join(case, "test_data_set_0")
    os.makedirs(data)
    path = os.path.join(case, "model.onnx")
    onnx.save(model, path)
    feeds = {"x": x}
    (y,) = ort_session(path).run(None, feeds)
    for f, arr in [("input_0.pb", x), ("output_0.pb", y)]:
        with open(os.path.join(data, f), "wb") as fh:
            fh.write(numpy_helper.from_array(arr).SerializeToString())
    return case, path, feeds, y


# Untimed Vigil rounds before the timed ones: a freshly started Vigil
# process takes a few runs to reach the speed onnxruntime's long-lived
# session runs at (its weights and buffers not yet in cache; see
# docs/bench-format.md), and that start-up is not what is compared here.
VIGIL_WARMUP = 5


# Seconds to wait after onnxruntime's runs before Vigil's process starts.
# onnxruntime's intra-op threads spin for a while after a run, as its pool
# does between runs; started within that time, a 2-thread Vigil run shares
# the 2 cores with a spinning thread (measured: a 240x28x28 5x5 depthwise
# conv 0.45-0.51 ms right after onnxruntime's runs, 0.26 ms 50 ms later).
SETTLE = 0.1


def vigil_reps(vigil, path, inner, threads=1):
    """`inner` timed plain reps of Vigil on `path`, in ms, after
    VIGIL_WARMUP untimed ones in the same process, once onnxruntime's
    threads have settled (SETTLE)."""
    time.sleep(SETTLE)
    env = dict(os.environ, RAYON_NUM_THREADS=str(threads))
    r = subprocess.run(
        [vigil, "bench", path, "--modes", "plain", "--reps", str(inner), "--warmup", str(VIGIL_WARMUP), "--format", "json"],
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
    ap.add_argument("--convs", action="store_true", help="time single convs at real models' shapes instead")
    ap.add_argument("--real", action="store_true", help="time exported models (directories) instead")
    ap.add_argument("--threads", default="1,2", help="thread counts (with --real)")
    ap.add_argument("--batch", type=int, default=1, help="the pools' batch (with --pools)")
    ap.add_argument("--inner", type=int, default=5, help="timed runs per side per round (with --pools)")
    ap.add_argument("--inner-real", type=int, default=3, help="timed runs per side per round (with --real)")
    ap.add_argument("--profiles", type=int, default=5, help="profiled runs whose median gives the per-op breakdown (with --real)")
    ap.add_argument("--nodes", type=int, default=0, help="the slowest Vigil nodes against onnxruntime's profile (with --real)")
    ap.add_argument("models", nargs="*")
    a = ap.parse_args()
    if not os.path.exists(a.vigil):
        raise SystemExit(f"no vigil binary at {a.vigil} (cargo build --release)")
    if a.pools:
        return pools(a)
    if a.convs:
        return convs(a)
    if a.real:
        return real(a)
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


def alternate(vigil, path, sess, feeds, reps, inner, threads=1):
    """Medians in ms of `reps` rounds, each `inner` Vigil reps (after
    VIGIL_WARMUP untimed ones in its process) then `inner` onnxruntime runs (after a warm-up
    run too, when `inner` > 1: Vigil's process start evicts the caches,
    which a run of a few hundred microseconds would otherwise pay)."""
    sess.run(None, feeds)  # warm-up
    vt, ot = [], []
    for _ in range(reps):
        vt.extend(vigil_reps(vigil, path, inner, threads))
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


def data_set_feeds(model_dir, model):
    """The inputs of `test_data_set_0/`, by the graph's input names."""
    from onnx import numpy_helper

    inits = {i.name for i in model.graph.initializer}
    names = [x.name for x in model.graph.input if x.name not in inits]
    feeds = {}
    for k, name in enumerate(names):
        t = onnx.load_tensor(os.path.join(model_dir, "test_data_set_0", f"input_{k}.pb"))
        feeds[name] = numpy_helper.to_array(t)
    return feeds


def macs(model, feeds):
    """Multiply-adds of the model's MatMul/Gemm and Conv nodes, from ONNX
    shape inference with the inputs' shapes ({"matmul": n, "conv": n});
    a node whose shapes stay unknown is left out (counted in "unknown")."""
    m = onnx.ModelProto()
    m.CopyFrom(model)
    for x in m.graph.input:
        if x.name in feeds:
            for d, n in zip(x.type.tensor_type.shape.dim, feeds[x.name].shape):
                d.Clear()
                d.dim_value = n
    m = onnx.shape_inference.infer_shapes(m, data_prop=True)
    shapes = {}
    for v in list(m.graph.value_info) + list(m.graph.input) + list(m.graph.output):
        dims = [d.dim_value if d.HasField("dim_value") else None for d in v.type.tensor_type.shape.dim]
        shapes[v.name] = None if None in dims else dims
    for i in m.graph.initializer:
        shapes[i.name] = list(i.dims)
    out = {"matmul": 0, "conv": 0, "unknown": 0}
    for n in m.graph.node:
        if n.op_type not in ("MatMul", "Gemm", "Conv"):
            continue
        a, w, y = shapes.get(n.input[0]), shapes.get(n.input[1]), shapes.get(n.output[0])
        if a is None or w is None or y is None:
            out["unknown"] += 1
            continue
        if n.op_type == "Conv":
            # Each output element sums C_in / group * prod(kernel) products.
            out["conv"] += int(np.prod(y)) * int(np.prod(w[1:]))
        else:
            # Each output element sums K products (K: a's last axis, or its
            # first when Gemm transposes it).
            trans_a = any(at.name == "transA" and at.i for at in n.attribute)
            k = a[0] if n.op_type == "Gemm" and trans_a else a[-1]
            out["matmul"] += int(np.prod(y)) * k
    return out


def profile(vigil, model_path, work, threads, runs):
    """`runs` warm `vigil exec --profile` runs of the imported case: {op
    name: (median total ms, count)} and the median of the runs' totals."""
    case = os.path.join(work, "case")
    if not os.path.exists(case):
        subprocess.run([vigil, "import", model_path, "--out", case], check=True, capture_output=True)
    env = dict(os.environ, RAYON_NUM_THREADS=str(threads))
    each, nodes = [], {}
    for _ in range(max(runs, 1)):
        out = tempfile.mkdtemp(dir=work)
        trace = os.path.join(out, "trace.json")
        subprocess.run(
            [vigil, "exec", case, "--out", os.path.join(out, "o"), "--profile", trace, "--warmup", "5"],
            check=True,
            capture_output=True,
            env=env,
        )
        by = {}
        with open(trace) as f:
            for e in json.load(f)["traceEvents"]:
                t, c = by.get(e["name"], (0.0, 0))
                by[e["name"]] = (t + e["dur"] / 1e3, c + 1)
                node = e.get("args", {}).get("node")
                if node is not None:
                    nodes.setdefault(node, (e["name"], []))[1].append(e["dur"] / 1e3)
        each.append(by)
    names = {op for by in each for op in by}
    med = {
        op: (
            float(np.median([by.get(op, (0.0, 0))[0] for by in each])),
            max(by.get(op, (0.0, 0))[1] for by in each),
        )
        for op in names
    }
    total = float(np.median([sum(ms for ms, _ in by.values()) for by in each]))
    per_node = {n: (op, float(np.median(ds))) for n, (op, ds) in nodes.items()}
    return med, total, per_node


def ort_nodes(path, feeds, threads, runs):
    """onnxruntime's own profile of `runs` warm runs: {node name: median
    ms}, a name's `_nchwc` suffix (its blocked-layout nodes) dropped."""
    sess = ort_session(path, threads, profiling=True)
    for _ in range(VIGIL_WARMUP + runs):
        sess.run(None, feeds)
    trace = sess.end_profiling()
    with open(trace) as f:
        events = json.load(f)
    os.remove(trace)
    times = {}
    for e in events:
        name = e.get("name", "")
        if e.get("cat") == "Node" and name.endswith("_kernel_time"):
            name = name[: -len("_kernel_time")]
            name = name[: -len("_nchwc")] if name.endswith("_nchwc") else name
            times.setdefault(name, []).append(e["dur"] / 1e3)
    return {n: float(np.median(ds[-runs:])) for n, ds in times.items()}


# onnxruntime folds these into the conv or add before them.
FUSED_AFTER = ("Relu", "Add", "Clip", "HardSigmoid", "HardSwish", "Mul", "Sigmoid")


def node_table(model, vigil_nodes, ort_times, k):
    """Lines comparing the `k` nodes Vigil spends most time in with
    onnxruntime's: by node name, else by the output name of the chain
    onnxruntime fused it into (at most three nodes after it, each the
    sole reader of the one before)."""
    by_name = {n.name: n for n in model.graph.node}
    readers = {}
    for n in model.graph.node:
        for i in n.input:
            readers.setdefault(i, []).append(n)

    def ort_name(name):
        if name in ort_times:
            return name
        node = by_name.get(name)
        if node is None or not node.output:
            return None
        out = node.output[0]
        for _ in range(3):
            if out in ort_times:
                return out
            after = readers.get(out, [])
            if len(after) != 1 or after[0].op_type not in FUSED_AFTER:
                return None
            out = after[0].output[0]
        return out if out in ort_times else None

    rows, taken = [], set()
    for name, (op, ms) in vigil_nodes.items():
        o = ort_name(name)
        o = None if o in taken else o
        if o is not None:
            taken.add(o)
        rows.append((ms, ort_times.get(o) if o else None, name, op))
    vs = sum(ms for ms, o, _, _ in rows if o is not None)
    os_ = sum(o for _, o, _, _ in rows if o is not None)
    lines = [
        f"matched nodes: Vigil {vs:.3g} ms, onnxruntime {os_:.3g} ms"
        + (f" ({vs / os_:.2f}x)" if os_ else "")
        + f"; unmatched: Vigil {sum(ms for ms, o, _, _ in rows if o is None):.3g} ms, "
        f"onnxruntime {sum(ort_times.values()) - os_:.3g} ms"
    ]
    for ms, o, name, op in sorted(rows, key=lambda r: -r[0])[:k]:
        theirs = f"{o:.3f} ms, {ms / o:.2f}x" if o else "unmatched"
        lines.append(f"  {name} ({op}): {ms:.3f} ms against {theirs}")
    return lines


def real(a):
    threads = [int(t) for t in a.threads.split(",")]
    before = load()
    rows, notes = [], []
    with tempfile.TemporaryDirectory() as root:
        for d in a.models:
            name = os.path.basename(os.path.normpath(d))
            path = os.path.join(d, "model.onnx")
            if not os.path.exists(path):
                raise SystemExit(f"no model.onnx in {d}")
            model = onnx.load(path, load_external_data=False)
            feeds = data_set_feeds(d, model)
            work = os.path.join(root, name)
            os.makedirs(work)
            count = macs(model, feeds)
            for t in threads:
                sess = ort_session(path, t)
                v, o = alternate(a.vigil, path, sess, feeds, a.reps, a.inner_real, t)
                rows.append((name, t, v, o))
                print(f"{name}, {t} thread(s): vigil {v:.2f} ms, ort {o:.2f} ms, {v / o:.2f}x", file=sys.stderr, flush=True)
                by, total, per_node = profile(a.vigil, path, work, t, a.profiles)
                top = sorted(by.items(), key=lambda kv: -kv[1][0])[:6]
                mm = sum(ms for op, (ms, _) in by.items() if op.startswith(("matmul", "gemm")))
                cv = sum(ms for op, (ms, _) in by.items() if op.startswith("conv"))
                rate = lambda n, ms: f"{2 * n / ms / 1e6:.1f}" if ms > 0 and n else "-"
                notes.append(
                    f"{name}, {t} thread(s): profiled {total:.3g} ms: "
                    + ", ".join(f"{op} {ms:.3g} ({c})" for op, (ms, c) in top)
                    + f"; matmul {rate(count['matmul'], mm)} GFLOP/s, conv {rate(count['conv'], cv)} GFLOP/s"
                    + (f" ({count['unknown']} nodes of unknown shape left out)" if count["unknown"] else "")
                )
                if a.nodes > 0:
                    ort_times = ort_nodes(path, feeds, t, max(a.profiles, 1))
                    notes.append(f"{name}, {t} thread(s), per node: " + "\n".join(node_table(model, per_node, ort_times, a.nodes)))
    print("| model | threads | Vigil plain ms | onnxruntime ms | Vigil / ort |\n|---|---|---|---|---|")
    for name, t, v, o in rows:
        print(f"| {name} | {t} | {v:.2f} | {o:.2f} | {v / o:.2f}x |")
    print()
    for n in notes:
        print(f"- {n}")
    print(
        f"\n{a.reps} rounds of {a.inner_real} run(s) each, alternating, medians; ort {ort.__version__}, "
        f"intra-op threads = Vigil's RAYON_NUM_THREADS; load average {before:.2f} -> {load():.2f}"
    )


if __name__ == "__main__":
    main()
