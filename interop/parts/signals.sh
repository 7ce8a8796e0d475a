# signals (issue 23): a signal-driven incremental snapshot with a row
# filter on the real broker: `go test ./internal/daemontest -run
# '^TestSignalSnapshotResumesAfterKill$'` with ICECDC_KAFKA_BROKERS. The
# daemon reads Debezium's execute-snapshot record from a signal topic of
# its own on the broker, is SIGKILLed in the middle of the read and
# restarted; the read resumes by index, is not started twice, and delivers
# exactly the live rows the filter keeps (checked against the table).
signals_e2e() {
  [ -n "${KAFKA:-}" ] || { echo "signals: no broker"; return 1; }
  local t0 rc
  t0=$(date +%s)
  (cd "$ROOT" && ICECDC_KAFKA_BROKERS=$KAFKA \
    go test ./internal/daemontest -run '^TestSignalSnapshotResumesAfterKill$' -count=1 -v -timeout 10m) >"$LOGS/signals.log" 2>&1
  rc=$?
  grep -E 'signals_test.go:[0-9]+: |^(--- |ok|FAIL)' "$LOGS/signals.log" | sed 's/^ *//; s/^/  /'
  [ $rc -ne 0 ] && tail -n 30 "$LOGS/signals.log" | sed 's/^/    /'
  echo "signals: $(($(date +%s) - t0))s against the broker at $KAFKA"
  return $rc
}
