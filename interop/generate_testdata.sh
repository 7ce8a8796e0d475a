#!/usr/bin/env bash
# Regenerates testdata/java/ (issues #13, #20): Spark 4.1 with Iceberg 1.11
# (and 1.12 for the tables testdata_tables.py assigns it: variant) writes the
# small v3 tables of interop/testdata_tables.py, and Iceberg Java 1.12's
# generic writers those Spark SQL cannot (geometry, geography, timestamp_ns,
# defaults: interop/maven/generic/WriteGenericTables.java); each is stored
# with the events Spark's (or Java's generic) reads imply
# (interop/generate_testdata.py).
#
#   bash interop/generate_testdata.sh                    every table, and testdata/java/README.md
#   bash interop/generate_testdata.sh compaction upgrade  only these tables
#   ICECDC_REGENERATE_TESTDATA=1 bash .ci/run             the same before CI's go test
#   ICECDC_TESTDATA_VERSIONS=1.12.0 ICECDC_TESTDATA_OUT=DIR bash interop/generate_testdata.sh
#       every Spark table with Iceberg 1.12 into DIR (to compare writer versions;
#       testdata/java is left alone and the Go tests are not run)
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
OUT=${ICECDC_TESTDATA_OUT:-$ROOT/testdata/java}
GENERIC_JARS=$CACHE/jars/generic

install_generic_jars() {
  if ! command -v java >/dev/null; then
    echo "generic: java (17 or later) is needed"
    return 1
  fi
  if ! command -v mvn >/dev/null; then
    must install-generic apt-get update || return 1
    must install-generic apt-get install -y maven || return 1
  fi
  local stamp
  stamp=$(sha256sum "$HERE/maven/generic/pom.xml" | cut -d' ' -f1) && [ -n "$stamp" ] || return 1
  if [ "$(cat "$GENERIC_JARS/.pom.sha256" 2>/dev/null)" != "$stamp" ]; then
    rm -rf "$GENERIC_JARS"
    must install-generic mvn -B -q -f "$HERE/maven/generic/pom.xml" dependency:copy-dependencies \
      -DincludeScope=runtime -DoutputDirectory="$GENERIC_JARS" || return 1
    echo "$stamp" >"$GENERIC_JARS/.pom.sha256"
  fi
  echo "generic: $(ls "$GENERIC_JARS" | wc -l) jars, $(du -sh "$GENERIC_JARS" | cut -f1)"
}

# One generator run per Iceberg version (a Spark session loads one runtime);
# the Java tables are stored by the first run.
gen_tables() {
  must build-relocate go build -o "$WORK/bin/relocate" "$ROOT/internal/javatables/relocate" || return 1
  local versions=${ICECDC_TESTDATA_VERSIONS:-1.11.0 1.12.0} v rc=0 java=(--java "$WORK/generic")
  if [ -n "${ICECDC_TESTDATA_OUT:-}" ]; then
    java=()
  else
    must write-generic java -cp "$GENERIC_JARS/*" "$HERE/maven/generic/WriteGenericTables.java" "$WORK/generic" || return 1
  fi
  for v in $versions; do
    local args=(--work "$WORK/spark-$v" --ivy "$CACHE/ivy" --out "$OUT" --relocate "$WORK/bin/relocate" "${java[@]}")
    [ -n "${ICECDC_TESTDATA_OUT:-}" ] && args+=(--any-version)
    [ $# -gt 0 ] && args+=(--only "$@")
    mkdir -p "$WORK/spark-$v"
    echo "-- Iceberg $v"
    (cd "$HERE" && ICECDC_ICEBERG_VERSION=$v "$PY" generate_testdata.py "${args[@]}") 2>"$LOGS/spark-$v.stderr"
    rc=$?
    [ $rc -ne 0 ] && { tail -n 40 "$LOGS/spark-$v.stderr" | sed 's/^/    /'; return $rc; }
    java=()
  done
  return $rc
}

go_test() {
  (cd "$ROOT" && go test -count=1 ./source -run Java)
}

part install-python install_python || exit 1
part install-generic install_generic_jars || exit 1
t0=$(now)
echo "== testdata: Spark and Iceberg Java write $OUT"
gen_tables "$@"
rc=$?
echo "testdata: generated in $(elapsed "$t0")s"
if [ $rc -eq 0 ] && [ -z "${ICECDC_TESTDATA_OUT:-}" ]; then
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
