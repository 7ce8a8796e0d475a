# The avro part (issue 21): icecdc's format debezium-avro against a real
# schema registry. Sourced by interop/run.sh (functions only).
#
# Apicurio Registry 3.3.3 (Maven Central's io.apicurio:apicurio-registry-app
# tar.gz, a Quarkus app; Java 21+, so the machine's Temurin 25) runs with its
# in-memory (H2) storage on loopback, started once by avro_install, early,
# so that it boots while the other servers and Spark run. Apicurio's Kafka
# Connect converter (interop/maven/avro) is a plugin of the connect part's
# worker (CONNECT_PLUGIN_PATH); interop/avro_sink.py adds three Debezium
# JDBC sink connectors to that worker through its REST API, each with the
# converter for key and value in Confluent-compatible mode, streams the
# Spark tables and interop.evolve (interop/evolvewriter, whose schema
# changes while the daemons run) with `icecdc run` in format debezium-avro,
# and compares PostgreSQL with Spark's heads as the connect part does; a
# second consumer (confluent-kafka's AvroDeserializer on the registry's
# ccompat API) decodes every record and compares it with the
# debezium-connect-json payload of the same event.
#   avro_install   in the install parts, before connect_start
#   avro_run       after the Spark scenarios (part_bg)
APICURIO_VERSION=3.3.3
# The part's bound in seconds (avro_run).
AVRO_LIMIT=1200
AVRO_JAVA= AVRO_REGISTRY_PID= AVRO_REGISTRY_URL= AVRO_REGISTRY_HEALTH= AVRO_INSTALL_RC=1
CONNECT_PLUGIN_PATH=

# avro_java: a java of release 21 or later, Temurin's first (the registry
# needs 21; the rest of the stage runs on the default java).
avro_java() {
  local j v
  for j in /usr/lib/jvm/temurin-2[5-9]*/bin/java /usr/lib/jvm/*/bin/java /opt/*/bin/java /opt/*/*/bin/java; do
    [ -x "$j" ] || continue
    v=$("$j" -XshowSettings:properties -version 2>&1 | sed -n 's/^ *java.specification.version = //p')
    if [ -n "$v" ] && [ "${v%%.*}" -ge 21 ] 2>/dev/null; then
      echo "$j"
      return 0
    fi
  done
  return 1
}

avro_install() {
  local t0 dir=$CACHE/apicurio/$APICURIO_VERSION plugins=$CACHE/jars/connect-plugins stamp
  t0=$(now)
  if ! AVRO_JAVA=$(avro_java); then
    if [ "${CI:-}" != true ]; then
      echo "avro: skipped: no Java 21 or later under /usr/lib/jvm or /opt (Apicurio Registry needs it); CI runs it"
      AVRO_INSTALL_RC=3
      return 3
    fi
    must install-avro apt-get update || return 1
    must install-avro apt-get install -y openjdk-21-jre-headless || return 1
    AVRO_JAVA=$(avro_java) || { echo "avro: FAILED: no Java 21 or later after installing openjdk-21-jre-headless"; return 1; }
  fi
  if [ ! -f "$dir/quarkus-run.jar" ]; then
    rm -rf "$dir"
    must install-avro mvn -B -q dependency:copy -Dartifact="io.apicurio:apicurio-registry-app:$APICURIO_VERSION:tar.gz:all" \
      -DoutputDirectory="$CACHE/apicurio" || return 1
    mkdir -p "$dir"
    must install-avro tar -xzf "$CACHE/apicurio/apicurio-registry-app-$APICURIO_VERSION-all.tar.gz" -C "$dir" || return 1
    rm -f "$CACHE/apicurio/apicurio-registry-app-$APICURIO_VERSION-all.tar.gz"
  fi
  stamp=$(sha256sum "$HERE/maven/avro/pom.xml" | cut -d' ' -f1)
  if [ "$(cat "$plugins/.pom.sha256" 2>/dev/null)" != "$stamp" ]; then
    rm -rf "$plugins"
    must install-avro mvn -B -q -f "$HERE/maven/avro/pom.xml" dependency:copy-dependencies \
      -DincludeScope=runtime -DoutputDirectory="$plugins/apicurio-converter" || return 1
    echo "$stamp" >"$plugins/.pom.sha256"
  fi
  CONNECT_PLUGIN_PATH=$plugins
  echo "avro: $("$AVRO_JAVA" -version 2>&1 | head -n 1) at $AVRO_JAVA; Apicurio Registry $APICURIO_VERSION ($(du -sh "$dir" | cut -f1));" \
    "Connect plugin $(ls "$plugins/apicurio-converter" | grep '^apicurio-registry-utils-converter' | sed 's/\.jar$//')" \
    "($(ls "$plugins/apicurio-converter" | wc -l) jars); installed in $(elapsed "$t0")s"
  avro_registry_launch
  AVRO_INSTALL_RC=0
}

# avro_registry_launch: the registry in the background, its API and its
# management interface (health) on free loopback ports; avro_registry_wait
# waits for it to be ready.
avro_registry_launch() {
  local dir=$WORK/apicurio port mport
  port=$(free_port)
  mport=$(free_port)
  mkdir -p "$dir"
  (
    cd "$dir" || exit 1
    exec "$AVRO_JAVA" -Xmx384m -XX:ActiveProcessorCount=1 \
      -Dquarkus.http.host=127.0.0.1 -Dquarkus.http.port="$port" \
      -Dquarkus.management.host=127.0.0.1 -Dquarkus.management.port="$mport" \
      -Dapicurio.storage.kind=sql -Dapicurio.storage.sql.kind=h2 \
      -Dapicurio.datasource.url="jdbc:h2:mem:registry" \
      -Dapicurio.storage.snapshot.location="$dir" \
      -jar "$CACHE/apicurio/$APICURIO_VERSION/quarkus-run.jar"
  ) >"$LOGS/apicurio.log" 2>&1 &
  AVRO_REGISTRY_PID=$!
  PIDS+=("$AVRO_REGISTRY_PID")
  AVRO_REGISTRY_URL=http://127.0.0.1:$port
  AVRO_REGISTRY_HEALTH=http://127.0.0.1:$mport/health/ready
  echo "avro: Apicurio Registry starting in the background (pid $AVRO_REGISTRY_PID) at $AVRO_REGISTRY_URL"
}

