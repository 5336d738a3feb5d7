"""Writes engine/tests/fixtures/cnn_ops.json: inputs and numpy-computed
expected outputs for conv, the pools, batch_norm and lrn (ONNX semantics).

Run: python3 scripts/cnn_op_fixtures.py  (needs numpy only)."""
import itertools, json, math, os
import numpy as np


def ramp(shape, scale, shift, dtype):
    n = int(np.prod(shape))
    return ((np.arange(n) * scale + shift) % 3.0 - 1.5).reshape(shape).astype(dtype)


def geometry(spatial, kernel, strides, dilations, pads, ceil_mode=False):
    n = len(spatial)
    out = []
    for i in range(n):
        span = (kernel[i] - 1) * dilations[i] + 1
        padded = spatial[i] + pads[i] + pads[n + i]
        if ceil_mode:
            o = -(-(padded - span) // strides[i]) + 1
            if (o - 1) * strides[i] >= spatial[i] + pads[i]:
                o -= 1
        else:
            o = (padded - span) // strides[i] + 1
        out.append(o)
    return out


def windows(spatial, kernel, strides, dilations, pads, out):
    """Yields (output index, list of input coords or None per kernel pos)."""
    for o in itertools.product(*[range(v) for v in out]):
        coords = []
        for k in itertools.product(*[range(v) for v in kernel]):
            c = tuple(o[d] * strides[d] - pads[d] + k[d] * dilations[d] for d in range(len(o)))
            inside = all(0 <= c[d] < spatial[d] for d in range(len(o)))
            coords.append((c, inside, k))
        yield o, coords


def conv(x, w, b, group, strides, dilations, pads):
    n, c = x.shape[:2]
    m = w.shape[0]
    spatial, kernel = list(x.shape[2:]), list(w.shape[2:])
    out = geometry(spatial, kernel, strides, dilations, pads)
    y = np.zeros([n, m] + out, dtype=np.float64)
    cg, mg = c // group, m // group
    for ni in range(n):
        for mi in range(m):
            g = mi // mg
            for o, coords in windows(spatial, kernel, strides, dilations, pads, out):
                s = 0.0
                for (cc, inside, k) in coords:
                    if inside:
                        for ci in range(cg):
                            s += float(x[(ni, g * cg + ci) + cc]) * float(w[(mi, ci) + k])
                y[(ni, mi) + o] = s + (float(b[mi]) if b is not None else 0.0)
    return y.astype(x.dtype)


def pool(x, kind, kernel, strides, dilations, pads, ceil_mode, include_pad):
    spatial = list(x.shape[2:])
    out = geometry(spatial, kernel, strides, dilations, pads, ceil_mode)
    y = np.zeros(list(x.shape[:2]) + out, dtype=x.dtype)
    nd = len(spatial)
    for nc in itertools.product(range(x.shape[0]), range(x.shape[1])):
        for o, coords in windows(spatial, kernel, strides, dilations, pads, out):
            vals = [x[nc + c] for (c, inside, _) in coords if inside]
            if kind == "max":
                y[nc + o] = max(vals)
            else:
                if include_pad:
                    cnt = sum(1 for (c, _, _) in coords
                              if all(-pads[d] <= c[d] < spatial[d] + pads[nd + d] for d in range(nd)))
                else:
                    cnt = len(vals)
                y[nc + o] = np.float64(sum(float(v) for v in vals)) / cnt
    return y


def case(name, op, attrs, inputs, out):
    return {"name": name, "op": op, "attrs": attrs,
            "inputs": [{"dtype": str(a.dtype).replace("float", "f"), "shape": list(a.shape),
                        "data": [float(v) for v in a.ravel()]} for a in inputs],
            "expected": {"shape": list(out.shape), "data": [float(v) for v in out.ravel()]}}


cases = []
x = ramp([1, 4, 5, 5], 0.37, 0.1, np.float32)
w = ramp([6, 2, 3, 3], 0.53, 0.2, np.float32)
b = ramp([6], 0.7, 0.3, np.float32)
cases.append(case("conv_group_stride_pad_dilation", "conv",
                  {"group": 2, "strides": [2, 1], "pads": [1, 0, 1, 2], "dilations": [1, 2]},
                  [x, w, b], conv(x, w, b, 2, [2, 1], [1, 2], [1, 0, 1, 2])))
x = ramp([2, 3, 2, 2], 0.41, 0.0, np.float64)
w = ramp([4, 3, 1, 1], 0.29, 0.5, np.float64)
cases.append(case("conv_pointwise_f64", "conv", {}, [x, w], conv(x, w, None, 1, [1, 1], [1, 1], [0, 0, 0, 0])))
x = ramp([1, 1, 5], 0.61, 0.0, np.float32)
w = ramp([2, 1, 4], 0.33, 0.1, np.float32)
# SAME_UPPER: out 5, total pad 3 -> begin 1, end 2.
cases.append(case("conv_1d_same_upper", "conv", {"auto_pad": "SAME_UPPER"}, [x, w],
                  conv(x, w, None, 1, [1], [1], [1, 2])))
x = ramp([1, 2, 5, 5], 0.77, 0.2, np.float32)
cases.append(case("max_pool_ceil_pad", "max_pool",
                  {"kernel_shape": [3, 3], "strides": [2, 2], "pads": [1, 1, 1, 1], "ceil_mode": 1},
                  [x], pool(x, "max", [3, 3], [2, 2], [1, 1], [1, 1, 1, 1], True, False)))
cases.append(case("max_pool_dilated", "max_pool", {"kernel_shape": [2, 2], "dilations": [2, 2]},
                  [x], pool(x, "max", [2, 2], [1, 1], [2, 2], [0, 0, 0, 0], False, False)))
cases.append(case("average_pool_exclude_pad", "average_pool",
                  {"kernel_shape": [3, 3], "strides": [2, 2], "pads": [1, 1, 1, 1]},
                  [x], pool(x, "avg", [3, 3], [2, 2], [1, 1], [1, 1, 1, 1], False, False)))
cases.append(case("average_pool_include_pad_ceil", "average_pool",
                  {"kernel_shape": [3, 3], "strides": [2, 2], "pads": [1, 1, 1, 1], "count_include_pad": 1, "ceil_mode": 1},
                  [x], pool(x, "avg", [3, 3], [2, 2], [1, 1], [1, 1, 1, 1], True, True)))
cases.append(case("global_average_pool", "global_average_pool", {}, [x], x.mean(axis=(2, 3), keepdims=True)))
cases.append(case("global_max_pool", "global_max_pool", {}, [x], x.max(axis=(2, 3), keepdims=True)))
x = ramp([2, 3, 2, 2], 0.43, 0.0, np.float32)
sc, bi, mu = ramp([3], 0.5, 0.2, np.float32), ramp([3], 0.3, 0.1, np.float32), ramp([3], 0.9, 0.4, np.float32)
var = np.array([0.5, 1.5, 2.0], np.float32)
eps = 1e-3
bn = ((x - mu.reshape(1, 3, 1, 1)) / np.sqrt(var.reshape(1, 3, 1, 1) + eps) * sc.reshape(1, 3, 1, 1)
      + bi.reshape(1, 3, 1, 1)).astype(np.float32)
cases.append(case("batch_norm", "batch_norm", {"epsilon": eps}, [x, sc, bi, mu, var], bn))
x = ramp([1, 5, 2, 2], 0.47, 0.3, np.float32)
for size in (3, 4):
    alpha, beta, bias = 0.2, 0.75, 2.0
    sq = np.zeros_like(x)
    c = x.shape[1]
    for i in range(c):
        lo, hi = max(0, i - (size - 1) // 2), min(c - 1, i + math.ceil((size - 1) / 2))
        sq[:, i] = (x[:, lo:hi + 1] ** 2).sum(axis=1)
    y = (x / (bias + alpha / size * sq) ** beta).astype(np.float32)
    cases.append(case(f"lrn_size{size}", "lrn", {"size": size, "alpha": alpha, "beta": beta, "bias": bias}, [x], y))

path = os.path.join(os.path.dirname(__file__), "..", "engine", "tests", "fixtures", "cnn_ops.json")
with open(path, "w") as f:
    json.dump(cases, f, indent=1)
print(f"wrote {len(cases)} cases to {os.path.normpath(path)}")
