# shellcheck shell=bash
# The opensearch part (issue 32), sourced by interop/run.sh (functions only).
#
# OpenSearch 2.19.6 from Maven Central's jars (interop/maven/opensearch:
# the server, transport-netty4-client, analysis-common, lang-painless and
# log4j-core; no tarball of the server is on the registries the stage
# reaches): OpenSearchNode.java beside the pom extends
# org.opensearch.node.Node and loads those modules as class-path plugins,
# single-node discovery on loopback, no security plugin, a 512 MB heap.
# The node starts once; interop/opensearch_e2e.py then has `icecdc run`
# (sink opensearch) follow the Spark scenario tables into it, twice over:
# documents by key columns (index ident-<table>) and by row id
# (rowid-<table>), and, in the stage, a third daemon the Flink upsert
# tables by their identifier fields (flink-<table>). Mid-stream it
# SIGKILLs the daemons (and keeps a copy of their state files) and restarts
# them, and later stops the node for a while and starts it again on the
# same data; at the end every index must equal the table's head (Spark's
# rows; for the Flink tables the writer's steps applied by key) value by
# value, none missing, none extra; and two replays, one from the state
# copied at the kill and one from the start (`icecdc reset --all`), must
# change no document (_source and _version).
#
#   opensearch_install   the jars (once per pom) and the launcher's classes
#   opensearch_launch    the node in the background, on a free port
#   opensearch_wait      waits for it to be ready (green)
#   opensearch_stop
#   opensearch_run       the whole part; alone:
#     bash -c '. interop/run.sh && opensearch_run'
#   which writes the Spark tables it follows itself (a subset of the
#   scenarios; ICECDC_INTEROP_ONLY picks others) when the stage's are not
#   there.
OPENSEARCH_VERSION=2.19.6
OS_DIR= OS_PORT= OS_URL= OS_PID= OS_T0=
# The scenarios the part follows when it writes its own tables (alone).
OS_SCENARIOS="bookshop merge partitioned compaction cow defaults types bulk"

opensearch_install() {
  local dir=$CACHE/jars/opensearch stamp
  stamp=$(cat "$HERE/maven/opensearch/pom.xml" "$HERE/maven/opensearch/OpenSearchNode.java" | sha256sum | cut -d' ' -f1)
  if [ "$(cat "$dir/.stamp" 2>/dev/null)" != "$stamp" ]; then
    rm -rf "$dir"
    must opensearch-install mvn -B -q -f "$HERE/maven/opensearch/pom.xml" dependency:copy-dependencies \
      -DincludeScope=runtime -DoutputDirectory="$dir/lib" || return 1
    mkdir -p "$dir/classes"
    must opensearch-install javac -d "$dir/classes" -cp "$dir/lib/*" "$HERE/maven/opensearch/OpenSearchNode.java" || return 1
    echo "$stamp" >"$dir/.stamp"
  fi
  echo "opensearch: $(ls "$dir/lib" | grep -E '^(opensearch|transport-netty4-client|analysis-common|lang-painless|log4j-core)-[0-9]' | sed 's/\.jar$//' | tr '\n' ' ')" \
    "($(ls "$dir/lib" | wc -l) jars, $(du -sh "$dir/lib" | cut -f1))"
}

# opensearch_launch: writes $OS_DIR/node.sh (the node's command line, which
# interop/opensearch_e2e.py runs again to restart it) and starts it in the
# background; its pid is in $OS_DIR/node.pid.
opensearch_launch() {
  local jars=$CACHE/jars/opensearch
  OS_DIR=$WORK/opensearch
  OS_PORT=$(free_port)
  OS_URL=http://127.0.0.1:$OS_PORT
  mkdir -p "$OS_DIR/home"
  cat >"$OS_DIR/log4j2.properties" <<EOF
status = error
appender.file.type = File
appender.file.name = file
appender.file.fileName = $LOGS/opensearch-node.log
appender.file.append = true
appender.file.layout.type = PatternLayout
appender.file.layout.pattern = [%d{ISO8601}][%-5p][%c{1.}] %m%n
rootLogger.level = info
rootLogger.appenderRef.file.ref = file
EOF
  cat >"$OS_DIR/node.sh" <<EOF
#!/bin/sh
# The interop stage's OpenSearch node (interop/parts/opensearch.sh); stdout
# says "opensearch node ready URL (green)" once it is.
exec java -Xms512m -Xmx512m -XX:+UseG1GC -Dlog4j2.configurationFile=$OS_DIR/log4j2.properties \\
  -Djava.io.tmpdir=$OS_DIR/home -cp '$jars/lib/*:$jars/classes' OpenSearchNode \\
  path.home=$OS_DIR/home http.port=$OS_PORT
EOF
  chmod +x "$OS_DIR/node.sh"
  OS_T0=$(now)
  "$OS_DIR/node.sh" >>"$LOGS/opensearch-stdout.log" 2>&1 &
  OS_PID=$!
  echo "$OS_PID" >"$OS_DIR/node.pid"
  PIDS+=("$OS_PID")
}

