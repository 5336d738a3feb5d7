"""Vigil's plain run of the onnx package's light models against
onnxruntime, both on one thread, same input, alternating rep by rep.

    /tmp/venv/bin/pip install onnx onnxruntime numpy
    cargo build --release
    /tmp/venv/bin/python benches/onnx_vs_ort.py [--vigil target/release/vigil] [--reps 7] [MODEL...]

MODEL is a light model's short name (resnet50, vgg19, ...; default all nine).
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


def vigil_rep(vigil, path):
    """One timed plain rep of Vigil on `path`, in ms (after its own warm-up)."""
    env = dict(os.environ, RAYON_NUM_THREADS="1")
    r = subprocess.run(
        [vigil, "bench", path, "--modes", "plain", "--reps", "1", "--format", "json"],
        capture_output=True,
        text=True,
        env=env,
        check=False,
    )
    if r.returncode != 0:
        raise SystemExit(f"vigil bench {path} exited {r.returncode}: {r.stderr.strip() or r.stdout[:300]}")
    res = json.loads(r.stdout)["cases"][0]["results"][0]
    return res["times_ms"][0]


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
    ap.add_argument("models", nargs="*")
    a = ap.parse_args()
    if not os.path.exists(a.vigil):
        raise SystemExit(f"no vigil binary at {a.vigil} (cargo build --release)")
    names = a.models or sorted(f[6:-5] for f in os.listdir(LIGHT) if f.startswith("light_") and f.endswith(".onnx"))
    before = load()
    rows = []
    for name in names:
        path = os.path.join(LIGHT, f"light_{name}.onnx")
        if not os.path.exists(path):
            raise SystemExit(f"no light model '{name}' in {LIGHT}")
        sess = ort_session(path)
        feeds = dummy_feeds(onnx.load(path))
        sess.run(None, feeds)  # warm-up
        vt, ot = [], []
        for _ in range(a.reps):
            vt.append(vigil_rep(a.vigil, path))
            t = time.perf_counter()
            sess.run(None, feeds)
            ot.append((time.perf_counter() - t) * 1e3)
        v, o = statistics.median(vt), statistics.median(ot)
        rows.append((name, v, o, v / o))
        print(f"{name}: vigil {v:.1f} ms, ort {o:.1f} ms, {v / o:.2f}x", file=sys.stderr, flush=True)
    print(f"| model | Vigil plain ms | onnxruntime ms | Vigil / ort |\n|---|---|---|---|")
    for name, v, o, r in rows:
        print(f"| {name} | {v:.1f} | {o:.1f} | {r:.2f}x |")
    print(
        f"\n{a.reps} reps each, alternating, medians; one thread each (ort {ort.__version__}); "
        f"load average {before:.2f} -> {load():.2f}"
    )


if __name__ == "__main__":
    main()
