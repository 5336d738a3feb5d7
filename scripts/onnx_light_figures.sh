#!/usr/bin/env bash
# The README's ONNX figures: for each of the onnx package's nine light
# models, the imported node count, the in-place rewrites taken (by op),
# the static peak live bytes with the pass, and the plain / validate /
# debug wall times of `vigil run` on it (one case at a time, --jobs 1).
# Usage: scripts/onnx_light_figures.sh [path/to/vigil]  (needs python3 with onnx)
set -euo pipefail
VIGIL=${1:-target/release/vigil}
LIGHT="$(python3 -c 'import onnx, os; print(os.path.dirname(onnx.__file__))')/backend/test/data/light"
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT
printf '| model | nodes | in-place rewrites | peak live bytes | plain ms | validate | debug |\n|---|---|---|---|---|---|---|\n'
for m in "$LIGHT"/light_*.onnx; do
    name=$(basename "$m" .onnx)
    "$VIGIL" import "$m" --out "$TMP/$name" > /dev/null
    "$VIGIL" explain "$TMP/$name/graph.json" --format json > "$TMP/$name.explain.json"
    for mode in plain validate debug; do
        "$VIGIL" run "$m" --mode "$mode" --jobs 1 --quiet --report "$TMP/$name.$mode.json" > /dev/null
    done
    python3 - "$TMP" "$name" <<'PY'
import collections, json, sys
tmp, name = sys.argv[1], sys.argv[2]
e = json.load(open(f"{tmp}/{name}.explain.json"))
rw = collections.Counter(n["rewritten_from"] for n in e["nodes"] if n.get("rewritten_from"))
ms = {m: json.load(open(f"{tmp}/{name}.{m}.json"))["cases"][0] for m in ("plain", "validate", "debug")}
for m, c in ms.items():
    assert c["status"] == "pass", (name, m, c.get("error"), c.get("findings", [])[:1])
p = max(ms["plain"]["duration_ms"], 1)
rws = ", ".join(f"{k} {v}" for k, v in sorted(rw.items()))
print(f"| {name[6:]} | {e['nodes_total']} | {rws} | {e['peak_live_bytes']['with_pass'] / 2**20:.0f} MiB |"
      f" {p} | {ms['validate']['duration_ms'] / p:.1f}x | {ms['debug']['duration_ms'] / p:.1f}x |")
PY
done
