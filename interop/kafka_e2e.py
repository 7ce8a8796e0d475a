"""kafka e2e: `icecdc run` -> a real Kafka broker -> kcat, exactly once across SIGKILL.

The Spark scenario tables of the local catalog (namespace interop) are
streamed with delivery exactly-once, ten events per transaction (chunk 10).
The first daemon is SIGKILLed as soon as a read_committed consumer sees the
first events of the bulk table (thousands of events: the kill lands
mid-stream, and the test fails if it did not); a second daemon on the same
state file and transactional id finishes the stream. Then kcat reads every topic with read_committed: the
event ids (header id) must be exactly those of `icecdc changes` for the
table, once each and in the same order, and every delete must be followed
by its tombstone.
"""

import argparse
import json
import os
import signal
import sqlite3
import subprocess
import sys
import time
from collections import Counter

NS = "interop"
BULK = "bulk"  # the table whose stream is interrupted


def expected(icecdc, db, wh, table):
    """(event ids in order, set of delete keys) from `icecdc changes`."""
    p = subprocess.run([icecdc, "changes", "--catalog-type", "sql", "--catalog-uri", f"file:{db}",
                        "--warehouse", f"file://{wh}", "--table", f"{NS}.{table}"],
                       capture_output=True, text=True, check=True)
    ids = []
    for line in p.stdout.splitlines():
        ev = json.loads(line)
        s = ev["source"]
        ids.append(f"{s['table_uuid']}:{s['sequence_number']}:{s['row_id']}:{ev['op']}")
    return ids


def consume(brokers, topic, committed=True):
    """[(headers dict, value or None)] of a topic, from the beginning."""
    p = subprocess.run(["kcat", "-b", brokers, "-C", "-t", topic, "-o", "beginning", "-e", "-q", "-Z",
                        "-X", f"isolation.level={'read_committed' if committed else 'read_uncommitted'}",
                        "-X", "fetch.wait.max.ms=5",
                        "-f", "%h\t%s\n"], capture_output=True, text=True, timeout=60)
    if p.returncode != 0 and "Unknown topic" not in p.stderr:
        raise RuntimeError(f"kcat -C -t {topic} exit {p.returncode}: {p.stderr.strip()[-500:]}")
    out = []
    for line in p.stdout.splitlines():
        hdr, _, val = line.partition("\t")
        headers = dict(h.split("=", 1) for h in hdr.split(",") if "=" in h) if hdr and hdr != "NULL" else {}
        out.append((headers, None if val == "NULL" else val))
    return out


def committed_count(brokers, topics):
    return sum(sum(1 for h, _ in consume(brokers, t) if "id" in h) for t in topics)


