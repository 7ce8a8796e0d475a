# shellcheck shell=bash
# The trino part (issue 37), sourced by interop/run.sh (functions only).
#
# Trino 483, embedded (interop/maven/trino: trino-testing's query runner,
# trino-main and the Iceberg connector, versions from trino-root's BOM,
# and sqlite-jdbc), writes random histories of v3 tables into a JDBC
# catalog on SQLite with Trino's native local file system:
# TrinoHistories.java runs inserts of several files, deletes by key,
# range, partition and of everything, updates that change values, move
# rows between partitions or change the key, MERGE, optimize,
# optimize_manifests, ADD COLUMN with a DEFAULT of many types, rename,
# drop, widen and repartitioning, and dumps Trino's own FOR VERSION AS OF
# reads of every snapshot with "$row_id" and "$last_updated_sequence_number".
# interop/trino_check.py then holds `icecdc changes` to those reads at
# every snapshot (interop/oracle.py), through the JDBC catalog and through
# the metadata file.
#
# Trino 483 needs Java 25 (TRINO_JAVA_HOME, default the Temurin 25 JDK
# at /usr/lib/jvm/temurin-25-jdk-amd64).
#
#   trino_install   the jars (once per pom) and the writer's classes
#   trino_run       the whole part; alone:
#     bash -c '. interop/run.sh && trino_run'
#   ICECDC_TRINO_HISTORIES (default 24) and ICECDC_TRINO_STEPS (default 30)
#   size it; ICECDC_TRINO_SEED (default 1) picks the histories.
TRINO_VERSION=483
TRINO_JAVA_HOME=${TRINO_JAVA_HOME:-/usr/lib/jvm/temurin-25-jdk-amd64}

trino_install() {
  local dir=$CACHE/jars/trino stamp t0
  stamp=$(cat "$HERE/maven/trino/pom.xml" "$HERE/maven/trino/TrinoHistories.java" | sha256sum | cut -d' ' -f1)
  if [ "$(cat "$dir/.stamp" 2>/dev/null)" != "$stamp" ]; then
    rm -rf "$dir"
    t0=$(now)
    JAVA_HOME=$TRINO_JAVA_HOME must trino-install mvn -B -q -f "$HERE/maven/trino/pom.xml" dependency:copy-dependencies \
      -DincludeScope=runtime -DoutputDirectory="$dir/lib" || return 1
    echo "trino: the jars copied in $(elapsed "$t0")s (Maven's downloads included when its repository was cold)"
    mkdir -p "$dir/classes"
    must trino-install "$TRINO_JAVA_HOME/bin/javac" -d "$dir/classes" -cp "$dir/lib/*" "$HERE/maven/trino/TrinoHistories.java" || return 1
    echo "$stamp" >"$dir/.stamp"
  fi
  echo "trino: $(ls "$dir/lib" | grep -E '^(trino-main|trino-iceberg|trino-testing|iceberg-core|sqlite-jdbc)-[0-9]' | sed 's/\.jar$//' | tr '\n' ' ')" \
    "($(ls "$dir/lib" | wc -l) jars, $(du -sh "$dir/lib" | cut -f1))"
}

trino_run() {
  if [ ! -x "$TRINO_JAVA_HOME/bin/java" ] || ! command -v mvn >/dev/null; then
    if [ "${CI:-}" = true ]; then
      echo "trino: FAILED: Java 25 ($TRINO_JAVA_HOME, TRINO_JAVA_HOME) and mvn are needed (Trino $TRINO_VERSION runs on Java 25)"
      return 1
    fi
    echo "trino: skipped: Java 25 ($TRINO_JAVA_HOME, TRINO_JAVA_HOME) or mvn is missing; CI runs it"
    return 3
  fi
  trino_install || return 1
  build_icecdc || { echo "trino: icecdc did not build (log $LOGS/build-icecdc.log)"; return 1; }
  local dir=$CACHE/jars/trino out=$WORK/trino t0 n=${ICECDC_TRINO_HISTORIES:-24} steps=${ICECDC_TRINO_STEPS:-30}
  rm -rf "$out"
  mkdir -p "$out"
  t0=$(now)
  if ! "$TRINO_JAVA_HOME/bin/java" --add-modules=jdk.incubator.vector -Xmx2g -Djava.io.tmpdir="$out" \
    -cp "$dir/lib/*:$dir/classes" TrinoHistories "$out/dumps" "$out/catalog.db" "$out/wh" "$n" "$steps" "${ICECDC_TRINO_SEED:-1}" \
    >"$out/writer.txt" 2>"$LOGS/trino-writer.log"; then
    echo "trino: FAILED: TrinoHistories did not finish (log $LOGS/trino-writer.log):"
    cat "$out/writer.txt" | sed 's/^/    /'
    grep -a -E 'Exception|ERROR' "$LOGS/trino-writer.log" | tail -n 10 | sed 's/^/    /'
    return 1
  fi
  sed 's/^/  /' "$out/writer.txt"
  echo "trino: Trino $TRINO_VERSION wrote $n histories in $(elapsed "$t0")s"
  (cd "$HERE" && python3 trino_check.py --icecdc "$BIN" --dumps "$out/dumps" --catalog-db "$out/catalog.db" \
    --warehouse "$out/wh") | sed 's/^/trino: /'
  return "${PIPESTATUS[0]}"
}