# opensearch_wait: waits up to 300 s (a loaded machine takes long to
# load painless) for the node's ready line.
opensearch_wait() {
  local i
  for ((i = 0; i < 300 * 5; i++)); do
    if grep -q '^opensearch node ready' "$LOGS/opensearch-stdout.log" 2>/dev/null; then
      echo "OpenSearch $OPENSEARCH_VERSION at $OS_URL (pid $OS_PID, heap 512 MB):" \
        "$(sed -n 's/^opensearch node ready [^ ]* (\(.*\))$/\1/p' "$LOGS/opensearch-stdout.log" | head -n 1)," \
        "RSS $(($(ps -o rss= -p "$OS_PID" 2>/dev/null || echo 0) / 1024)) MiB; plugins:" \
        "$(sed -n 's/.*loaded plugin \[\(.*\)\]/\1/p' "$LOGS/opensearch-node.log" | sed 's/.*\.//' | sort -u | tr '\n' ' ')"
      return 0
    fi
    kill -0 "$OS_PID" 2>/dev/null || break
    sleep 0.2
  done
  echo "interop: command failed: $OS_DIR/node.sh (not ready; log $LOGS/opensearch-node.log)"
  tail -n 15 "$LOGS/opensearch-stdout.log" | sed 's/^/    /'
  grep -h -m 5 -E '\]\[(ERROR|WARN) ' "$LOGS/opensearch-node.log" 2>/dev/null | cut -c1-300 | sed 's/^/    /'
  opensearch_stop
  return 1
}

opensearch_stop() {
  # The proof restarts the node: its pid file holds the live one.
  local pid
  pid=$(cat "$OS_DIR/node.pid" 2>/dev/null)
  [ -n "$pid" ] && stop_pid "$pid"
  [ -n "$OS_PID" ] && [ "$OS_PID" != "$pid" ] && stop_pid "$OS_PID"
  OS_PID=
  rm -f "$OS_DIR/node.pid"
}

# opensearch_tables: sets OS_CATALOG_DB, OS_WAREHOUSE and OS_HEADS to the
# stage's Spark tables, or writes the part's own (alone).
OS_CATALOG_DB= OS_WAREHOUSE= OS_HEADS=
opensearch_tables() {
  if [ -f "$WORK/spark/catalog.db" ] && [ -s "$WORK/heads.json" ]; then
    OS_CATALOG_DB=$WORK/spark/catalog.db OS_WAREHOUSE=$WORK/spark/wh OS_HEADS=$WORK/heads.json
    return 0
  fi
  local dir=$WORK/opensearch/spark only=${ICECDC_INTEROP_ONLY:-$OS_SCENARIOS} rc
  mkdir -p "$dir"
  echo "opensearch: Spark writes the scenarios $only (the stage's tables are not there)"
  # shellcheck disable=SC2086
  (cd "$HERE" && "$PY" run_scenarios.py --work "$dir" --ivy "$CACHE/ivy" --icecdc "$BIN" --heads "$dir/heads.json" \
    --only $only) >"$LOGS/opensearch-spark.out" 2>"$LOGS/opensearch-spark.stderr"
  rc=$?
  grep -E '^(scenario|scenarios:|timing: spark)' "$LOGS/opensearch-spark.out" | sed 's/^/  /'
  if [ ! -s "$dir/heads.json" ]; then
    echo "interop: command failed (exit $rc): run_scenarios.py --only $only (log $LOGS/opensearch-spark.stderr)"
    tail -n 20 "$LOGS/opensearch-spark.stderr" | sed 's/^/    /'
    return 1
  fi
  OS_CATALOG_DB=$dir/catalog.db OS_WAREHOUSE=$dir/wh OS_HEADS=$dir/heads.json
}

# opensearch_prepare: the install and the node's start, in the stage's
# install phase (the node boots while Spark writes); opensearch_run then
# finds it running.
opensearch_prepare() {
  opensearch_install && opensearch_launch
}

opensearch_run() {
  if ! command -v java >/dev/null || ! command -v mvn >/dev/null || ! command -v javac >/dev/null; then
    if [ "${CI:-}" = true ]; then
      echo "opensearch: FAILED: java, javac and mvn are needed (the node runs on Java 17 from Maven Central's jars)"
      return 1
    fi
    echo "opensearch: skipped: java, javac or mvn is missing (apt-get install maven brings them); CI runs it"
    return 3
  fi
  local t0 rc
  t0=$(now)
  if [ -z "$OS_PID" ]; then
    opensearch_prepare || return 1
  fi
  [ -x "$PY" ] || install_python >/dev/null || { echo "opensearch: the Python venv did not install"; return 1; }
  build_icecdc || { echo "opensearch: icecdc did not build (log $LOGS/build-icecdc.log)"; return 1; }
  opensearch_tables || { opensearch_stop; return 1; }
  opensearch_wait || return 1
  local flink=()
  # The Flink upsert tables, when the stage's Flink writer wrote them.
  if [ "$(cut -d' ' -f1 "$WORK/flink/status" 2>/dev/null)" = 0 ]; then
    flink=(--flink-catalog-db "$WORK/flink/catalog.db" --flink-warehouse "$WORK/flink/wh")
  fi
  (cd "$HERE" && "$PY" opensearch_e2e.py --icecdc "$BIN" --url "$OS_URL" --node-cmd "$OS_DIR/node.sh" \
    --node-pid-file "$OS_DIR/node.pid" --node-log "$LOGS/opensearch-stdout.log" \
    --catalog-db "$OS_CATALOG_DB" --warehouse "$OS_WAREHOUSE" --heads "$OS_HEADS" --work "$WORK/opensearch/e2e" \
    "${flink[@]}") 2>"$LOGS/opensearch-e2e.stderr"
  rc=$?
  [ $rc -ne 0 ] && [ $rc -ne 3 ] && tail -n 20 "$LOGS/opensearch-e2e.stderr" | sed 's/^/    /'
  opensearch_stop
  echo "opensearch: exit $rc in $(elapsed "$t0")s"
  return $rc
}
