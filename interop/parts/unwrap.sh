# shellcheck shell=bash
# The unwrap part (issue 23): Debezium's own ExtractNewRecordState
# (debezium-connect-plugins 3.6.1.Final, the artifact that holds
# io.debezium.transforms.ExtractNewRecordState since debezium-core became a
# pointer) runs as an SMT in the stage's Connect worker over icecdc's
# envelope topic of the demo story, once per delete.tombstone.handling.mode,
# with add.fields and add.headers; a small sink connector
# (interop/unwrap/RecordFileSink.java) writes what the SMT made, as the
# worker's JsonConverter would write it to Kafka, to a file. icecdc writes
# the same events with transforms.unwrap to a topic of its own per mode, and
# interop/unwrap_compare.py compares the two record by record: key, value
# and headers. Both passes: start earliest (c, u, d and tombstones) and
# start initial (r). Functions only; interop/run.sh sources this file.

UNWRAP_MODES="tombstone drop rewrite rewrite-with-tombstone delete-to-tombstone"
UNWRAP_FIELDS="op,table,source.ts_ms,source.snapshot,transaction.id,sequence_number:seq,source.row_id"
UNWRAP_HEADERS="op,source.ts_ms,db,source.snapshot"
UNWRAP_INSTALL_RC=

# unwrap_install: the SMT's jars and the record sink, each a Connect plugin
# in a plugin.path directory of their own (CONNECT_PLUGIN_PATH), so that the
# SMT does not meet the JDBC sink's Debezium jars of another version on the
# worker's class path. Call it before connect_start.
unwrap_install() {
  local plugins=$CACHE/jars/unwrap-plugins stamp
  stamp=$(cat "$HERE/maven/unwrap/pom.xml" "$HERE/unwrap/RecordFileSink.java" | sha256sum | cut -d' ' -f1)
  if [ "$(cat "$plugins/.stamp" 2>/dev/null)" != "$stamp" ]; then
    rm -rf "$plugins"
    must unwrap-install mvn -B -q -f "$HERE/maven/unwrap/pom.xml" dependency:copy-dependencies \
      -DincludeScope=runtime -DoutputDirectory="$plugins/debezium-smt" || { UNWRAP_INSTALL_RC=1; return 1; }
    mkdir -p "$plugins/build" "$plugins/record-file-sink"
    must unwrap-install javac -d "$plugins/build" -cp "$CACHE/jars/connect/*" "$HERE/unwrap/RecordFileSink.java" || { UNWRAP_INSTALL_RC=1; return 1; }
    must unwrap-install jar cf "$plugins/record-file-sink/record-file-sink.jar" -C "$plugins/build" . || { UNWRAP_INSTALL_RC=1; return 1; }
    rm -rf "$plugins/build"
    echo "$stamp" >"$plugins/.stamp"
  fi
  CONNECT_PLUGIN_PATH=${CONNECT_PLUGIN_PATH:+$CONNECT_PLUGIN_PATH,}$plugins
  UNWRAP_INSTALL_RC=0
  echo "unwrap: Connect plugins $(ls "$plugins/debezium-smt" | grep '^debezium-connect-plugins' | sed 's/\.jar$//') and record-file-sink in $plugins"
}

# unwrap_connect_url: the Connect worker's REST URL, from its properties.
unwrap_connect_url() {
  sed -n 's/^listeners=//p' "$WORK/connect/worker.properties" | head -n 1
}

# unwrap_icecdc NAME START TRANSFORMS: `icecdc run --once` of the demo table
# from START to topic unwrap-NAME-START.orders.
unwrap_icecdc() {
  local name=$1 start=$2 transforms=$3 dir=$WORK/unwrap
  cat >"$dir/$name-$start.yaml" <<EOF2
name: demo
catalog: {type: sql, uri: "$UNWRAP_URI", warehouse: "$UNWRAP_WH"}
tables: [{name: bookshop.orders, start: $start}]
format: debezium-connect-json
sink: {type: kafka, kafka: {brokers: ["$KAFKA"], topic: "unwrap-$name-$start.{table}", topic_partitions: 1}}
state: {path: "$dir/$name-$start.db"}
$transforms
EOF2
  must unwrap "$BIN" run --once -c "$dir/$name-$start.yaml"
}

