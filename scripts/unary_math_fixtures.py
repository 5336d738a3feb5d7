"""Writes engine/tests/fixtures/unary_math.json: inputs and numpy-computed
outputs of the unary math ops added for ONNX (f32 and f64).

Run: python3 scripts/unary_math_fixtures.py  (needs numpy only)."""
import json, math, os
import numpy as np

erf = np.vectorize(math.erf)
ops = {
    "sin": np.sin, "cos": np.cos, "tan": np.tan, "asin": np.arcsin, "acos": np.arccos,
    "atan": np.arctan, "sinh": np.sinh, "cosh": np.cosh, "floor": np.floor, "ceil": np.ceil,
    "reciprocal": np.reciprocal, "log1p": np.log1p, "expm1": np.expm1,
    "softplus": lambda x: np.logaddexp(0, x), "sign": np.sign, "round": np.rint,
    "erf": lambda x: erf(x.astype(np.float64)), "gelu": lambda x: 0.5 * x * (1 + erf(x.astype(np.float64) / math.sqrt(2))),
}
wide = np.array([-3.7, -2.5, -1.5, -0.5, -0.2, 0.0, 0.3, 0.5, 1.5, 2.5, 4.25, 30.0, -30.0])
unit = np.array([-1.0, -0.75, -0.3, 0.0, 0.2, 0.5, 0.99, 1.0])
def num(v):
    """JSON has no NaN or infinities: those are written as strings."""
    v = float(v)
    return v if math.isfinite(v) else str(v)


cases = []
for name, f in ops.items():
    x = unit if name in ("asin", "acos") else wide
    if name == "reciprocal":
        x = x[x != 0]
    for dt in (np.float32, np.float64):
        xv = x.astype(dt)
        y = np.asarray(f(xv)).astype(dt)
        cases.append({"op": name, "dtype": "f32" if dt == np.float32 else "f64",
                      "x": [num(v) for v in xv], "y": [num(v) for v in y]})
path = os.path.join(os.path.dirname(__file__), "..", "engine", "tests", "fixtures", "unary_math.json")
with open(path, "w") as f:
    json.dump(cases, f, indent=1)
print(f"wrote {len(cases)} cases to {os.path.normpath(path)}")
