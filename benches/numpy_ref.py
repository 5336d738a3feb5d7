"""numpy reference for benches/perf.rs: the same MLP SGD step and 16-op
chain, same inputs (same LCG), timed as medians over REPS reps.

    python3 -m venv /tmp/venv && /tmp/venv/bin/pip install numpy
    OPENBLAS_NUM_THREADS=2 /tmp/venv/bin/python benches/numpy_ref.py [REPS]

Not part of `cargo test`; the README's Performance section quotes its output
next to `VIGIL_PAIRED=REPS cargo bench --bench perf`.
"""

import sys
import time

import numpy as np

BATCH = 256
DIMS = [784, 512, 256, 10]


def uniform(n, seed, lo, hi):
    """The LCG of benches/perf.rs: s = s * 6364136223846793005 + 1442695040888963407."""
    a = np.uint64(6364136223846793005)
    c = np.uint64(1442695040888963407)
    # Jump-ahead in blocks: s_{i+k} = A_k s_i + C_k, vectorised over k.
    k = min(n, 1 << 16)
    ak = np.empty(k, dtype=np.uint64)
    ck = np.empty(k, dtype=np.uint64)
    with np.errstate(over="ignore"):
        x, y = np.uint64(1), np.uint64(0)
        for i in range(k):
            x, y = x * a, y * a + c
            ak[i], ck[i] = x, y
        out = np.empty(n, dtype=np.uint64)
        s = np.uint64(seed)
        for start in range(0, n, k):
            m = min(k, n - start)
            block = ak[:m] * s + ck[:m]
            out[start : start + m] = block
            s = block[-1]
    u = (out >> np.uint64(40)).astype(np.float32) / np.float32(1 << 24)
    return np.float32(lo) + np.float32(hi - lo) * u


def mlp_setup():
    x = uniform(BATCH * 784, 1, 0.0, 1.0).reshape(BATCH, 784)
    labels = np.arange(BATCH) % 10
    onehot = np.zeros((BATCH, 10), dtype=np.float32)
    onehot[np.arange(BATCH), labels] = 1.0
    ws, bs = [], []
    for l in range(3):
        i, o = DIMS[l], DIMS[l + 1]
        scale = np.float32(np.sqrt(6.0 / (i + o)))
        ws.append(uniform(i * o, 10 + l, -scale, scale).reshape(i, o))
        bs.append(np.zeros(o, dtype=np.float32))
    return x, labels, onehot, ws, bs


def mlp_step(x, labels, onehot, ws, bs):
    lr = np.float32(0.01)
    acts, pre = [x], []
    h = x
    for l in range(3):
        a = h @ ws[l] + bs[l]
        pre.append(a)
        h = np.maximum(a, 0) if l < 2 else a
        if l < 2:
            acts.append(h)
    m = h.max(axis=1, keepdims=True)
    e = np.exp(h - m)
    s = e.sum(axis=1, keepdims=True)
    loss = -(h[np.arange(BATCH), labels] - m[:, 0] - np.log(s[:, 0])).mean()
    p = e / s
    d = (p - onehot) * np.float32(1.0 / BATCH)
    grads = [None] * 3
    for l in (2, 1, 0):
        gw = acts[l].T @ d
        gb = d.sum(axis=0)
        if l > 0:
            dh = d @ ws[l].T
            d = np.where(pre[l - 1] > 0, dh, np.float32(0))
        grads[l] = (gw, gb)
    for l in range(3):
        ws[l] -= grads[l][0] * lr
        bs[l] -= grads[l][1] * lr
    return loss


def chain_pure(x):
    c = np.float32(0.5)
    y = np.exp(x * c) + c
    y = np.tanh(np.log(y)) + x
    y = 1 / (1 + np.exp(-y))
    y = np.sqrt(y * y) - x
    y = np.exp(np.abs(y) * c) + c
    return np.tanh(np.log(y))


def chain_inplace(x):
    c = np.float32(0.5)
    y = x * c
    np.exp(y, out=y)
    y += c
    np.log(y, out=y)
    np.tanh(y, out=y)
    y += x
    np.negative(y, out=y)
    np.exp(y, out=y)
    y += 1
    np.reciprocal(y, out=y)
    np.multiply(y, y, out=y)
    np.sqrt(y, out=y)
    y -= x
    np.abs(y, out=y)
    y *= c
    np.exp(y, out=y)
    y += c
    np.log(y, out=y)
    np.tanh(y, out=y)
    return y


def timed(f, reps):
    f()
    ts = []
    for _ in range(reps):
        t = time.perf_counter()
        f()
        ts.append((time.perf_counter() - t) * 1e3)
    ts.sort()
    return ts[len(ts) // 2]


def main():
    reps = int(sys.argv[1]) if len(sys.argv) > 1 else 30
    state = mlp_setup()
    print(f"{'mlp_step':<28} {'numpy':<10} {timed(lambda: mlp_step(*state), reps):9.3f} ms")
    x = uniform(8 << 20, 7, 0.0, 1.0)
    pure = []
    inpl = []
    f_pure = lambda: chain_pure(x)
    f_inpl = lambda: chain_inplace(x)
    f_pure()
    f_inpl()
    for _ in range(reps):  # alternate the two variants rep by rep
        t = time.perf_counter()
        f_pure()
        pure.append((time.perf_counter() - t) * 1e3)
        t = time.perf_counter()
        f_inpl()
        inpl.append((time.perf_counter() - t) * 1e3)
    pure.sort()
    inpl.sort()
    print(f"{'chain16_math_8m':<28} {'np pure':<10} {pure[reps // 2]:9.3f} ms")
    print(f"{'chain16_math_8m':<28} {'np inplace':<10} {inpl[reps // 2]:9.3f} ms")


if __name__ == "__main__":
    main()
