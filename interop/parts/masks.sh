# masks (issue 23): Debezium's own column mappers — MaskStrings (hash v1
# and v2, mask with N chars) and TruncateColumn of debezium-connector-common,
# from the connect part's jars — compute the masking vectors again
# (interop/maven/masks/MaskVectors.java); they must equal
# shape/testdata/debezium-masks.jsonl, which shape's tests hold icecdc's masks
# to. Then Debezium's ByLogicalTableRouter routes the records of
# debezium/testdata/routed.jsonl as icecdc wrote them unrouted, and must
# give the records icecdc routes itself, and the router chained with
# ExtractNewRecordState in both orders over debezium/testdata/
# routed-unwrapped.jsonl the records icecdc writes with the same transforms
# (interop/maven/masks/RouteCheck.java).
# Functions only; interop/run.sh sources this file. Alone:
#   CI=true bash -c '. interop/run.sh && install_connect && part masks masks_vectors'

masks_vectors() {
  local dir=$CACHE/jars/connect out=$WORK/masks cp="" jar
  if ! command -v javac >/dev/null; then
    if [ "${CI:-}" = true ]; then
      echo "masks: FAILED: javac is needed (a JDK; Java 17 runs Debezium 3.6)"
      return 1
    fi
    echo "masks: skipped: javac is missing; CI runs it"
    return 3
  fi
  for jar in debezium-connector-common debezium-api debezium-util connect-api slf4j-api; do
    if ! ls "$dir/$jar"-[0-9]*.jar >/dev/null 2>&1; then
      echo "masks: FAILED: $jar is not among the connect part's jars ($dir; install-connect makes them)"
      return 1
    fi
    cp="$cp$(ls "$dir/$jar"-[0-9]*.jar | head -n 1):"
  done
  mkdir -p "$out/classes"
  must masks javac -d "$out/classes" -cp "$cp" "$HERE/maven/masks/MaskVectors.java" || return 1
  # The v2 hash takes the JVM's default charset: UTF-8, as on Java 18+.
  if ! java -Dfile.encoding=UTF-8 -cp "$cp$out/classes" MaskVectors >"$out/vectors.jsonl" 2>>"$LOGS/masks.log"; then
    echo "masks: FAILED: MaskVectors did not run:"
    tail -n 20 "$LOGS/masks.log" | sed 's/^/    /'
    return 1
  fi
  local version
  version=$(ls "$dir" | sed -n 's/^debezium-connector-common-\(.*\)\.jar$/\1/p')
  if ! diff -u "$ROOT/shape/testdata/debezium-masks.jsonl" "$out/vectors.jsonl" >"$out/diff"; then
    echo "masks: FAILED: Debezium $version's masks differ from shape/testdata/debezium-masks.jsonl:"
    head -n 30 "$out/diff" | sed 's/^/    /'
    return 1
  fi
  echo "masks: $(wc -l <"$out/vectors.jsonl") values masked, hashed and truncated by Debezium $version equal shape/testdata/debezium-masks.jsonl (icecdc's TestMasksEqualDebeziums holds its output to them)"
  local all
  all=$(ls "$dir"/*.jar | tr '\n' ':')
  must masks javac -d "$out/classes" -cp "$all" "$HERE/maven/masks/RouteCheck.java" || return 1
  # The topics and pattern TestRoutedRecords and TestRoutedUnwrap route with.
  java -cp "$all$out/classes" RouteCheck "$ROOT/debezium/testdata/routed.jsonl" 'icecdc\.bookshop\.orders_(eu|us)' 'icecdc.bookshop.orders' \
    "$ROOT/debezium/testdata/routed-unwrapped.jsonl" \
    >"$out/routes.txt" 2>>"$LOGS/masks.log"
  local rc=$?
  sed 's/^/masks: /' "$out/routes.txt"
  [ $rc -eq 0 ] || { echo "masks: FAILED: Debezium's ByLogicalTableRouter (alone or chained with ExtractNewRecordState) routes differently (or did not run; $LOGS/masks.log)"; return 1; }
}