unwrap_check() {
  [ "$UNWRAP_INSTALL_RC" = 0 ] || { echo "unwrap: its Connect plugins did not install (see above)"; return 1; }
  [ -n "$CONNECT_PID" ] && kill -0 "$CONNECT_PID" 2>/dev/null || { echo "unwrap: the Connect worker is not running"; return 1; }
  local dir=$WORK/unwrap url mode start topics= n rc
  rm -rf "$dir"
  mkdir -p "$dir"
  must unwrap "$BIN" demo --dir "$dir/demo" || return 1
  UNWRAP_URI=$(sed -n 's/^  uri: //p' "$dir/demo/icecdc.yaml")
  UNWRAP_WH=$(sed -n 's/^  warehouse: //p' "$dir/demo/icecdc.yaml")
  for start in earliest initial; do
    unwrap_icecdc envelope "$start" "" || return 1
    topics=${topics:+$topics,}unwrap-envelope-$start.orders
    for mode in $UNWRAP_MODES; do
      unwrap_icecdc "$mode" "$start" "transforms: {unwrap: {type: io.debezium.transforms.ExtractNewRecordState, delete.tombstone.handling.mode: $mode, add.fields: \"$UNWRAP_FIELDS\", add.headers: \"$UNWRAP_HEADERS\"}}" || return 1
      kcat -b "$KAFKA" -C -t "unwrap-$mode-$start.orders" -o beginning -e -q -J >"$dir/icecdc-$mode-$start.json" 2>>"$LOGS/unwrap.log" ||
        { echo "interop: command failed: kcat -b $KAFKA -C -t unwrap-$mode-$start.orders -o beginning -e -q -J (log $LOGS/unwrap.log)"; return 1; }
    done
  done
  url=$(unwrap_connect_url)
  wait_port "${url##*:}" 120 "$CONNECT_PID" || return 1
  for mode in $UNWRAP_MODES; do
    "$PY" - "$url" "$mode" "$topics" "$dir/smt-$mode.jsonl" "$UNWRAP_FIELDS" "$UNWRAP_HEADERS" >>"$LOGS/unwrap.log" 2>&1 <<'PY' || { echo "unwrap: could not add connector unwrap-$mode (log $LOGS/unwrap.log)"; return 1; }
import json, sys, time, urllib.error, urllib.request
url, mode, topics, out, fields, headers = sys.argv[1:]
cfg = {
    "connector.class": "io.icecdc.interop.RecordFileSink", "tasks.max": "1", "topics": topics, "file": out,
    "transforms": "unwrap", "transforms.unwrap.type": "io.debezium.transforms.ExtractNewRecordState",
    "transforms.unwrap.plugin.version": "3.6.1.Final",
    "transforms.unwrap.delete.tombstone.handling.mode": mode,
    "transforms.unwrap.add.fields": fields, "transforms.unwrap.add.headers": headers,
}
req = urllib.request.Request(url + "/connectors", data=json.dumps({"name": "unwrap-" + mode, "config": cfg}).encode(),
                             headers={"Content-Type": "application/json"}, method="POST")
# The worker answers 404 until its REST resources are up, after the port opens.
deadline = time.time() + 120
while True:
    try:
        print(urllib.request.urlopen(req, timeout=60).read().decode())
        break
    except urllib.error.HTTPError as e:
        body = e.read().decode()
        if e.code != 404 or time.time() > deadline:
            sys.exit("POST %s/connectors: %s %s" % (url, e.code, body))
    except urllib.error.URLError as e:
        if time.time() > deadline:
            sys.exit("POST %s/connectors: %s" % (url, e))
    time.sleep(1)
PY
  done
  (cd "$HERE" && "$PY" unwrap_compare.py --dir "$dir" --modes "$UNWRAP_MODES" --connect "$url") 2>"$LOGS/unwrap-compare.stderr"
  rc=$?
  if [ $rc -ne 0 ]; then
    tail -n 20 "$LOGS/unwrap-compare.stderr" | sed 's/^/    /'
    grep -m 5 ' ERROR ' "$LOGS/connect.log" | cut -c1-400 | sed 's/^/    connect.log: /'
  fi
  return $rc
}