avro_registry_wait() {
  local i
  for ((i = 0; i < 180 * 5; i++)); do
    if ! kill -0 "$AVRO_REGISTRY_PID" 2>/dev/null; then
      break
    fi
    if python3 -c 'import sys, urllib.request; sys.exit(urllib.request.urlopen(sys.argv[1], timeout=5).status != 200)' \
      "$AVRO_REGISTRY_HEALTH" 2>/dev/null; then
      return 0
    fi
    sleep 0.2
  done
  echo "interop: command failed: $AVRO_JAVA -jar $CACHE/apicurio/$APICURIO_VERSION/quarkus-run.jar (not ready at $AVRO_REGISTRY_HEALTH; log $LOGS/apicurio.log)"
  grep -m 5 -E 'ERROR|Exception' "$LOGS/apicurio.log" | cut -c1-300 | sed 's/^/    /'
  return 1
}

# has_avro_format: whether this icecdc knows format debezium-avro and the
# schema_registry block (its config check names either when it does not).
has_avro_format() {
  local dir=$WORK/avro/probe out
  mkdir -p "$dir"
  printf 'name: probe\ncatalog: {name: local, type: sql, uri: "file:%s/c.db", warehouse: "file://%s"}\ntables: [{name: a.b}]\nformat: debezium-avro\nschema_registry: {url: "http://127.0.0.1:1"}\nsink: {type: kafka, kafka: {brokers: ["127.0.0.1:1"]}}\nstate: {path: "%s/state.db"}\n' \
    "$dir" "$dir" "$dir" >"$dir/icecdc.yaml"
  out=$("$BIN" status -c "$dir/icecdc.yaml" 2>&1)
  [[ $out != *"config: format"* && $out != *'unknown key "schema_registry"'* ]]
}

avro_run() {
  [ "$AVRO_INSTALL_RC" -eq 3 ] && { echo "avro: skipped: install-avro was skipped"; return 3; }
  [ "$AVRO_INSTALL_RC" -eq 0 ] || { echo "avro: not run: install-avro did not pass"; return 1; }
  [ -n "${CONNECT_URL:-}" ] && [ -n "$CONNECT_PID" ] || { echo "avro: the Connect worker did not start"; return 1; }
  [ -s "$WORK/heads.json" ] || { echo "avro: no Spark heads ($WORK/heads.json): the Spark scenarios did not run"; return 1; }
  local t0 tw producer=native rc
  t0=$(now)
  must avro go build -o "$WORK/bin/evolvewriter" "$ROOT/interop/evolvewriter" || return 1
  avro_registry_wait || return 1
  tw=$(elapsed "$t0")
  if ! has_avro_format; then
    producer=translated
    echo "avro: skipped: icecdc has no format debezium-avro (icecdc run with it is what this part checks);"
    echo "  meanwhile the chain is checked with icecdc changes' debezium-connect-json records, Avro-encoded by interop/avro_sink.py"
  fi
  # Bounds, so that a call that never returns fails the part instead of
  # holding the stage until CI's limit: avro_sink.py gives every wait its
  # own deadline, dumps every thread's stack to its stderr at --limit
  # (faulthandler) and fails 10s later; timeout(1) is the last resort.
  (cd "$HERE" && timeout -k 30 "$AVRO_LIMIT" "$PY" avro_sink.py --icecdc "$BIN" --brokers "$KAFKA" --pg "$PG_CONNINFO" \
    --catalog-db "$WORK/spark/catalog.db" --warehouse "$WORK/spark/wh" --heads "$WORK/heads.json" \
    --registry "$AVRO_REGISTRY_URL" --connect "$CONNECT_URL" --evolvewriter "$WORK/bin/evolvewriter" \
    --work "$WORK/avro/check" --producer "$producer" --limit $((AVRO_LIMIT - 60))) 2>"$LOGS/avro-sink.stderr"
  rc=$?
  [ $rc -eq 124 ] && echo "avro: interop/avro_sink.py did not end within ${AVRO_LIMIT}s (killed)"
  if [ $rc -ne 0 ] && [ $rc -ne 3 ]; then
    if grep -q '^Timeout (' "$LOGS/avro-sink.stderr"; then
      sed -n '/^Timeout (/,$p' "$LOGS/avro-sink.stderr" | head -n 80 | sed 's/^/    /'
    else
      tail -n 20 "$LOGS/avro-sink.stderr" | sed 's/^/    /'
    fi
    grep -m 5 ' ERROR ' "$LOGS/connect.log" | grep -i -E 'avro|apicurio' | cut -c1-400 | sed 's/^/    connect.log: /'
  fi
  echo "avro: registry ready ${tw}s into the part; the part took $(elapsed "$t0")s"
  if [ "$producer" = translated ]; then
    [ $rc -ne 0 ] && echo "avro: the translated chain is NOT exact (above); skipped until icecdc has format debezium-avro"
    return 3
  fi
  return $rc
}
