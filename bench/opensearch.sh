#!/usr/bin/env bash
# Documents per second into a real OpenSearch node: `icecdc run --once`
# with `sink: {type: opensearch}` delivers a one-commit append of ROWS
# rows (default 1,000,000; bench/tables' "append" table, keyed by
# order_id) into a fresh index of the node the interop stage runs
# (OpenSearch 2.19.6 from Maven Central's jars, 512 MB heap, on loopback;
# interop/parts/opensearch.sh), with the sink's defaults (batch.max_docs
# 1000, batch.max_bytes 5 MiB, refresh false). Each run's document count
# is checked. The same commit through the file sink, run for run in turn,
# is the baseline: the ratio says what the node and the sink's requests
# cost. Medians of RUNS runs (default 3) of wall time, CPU time
# (user+sys) and the daemon's peak RSS, from /usr/bin/time -v; the node's
# RSS after the runs. The node runs on the same cores: wall time and
# documents/s are the pair's, documents per CPU second the daemon's.
#
#   bash bench/opensearch.sh
#   ICECDC_BENCH_ROWS=100000 RUNS=1 bash bench/opensearch.sh
#   OS_BATCH=5000 bash bench/opensearch.sh        # batch.max_docs
set -euo pipefail
cd "$(dirname "$0")/.."
rows=${ICECDC_BENCH_ROWS:-1000000}
runs=${RUNS:-3}
batch=${OS_BATCH:-1000}
[ -x /usr/bin/time ] || { echo "bench: /usr/bin/time (GNU time) is needed: apt-get install time" >&2; exit 1; }
# The node's functions (install, launch, wait, stop) and the stage's cache.
# shellcheck disable=SC1091
. interop/run.sh >/dev/null
tmp=$WORK/bench
mkdir -p "$tmp"
trap 'cleanup || :; rm -rf "$WORK"' EXIT
go build -o "$tmp/icecdc" ./cmd/icecdc
go build -o "$tmp/tables" ./bench/tables
opensearch_install >&2
opensearch_launch
echo "building a $rows-row append in $tmp/t" >&2
"$tmp/tables" -dir "$tmp/t" -files "" -rows "$rows" >"$tmp/tables.txt"
meta=$(awk '$1=="append" {print $2}' "$tmp/tables.txt" | sed 's|^file://||')
seq=$(awk '$1=="append" {print $3}' "$tmp/tables.txt")
opensearch_wait >&2

cat >"$tmp/os.yaml" <<YAML
name: bench
tables: [{name: shop.orders, metadata: "$meta", start: "sequence:$((seq - 1))"}]
sink: {type: opensearch, opensearch: {urls: ["$OS_URL"], index: bench, batch: {max_docs: $batch}}}
state: {path: "$tmp/os-state.db"}
YAML
cat >"$tmp/file.yaml" <<YAML
name: bench
tables: [{name: shop.orders, metadata: "$meta", start: "sequence:$((seq - 1))"}]
sink: {type: file, file: {path: "$tmp/events.jsonl"}}
state: {path: "$tmp/file-state.db"}
YAML

median() { sort -g | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}'; }
# once NAME CMD...: appends "wall_s cpu_s rss_mib" of CMD to $tmp/NAME.all.
once() {
  local name=$1
  shift
  /usr/bin/time -v -o "$tmp/time.txt" "$@" >"$tmp/out" 2>"$tmp/err" || { tail -n 20 "$tmp/err" >&2; exit 1; }
  awk -F': ' '
    /Elapsed \(wall clock\)/ { n=split($2,p,":"); w=0; for(i=1;i<=n;i++) w=w*60+p[i] }
    /User time/ { u=$2 } /System time/ { s=$2 } /Maximum resident/ { r=$2 }
    END { printf "%.3f %.3f %.1f\n", w, u+s, r/1024 }' "$tmp/time.txt" >>"$tmp/$name.all"
}
col() { cut -d' ' -f"$2" "$tmp/$1.all" | median; }
count() {
  curl -sf -XPOST "$OS_URL/bench/_refresh" >/dev/null
  curl -sf "$OS_URL/bench/_count" | python3 -c 'import json, sys; print(json.load(sys.stdin)["count"])'
}

: >"$tmp/os.all"
: >"$tmp/file.all"
for _ in $(seq "$runs"); do
  curl -s -XDELETE "$OS_URL/bench" >/dev/null
  rm -f "$tmp/os-state.db" "$tmp/file-state.db" "$tmp/events.jsonl"
  once os "$tmp/icecdc" run --once -c "$tmp/os.yaml"
  n=$(count)
  [ "$n" -eq "$rows" ] || { echo "bench: the index holds $n documents, want $rows" >&2; exit 1; }
  once file "$tmp/icecdc" run --once -c "$tmp/file.yaml"
  [ "$(wc -l <"$tmp/events.jsonl")" -eq "$rows" ] || { echo "bench: the file sink wrote $(wc -l <"$tmp/events.jsonl") events" >&2; exit 1; }
done
paste -d' ' "$tmp/os.all" "$tmp/file.all" | awk '{ printf "%.4f %.4f\n", $1 / $4, $2 / $5 }' >"$tmp/ratio"
printf '| case | wall s | CPU s | peak RSS MiB | documents/s | documents per CPU s |\n|---|---|---|---|---|---|\n'
printf '| run --once, sink opensearch (batch.max_docs %s), %s-row append | %s | %s | %s | %.0f | %.0f |\n' "$batch" "$rows" \
  "$(col os 1)" "$(col os 2)" "$(col os 3)" "$(awk -v r="$rows" -v w="$(col os 1)" 'BEGIN { print r / w }')" \
  "$(awk -v r="$rows" -v c="$(col os 2)" 'BEGIN { print r / c }')"
printf '| run --once, sink file, the same commit | %s | %s | %s | %.0f | %.0f |\n' \
  "$(col file 1)" "$(col file 2)" "$(col file 3)" "$(awk -v r="$rows" -v w="$(col file 1)" 'BEGIN { print r / w }')" \
  "$(awk -v r="$rows" -v c="$(col file 2)" 'BEGIN { print r / c }')"
printf '| opensearch / file (run by run, medians) | %s× | %s× | | | |\n' "$(cut -d' ' -f1 "$tmp/ratio" | median)" \
  "$(cut -d' ' -f2 "$tmp/ratio" | median)"
echo "node: OpenSearch $OPENSEARCH_VERSION, heap 512 MB, RSS $(($(ps -o rss= -p "$OS_PID") / 1024)) MiB after the runs;" \
  "index size $(curl -sf "$OS_URL/_cat/indices/bench?h=store.size"); $runs runs, $(nproc) cores"
opensearch_stop
