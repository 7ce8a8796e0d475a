#!/usr/bin/env bash
# Times `icecdc changes` on the one-commit bulk tables that
# BenchmarkBulkChanges builds, for one or more icecdc binaries, runs
# interleaved so that every binary sees the same machine: the median of
# RUNS runs (default 5) of wall time, CPU time (user+sys) and peak RSS, from
# /usr/bin/time. Each run's event count is checked.
#
#   ICECDC_BENCH_TABLES=/tmp/bulk go test ./source -run '^$' -bench BulkChanges -benchtime 1x
#   bash bench/bulk_changes.sh /tmp/bulk ./icecdc-before ./icecdc-after
#
# (ICECDC_BENCH_10M=1 on the go test adds the 10,000,000-row tables.)
# Extra arguments for changes go in CHANGES_ARGS (e.g. "--max-memory 64MiB").
set -euo pipefail
dir=${1:?usage: bulk_changes.sh TABLES_DIR BINARY...}
shift
[ $# -gt 0 ] || { echo "usage: bulk_changes.sh TABLES_DIR BINARY..." >&2; exit 2; }
runs=${RUNS:-5}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

median() { sort -g | awk '{v[NR]=$1} END {print v[int((NR+1)/2)]}'; }

printf '%-14s %-28s %9s %9s %9s %12s %14s\n' table binary wall_s cpu_s rss_MiB events/s events/cpu_s
for t in "$dir"/*/; do
	[ -f "$t/METADATA" ] || continue
	name=$(basename "$t")
	meta=$(cat "$t/METADATA")
	k=${name#*-}
	want=$(( ${k%k} * 1000 ))
	for ((i = 0; i < runs; i++)); do
		for b in "$@"; do
			id=$(echo "$b" | tr '/.' '__')
			# shellcheck disable=SC2086
			n=$(/usr/bin/time -f '%e %U %S %M' -o "$tmp/t" "$b" changes --metadata "$meta" --from-seq 1 ${CHANGES_ARGS:-} | wc -l)
			if [ "$n" -ne "$want" ]; then
				echo "$name: $b printed $n events, want $want" >&2
				exit 1
			fi
			read -r wall user sys rss <"$tmp/t"
			echo "$wall" >>"$tmp/$id.wall"
			echo "$user $sys" | awk '{print $1 + $2}' >>"$tmp/$id.cpu"
			echo "$rss" >>"$tmp/$id.rss"
		done
	done
	for b in "$@"; do
		id=$(echo "$b" | tr '/.' '__')
		wall=$(median <"$tmp/$id.wall")
		cpu=$(median <"$tmp/$id.cpu")
		rss=$(median <"$tmp/$id.rss")
		printf '%-14s %-28s %9.2f %9.2f %9.0f %12.0f %14.0f\n' "$name" "$b" "$wall" "$cpu" "$(echo "$rss" | awk '{print $1 / 1024}')" \
			"$(echo "$want $wall" | awk '{print $1 / $2}')" "$(echo "$want $cpu" | awk '{print $1 / $2}')"
		rm -f "$tmp/$id".*
	done
done
