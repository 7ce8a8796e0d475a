#!/usr/bin/env bash
# Builds the benchmark tables under a temporary directory and prints the
# table of whole-process costs: wall time, CPU (user+sys) and peak RSS of
# each command, measured with /usr/bin/time -v, medians of ICECDC_BENCH_RUNS
# (default 5), with ratios taken in the same run.
#
#   bash bench/run.sh                       # 10 / 1,000 / 10,000 files, 1M-row tables
#   ICECDC_BENCH_FILES=10,1000,10000,100000 bash bench/run.sh   # + the 100,000-file table (minutes to build)
#   ICECDC_BENCH_ROWS=100000 bash bench/run.sh                  # smaller row tables
set -euo pipefail
cd "$(dirname "$0")/.."
runs=${ICECDC_BENCH_RUNS:-5}
files=${ICECDC_BENCH_FILES:-10,1000,10000}
rows=${ICECDC_BENCH_ROWS:-1000000}
[ -x /usr/bin/time ] || { echo "bench: /usr/bin/time (GNU time) is needed: apt-get install time" >&2; exit 1; }
tmp=$(mktemp -d "${TMPDIR:-/tmp}/icecdc-bench.XXXXXX")
trap 'rm -rf "$tmp"' EXIT
go build -o "$tmp/icecdc" ./cmd/icecdc
go build -o "$tmp/tables" ./bench/tables
go build -o "$tmp/kfake" ./bench/kfake
echo "building tables in $tmp (files: $files; rows: $rows)" >&2
t0=$(date +%s)
"$tmp/tables" -dir "$tmp/t" -files "$files" -rows "$rows" > "$tmp/tables.txt"
echo "built in $(( $(date +%s) - t0 ))s" >&2
meta() { awk -v n="$1" '$1==n {print $2}' "$tmp/tables.txt" | sed 's|^file://||'; }
head_seq() { awk -v n="$1" '$1==n {print $3}' "$tmp/tables.txt"; }

# once NAME CMD...: runs CMD once, stdout to $tmp/out, and appends
# "wall_s cpu_s rss_mib" to $tmp/NAME.all.
once() {
  local name=$1; shift
  /usr/bin/time -v -o "$tmp/time.txt" "$@" > "$tmp/out" 2> "$tmp/err" || { cat "$tmp/err" >&2; exit 1; }
  awk -F': ' '
    /Elapsed \(wall clock\)/ { n=split($2,p,":"); w=0; for(i=1;i<=n;i++) w=w*60+p[i] }
    /User time/ { u=$2 } /System time/ { s=$2 } /Maximum resident/ { r=$2 }
    END { printf "%.4f %.4f %.1f\n", w, u+s, r/1024 }' "$tmp/time.txt" >> "$tmp/$name.all"
}
median() { sort -g | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}'; }
# summarize NAME: the medians "wall_s cpu_s rss_mib" of $tmp/NAME.all in $tmp/NAME.
summarize() {
  for col in 1 2 3; do cut -d' ' -f$col "$tmp/$1.all" | median; done | paste -sd' ' > "$tmp/$1"
}
# measure NAME CMD...: runs CMD $runs times and summarizes.
measure() {
  local name=$1; shift
  : > "$tmp/$name.all"
  for _ in $(seq "$runs"); do once "$name" "$@"; done
  summarize "$name"
}
# pairratio A B: the medians of the run-by-run ratios A/B ("wall cpu") of
# two commands measured in turn, A B A B …, so that a drift of the
# machine's speed moves both sides of each ratio.
pairratio() {
  paste -d' ' "$tmp/$1.all" "$tmp/$2.all" > "$tmp/pairs"
  for col in 1 2; do awk -v c="$col" '{ printf "%.4f\n", $c / $(c+3) }' "$tmp/pairs" | median; done | paste -sd' '
}
get() { cut -d' ' -f"$2" "$tmp/$1"; }
ratio() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%.2f", a/b }'; }