def start(icecdc, cfg, log):
    return subprocess.Popen([icecdc, "run", "-c", cfg], stdout=log, stderr=subprocess.STDOUT)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--icecdc", required=True)
    ap.add_argument("--brokers", required=True)
    ap.add_argument("--work", required=True)
    ap.add_argument("--catalog-db", required=True)
    ap.add_argument("--warehouse", required=True)
    a = ap.parse_args()
    os.makedirs(a.work, exist_ok=True)

    with sqlite3.connect(a.catalog_db) as c:
        tables = [r[0] for r in c.execute(
            "SELECT table_name FROM iceberg_tables WHERE catalog_name = 'local' AND table_namespace = ? ORDER BY 1", (NS,))]
    want = {t: expected(a.icecdc, a.catalog_db, a.warehouse, t) for t in tables}
    topics = {t: f"icecdc.{NS}.{t}" for t in tables}
    total = sum(len(v) for v in want.values())

    cfg = os.path.join(a.work, "icecdc.yaml")
    with open(cfg, "w") as fh:
        fh.write(f"""name: interop-e2e
catalog: {{name: local, type: sql, uri: "file:{a.catalog_db}", warehouse: "file://{a.warehouse}"}}
tables:
  - name: "{NS}.*"
    start: earliest
poll: {{interval: 100ms}}
chunk: 10
sink:
  type: kafka
  kafka: {{brokers: ["{a.brokers}"], delivery: exactly-once, tombstones: true}}
state: {{path: "{os.path.join(a.work, 'state.db')}"}}
""")
    log = open(os.path.join(a.work, "icecdc-run.log"), "w")

    t0 = time.monotonic()
    if BULK not in tables:
        print(f"kafka e2e: FAILED: no table {NS}.{BULK} to interrupt (tables: {tables})")
        return 1
    d1 = start(a.icecdc, cfg, log)
    while time.monotonic() - t0 < 90 and d1.poll() is None:
        if committed_count(a.brokers, [topics[BULK]]):
            break
        time.sleep(0.02)
    if d1.poll() is not None:
        print(f"kafka e2e: FAILED: the first `icecdc run` exited with {d1.returncode} (log {log.name})")
        return 1
    d1.send_signal(signal.SIGKILL)
    d1.wait()
    at_kill = committed_count(a.brokers, topics.values())
    bulk_at_kill = committed_count(a.brokers, [topics[BULK]])
    print(f"kafka e2e: SIGKILLed the first daemon after {time.monotonic() - t0:.1f}s: "
          f"{at_kill}/{total} events committed, {bulk_at_kill}/{len(want[BULK])} of {BULK}")
    if bulk_at_kill >= len(want[BULK]):
        print(f"kafka e2e: FAILED: the kill came after {BULK}'s stream had finished: the restart was not exercised")
        return 1

    t1 = time.monotonic()
    d2 = start(a.icecdc, cfg, log)
    n, first_new = at_kill, None
    while time.monotonic() - t1 < 120 and d2.poll() is None and n < total:
        time.sleep(0.3)
        n = committed_count(a.brokers, topics.values())
        if first_new is None and n > at_kill:
            first_new = time.monotonic() - t1
    time.sleep(1.5)  # anything more would be a duplicate: give it time to show
    d2.send_signal(signal.SIGTERM)
    try:
        rc = d2.wait(timeout=40)
    except subprocess.TimeoutExpired:
        d2.kill()
        rc = "killed after 40s"
    resumed = f"{first_new:.1f}s" if first_new is not None else "never"
    print(f"kafka e2e: second daemon: first new event committed after {resumed}, "
          f"{n}/{total} after {time.monotonic() - t1:.1f}s, stopped by SIGTERM (exit {rc})")

    problems, committed, uncommitted = [], 0, 0
    for t in tables:
        recs = consume(a.brokers, topics[t])
        committed += len(recs)
        uncommitted += len(consume(a.brokers, topics[t], committed=False))
        got = [h["id"] for h, _ in recs if "id" in h]
        if got != want[t]:
            dup = sorted(i for i, n in Counter(got).items() if n > 1)
            gs, ws = set(got), set(want[t])
            missing = [i for i in want[t] if i not in gs]
            extra = [i for i in got if i not in ws]
            problems.append(f"{topics[t]}: {len(got)} events, want {len(want[t])}; duplicates {dup[:5]}, "
                            f"missing {missing[:5]}, unexpected {extra[:5]}"
                            + ("" if dup or missing or extra else "; order differs"))
        for i, (h, _) in enumerate(recs):
            if h.get("op") == "d" and (i + 1 >= len(recs) or recs[i + 1][1] is not None or "id" in recs[i + 1][0]):
                problems.append(f"{topics[t]}: delete {h.get('id')} is not followed by its tombstone")
                break
    if problems:
        print("kafka e2e: FAILED")
        for p in problems:
            print("  " + p)
        return 1
    print(f"kafka e2e: {total} events of {len(tables)} tables read back by kcat (read_committed) exactly once, "
          f"in commit order, each delete followed by its tombstone, across a SIGKILL after {at_kill} committed "
          f"events; read_uncommitted sees {uncommitted - committed} records more (those of aborted transactions)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
