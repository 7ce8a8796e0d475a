# shellcheck shell=bash
# The aws-sinks part (issue 36), sourced by interop/run.sh (functions only).
#
# moto's server serves SQS, SNS and Kinesis on loopback (the stage's S3 and
# Glue server when it runs, else one of the part's own). The part runs the
# Go tests of sinks/awssink, sinks/sqs, sinks/sns and sinks/kinesis with
# ICECDC_REQUIRE_SINK_SERVERS=1 (a missing moto fails them; each test
# starts its own server), then interop/aws_sinks_e2e.py: `icecdc run` into
# an SQS queue, an SQS FIFO queue, an SNS FIFO topic (read through a
# subscribed SQS FIFO queue) and a Kinesis stream, each daemon SIGKILLed
# once and started again, every event compared by boto3 with
# `icecdc changes`.
#
#   awssinks_run   the whole part; alone:
#     bash -c '. interop/run.sh && awssinks_run'
AWS_SINKS_PID=

awssinks_run() {
  local t0 rc endpoint port
  t0=$(now)
  [ -x "$PY" ] || install_python >/dev/null || { echo "aws-sinks: the Python venv did not install"; return 1; }
  if ! "$PY" -c 'import moto.server, boto3' 2>/dev/null; then
    echo "aws-sinks: FAILED: moto and boto3 are not in the venv ($PY)"
    return 1
  fi
  build_icecdc || { echo "aws-sinks: icecdc did not build (log $LOGS/build-icecdc.log)"; return 1; }
  # The Go tests start moto with the python3 first on PATH: the venv's.
  (cd "$HERE/.." && PATH="$(dirname "$PY"):$PATH" ICECDC_REQUIRE_SINK_SERVERS=1 \
    go test -count=1 ./sinks/awssink/... ./sinks/sqs/ ./sinks/sns/ ./sinks/kinesis/) >"$LOGS/aws-sinks-go.log" 2>&1
  rc=$?
  sed 's/^/  /' "$LOGS/aws-sinks-go.log" | grep -E '^  (ok|FAIL|---|panic)'
  if [ $rc -ne 0 ]; then
    echo "interop: command failed (exit $rc): go test ./sinks/awssink/... ./sinks/sqs/ ./sinks/sns/ ./sinks/kinesis/"
    tail -n 30 "$LOGS/aws-sinks-go.log" | sed 's/^/    /'
  fi
  # A moto of its own, which the e2e stops for a minute (SIGSTOP): the
  # stage's (S3, Glue) must keep answering the other parts.
  port=$(free_port)
  "$PY" -m moto.server -H 127.0.0.1 -p "$port" >"$LOGS/aws-sinks-moto.log" 2>&1 &
  AWS_SINKS_PID=$!
  PIDS+=("$AWS_SINKS_PID")
  wait_port "$port" 60 "$AWS_SINKS_PID" || { echo "aws-sinks: moto did not start (log $LOGS/aws-sinks-moto.log)"; return 1; }
  endpoint=http://127.0.0.1:$port
  (cd "$HERE" && "$PY" aws_sinks_e2e.py --icecdc "$BIN" --endpoint "$endpoint" --work "$WORK/aws-sinks" \
    --outage "${ICECDC_SINKS_OUTAGE:-60}" --moto-pid "$AWS_SINKS_PID") 2>"$LOGS/aws-sinks-e2e.stderr"
  local e2e=$?
  [ $e2e -ne 0 ] && tail -n 20 "$LOGS/aws-sinks-e2e.stderr" | sed 's/^/    /'
  if [ -n "$AWS_SINKS_PID" ]; then
    stop_pid "$AWS_SINKS_PID"
    AWS_SINKS_PID=
  fi
  echo "aws-sinks: go tests exit $rc, e2e exit $e2e, in $(elapsed "$t0")s"
  [ $rc -eq 0 ] && [ $e2e -eq 0 ]
}