printf '| case | wall s | CPU s | peak RSS MiB | ratio (wall / CPU) |\n|---|---|---|---|---|\n'
# 1. One small commit, fresh process, by table size.
base=""
for n in ${files//,/ }; do
  m=small$n
  measure "$m" "$tmp/icecdc" changes --metadata "$(meta "$m")" --from-seq $(( $(head_seq "$m") - 1 ))
  [ -n "$base" ] || base=$m
  printf '| small commit, fresh process, %s files | %s | %s | %s | %s× / %s× of %s files |\n' "$n" "$(get "$m" 1)" "$(get "$m" 2)" "$(get "$m" 3)" \
    "$(ratio "$(get "$m" 1)" "$(get "$base" 1)")" "$(ratio "$(get "$m" 2)" "$(get "$base" 2)")" "${base#small}"
done
# 2. A replace snapshot against a run that processes no snapshot.
for n in ${files//,/ }; do
  m=replace$n
  [ -n "$(meta "$m")" ] || continue
  s=$(head_seq "$m")
  measure "$m" "$tmp/icecdc" changes --metadata "$(meta "$m")" --from-seq $(( s - 1 ))
  measure "$m-none" "$tmp/icecdc" changes --metadata "$(meta "$m")" --from-seq "$s"
  printf '| replace over %s files vs no snapshot | %s vs %s | %s vs %s | %s vs %s | %s× / %s× |\n' "$n" \
    "$(get "$m" 1)" "$(get "$m-none" 1)" "$(get "$m" 2)" "$(get "$m-none" 2)" "$(get "$m" 3)" "$(get "$m-none" 3)" \
    "$(ratio "$(get "$m" 1)" "$(get "$m-none" 1)")" "$(ratio "$(get "$m" 2)" "$(get "$m-none" 2)")"
done
[ "$rows" -gt 0 ] || exit 0
# 3. The row tables through changes, and the append through the daemon's file sink.
for k in delete update append; do
  measure "$k" "$tmp/icecdc" changes --metadata "$(meta "$k")" --from-seq $(( $(head_seq "$k") - 1 ))
  printf '| changes, %s rows %s | %s | %s | %s | %.0f events/s |\n' "$rows" "$k" "$(get "$k" 1)" "$(get "$k" 2)" "$(get "$k" 3)" \
    "$(awk -v r="$rows" -v w="$(get "$k" 1)" 'BEGIN { print r/w }')"
done
cat > "$tmp/run.yaml" <<YAML
name: bench
tables: [{name: shop.orders, metadata: "$(meta append)", start: sequence:$(( $(head_seq append) - 1 ))}]
${ICECDC_BENCH_CHUNK:+chunk: $ICECDC_BENCH_CHUNK}
sink: {type: file, file: {path: "$tmp/events.jsonl"}}
state: {path: "$tmp/state.db"}
http: {listen: ""}
YAML
printf '#!/bin/sh\nrm -f "%s/events.jsonl" "%s/state.db"\nexec "%s/icecdc" run -c "%s/run.yaml" --once\n' "$tmp" "$tmp" "$tmp" "$tmp" > "$tmp/runonce"
chmod +x "$tmp/runonce"
# run --once and changes in turn, for the ratio of each pair.
: > "$tmp/runfile.all"; : > "$tmp/appendpair.all"
for _ in $(seq "$runs"); do
  once runfile "$tmp/runonce"
  once appendpair "$tmp/icecdc" changes --metadata "$(meta append)" --from-seq $(( $(head_seq append) - 1 ))
done
summarize runfile
[ "$(wc -l < "$tmp/events.jsonl")" -eq "$rows" ] || { echo "bench: run --once wrote $(wc -l < "$tmp/events.jsonl") events, want $rows" >&2; exit 1; }
r=$(pairratio runfile appendpair)
printf '| run --once to the file sink, %s rows append | %s | %s | %s | %.0f events/s; %.2f× / %.2f× of changes (run by run) |\n' "$rows" "$(get runfile 1)" "$(get runfile 2)" "$(get runfile 3)" \
  "$(awk -v r="$rows" -v w="$(get runfile 1)" 'BEGIN { print r/w }')" "${r% *}" "${r#* }"
# 4. The same append into Kafka: a kfake broker (and an in-memory schema
# registry for debezium-avro) in its own process, a new one per run (not
# timed), at least once with acks=all, the formats in turn within each run
# so that their ratios are taken run by run; bytes/record are the keys and
# values of the topic, read back when the broker stops.
kfmts="debezium-json debezium-connect-json debezium-avro"
for fmt in $kfmts; do : > "$tmp/kafka-$fmt.all"; : > "$tmp/bytes-$fmt.all"; done
for _ in $(seq "$runs"); do
  for fmt in $kfmts; do
    "$tmp/kfake" -registry -stats "$tmp/kstats" > "$tmp/kfake.addr" & kpid=$!
    for _ in $(seq 50); do [ "$(wc -l < "$tmp/kfake.addr")" -ge 2 ] && break; sleep 0.1; done
    cat > "$tmp/runk.yaml" <<YAML
name: bench
tables: [{name: shop.orders, metadata: "$(meta append)", start: sequence:$(( $(head_seq append) - 1 ))}]
format: $fmt
sink: {type: kafka, kafka: {brokers: ["$(sed -n 1p "$tmp/kfake.addr")"], topic: bench}}
$([ "$fmt" = debezium-avro ] && echo "schema_registry: {url: \"$(sed -n 2p "$tmp/kfake.addr")\"}")
state: {path: "$tmp/statek.db"}
http: {listen: ""}
YAML
    rm -f "$tmp/statek.db" "$tmp/kstats"
    once "kafka-$fmt" "$tmp/icecdc" run -c "$tmp/runk.yaml" --once
    kill "$kpid"; wait "$kpid" 2>/dev/null || true; rm -f "$tmp/kfake.addr"
    read -r recs bytes < "$tmp/kstats"
    [ "$recs" -eq "$rows" ] || { echo "bench: $fmt: $recs records in Kafka, want $rows" >&2; exit 1; }
    awk -v b="$bytes" -v r="$recs" 'BEGIN { printf "%.1f\n", b/r }' >> "$tmp/bytes-$fmt.all"
  done
done
for fmt in $kfmts; do
  summarize "kafka-$fmt"
  bpr=$(median < "$tmp/bytes-$fmt.all")
  echo "$bpr" > "$tmp/bpr-$fmt"
  printf '| run --once to Kafka (kfake, own process), %s rows append, %s | %s | %s | %s | %.0f events/s; %s bytes/record |\n' "$rows" "$fmt" \
    "$(get "kafka-$fmt" 1)" "$(get "kafka-$fmt" 2)" "$(get "kafka-$fmt" 3)" "$(awk -v r="$rows" -v w="$(get "kafka-$fmt" 1)" 'BEGIN { print r/w }')" "$bpr"
done
for fmt in debezium-connect-json debezium-json; do
  r=$(pairratio kafka-debezium-avro "kafka-$fmt")
  printf '| debezium-avro vs %s into Kafka (run by run) | | | | %.2f× wall / %.2f× CPU; %.2f× bytes/record |\n' "$fmt" "${r% *}" "${r#* }" \
    "$(awk -v a="$(cat "$tmp/bpr-debezium-avro")" -v b="$(cat "$tmp/bpr-$fmt")" 'BEGIN { print a/b }')"
done
