#!/usr/bin/env bash
# Runs every test binary of the engine crate under valgrind memcheck and
# prints one line per binary: its exit status and valgrind's error count.
# Usage: scripts/valgrind-engine.sh [extra valgrind flags]
# Proptest cases are cut to 16 (valgrind runs code 20-50x slower).
set -u
cd "$(dirname "$0")/.."
bins=$(cargo test -p vigil-engine --no-run --message-format=json 2>/dev/null |
  python3 -c 'import sys, json
for l in sys.stdin:
    m = json.loads(l)
    if m.get("reason") == "compiler-artifact" and m.get("executable") and m["profile"]["test"]:
        print(m["executable"])')
status=0
for b in $bins; do
  log=$(mktemp)
  PROPTEST_CASES=16 valgrind --tool=memcheck --error-exitcode=99 --leak-check=no "$@" \
    "$b" --test-threads=1 -q >/dev/null 2>"$log"
  rc=$?
  errs=$(grep -o 'ERROR SUMMARY: [0-9]*' "$log" | tail -1)
  echo "$(basename "$b"): exit $rc, ${errs:-no summary}"
  [ $rc -ne 0 ] && { status=1; grep -m 20 '==[0-9]*==' "$log"; }
  rm -f "$log"
done
exit $status
