#!/usr/bin/env bash
# Regenerates testdata/dv/ (issue 19): Iceberg Java 1.11's own writers
# (BaseDVFileWriter, BitmapPositionDeleteIndex, PuffinWriter) write the
# deletion vectors and Puffin files the dv package's tests read, and
# vectors.json, what Java reads back from them (interop/maven/dv/
# WriteVectors.java, run on the jars of interop/maven/dv/pom.xml).
#
#   bash interop/generate_dv_testdata.sh
#
# It needs java 17 or later and mvn (installed with apt-get when missing, as
# the interop stage does); the jars are kept in the interop stage's cache
# (~/.cache/icecdc-interop/jars/dv) and copied again only when the pom
# changes. Then it runs `go test ./dv` on the result. Review the diff of
# testdata/dv/ like code before committing it.
set -uo pipefail

GEN_HERE=$(cd "$(dirname "$0")" && pwd)
unset ICECDC_INTEROP # sourcing run.sh must not skip
# shellcheck source=interop/run.sh
source "$GEN_HERE/run.sh" || exit 1
OUT=$ROOT/testdata/dv
JARS=$CACHE/jars/dv

install_dv_jars() {
  if ! command -v java >/dev/null; then
    echo "dv: java (17 or later) is needed"
    return 1
  fi
  if ! command -v mvn >/dev/null; then
    must install-dv apt-get update || return 1
    must install-dv apt-get install -y maven || return 1
  fi
  local stamp
  stamp=$(sha256sum "$HERE/maven/dv/pom.xml" | cut -d' ' -f1) && [ -n "$stamp" ] || return 1
  if [ "$(cat "$JARS/.pom.sha256" 2>/dev/null)" != "$stamp" ]; then
    rm -rf "$JARS"
    must install-dv mvn -B -q -f "$HERE/maven/dv/pom.xml" dependency:copy-dependencies \
      -DincludeScope=runtime -DoutputDirectory="$JARS" || return 1
    echo "$stamp" >"$JARS/.pom.sha256"
  fi
  echo "dv: $(ls "$JARS" | wc -l) jars, $(du -sh "$JARS" | cut -f1)"
}

# Java writes into the work directory; only a complete set replaces
# testdata/dv/ (README.md, written by hand, stays).
gen_vectors() {
  must write-vectors java -cp "$JARS/*" "$HERE/maven/dv/WriteVectors.java" "$WORK/dv" || return 1
  mkdir -p "$OUT" || return 1
  find "$OUT" -maxdepth 1 -type f ! -name README.md -delete
  cp "$WORK"/dv/* "$OUT"/ || return 1
  ls -l "$OUT" | sed 's/^/    /'
}

part install-dv install_dv_jars || exit 1
t0=$(now)
echo "== testdata: Iceberg Java writes testdata/dv/"
gen_vectors
rc=$?
echo "testdata: generated in $(elapsed "$t0")s"
if [ $rc -eq 0 ]; then
  echo "== testdata: go test ./dv"
  (cd "$ROOT" && go test -count=1 ./dv)
  rc=$?
fi
if [ $rc -eq 0 ]; then
  rm -rf "$WORK"
  echo "testdata: done; review and commit: git status testdata/dv/"
else
  echo "testdata: FAILED (logs in $LOGS)"
fi
exit $rc
