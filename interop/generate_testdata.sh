#!/usr/bin/env bash
# Regenerates testdata/java/ (issue #13): Spark 4.1 + Iceberg 1.11 write the
# small v3 tables of interop/testdata_tables.py, and each is stored with the
# events Spark's own reads imply (interop/generate_testdata.py).
#
#   bash interop/generate_testdata.sh                    every table, and testdata/java/README.md
#   bash interop/generate_testdata.sh compaction upgrade  only these tables
#   ICECDC_REGENERATE_TESTDATA=1 bash .ci/run             the same before CI's go test
#
# It installs the Python side the way the interop stage does (it sources
# interop/run.sh for its install functions; same cache, ~/.cache/icecdc-interop),
# then runs `go test ./source -run Java` on the result. Review the diff of
# testdata/java/ like code before committing it.
set -uo pipefail

GEN_HERE=$(cd "$(dirname "$0")" && pwd)
unset ICECDC_INTEROP # sourcing run.sh must not skip
# shellcheck source=interop/run.sh
source "$GEN_HERE/run.sh" || exit 1
OUT=$ROOT/testdata/java

gen_tables() {
  must build-relocate go build -o "$WORK/bin/relocate" "$ROOT/internal/javatables/relocate" || return 1
  local args=(--work "$WORK/spark" --ivy "$CACHE/ivy" --out "$OUT" --relocate "$WORK/bin/relocate")
  [ $# -gt 0 ] && args+=(--only "$@")
  (cd "$HERE" && "$PY" generate_testdata.py "${args[@]}") 2>"$LOGS/spark.stderr"
  local rc=$?
  [ $rc -ne 0 ] && tail -n 40 "$LOGS/spark.stderr" | sed 's/^/    /'
  return $rc
}

go_test() {
  (cd "$ROOT" && go test -count=1 ./source -run Java)
}

part install-python install_python || exit 1
t0=$(now)
echo "== testdata: Spark writes testdata/java/"
gen_tables "$@"
rc=$?
echo "testdata: generated in $(elapsed "$t0")s"
if [ $rc -eq 0 ]; then
  echo "== testdata: go test ./source -run Java"
  go_test
  rc=$?
fi
if [ $rc -eq 0 ]; then
  rm -rf "$WORK"
  echo "testdata: done; review and commit: git status testdata/"
else
  echo "testdata: FAILED (logs in $LOGS)"
fi
exit $rc
