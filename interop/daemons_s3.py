"""`icecdc run` on tables in S3 (issue 8): two daemons, two checks.

  compose  The daemon run.sh started with examples/icecdc.compose.yaml (the
           config docker-compose.yml mounts) before Spark created any table:
           its `tables: shop.*` matched nothing, so it must have waited,
           saying so, and then streamed shop.orders (REST catalog, warehouse
           on S3, keys vended by the catalog) to Kafka while Spark wrote it.
           kcat (read_committed) must read back exactly the events of
           `icecdc changes`, in order, each delete followed by its tombstone;
           the daemon must be ready (/readyz), and the S3 secret must appear
           neither in its log nor in /status.
  s3-run   `icecdc run` with a file sink on every table of the JDBC catalog
           whose warehouse is on S3 (interop.*, catalog s3): the file must
           hold exactly the events of `icecdc changes`, table by table, in
           order; SIGTERM must stop it with exit 0.
"""

import argparse
import json
import os
import signal
import sqlite3
import subprocess
import sys
import time
import urllib.error
import urllib.request

import kafka_e2e
import scenarios
import stores


def event_id(ev):
    s = ev["source"]
    return f"{s['table_uuid']}:{s['sequence_number']}:{s['row_id']}:{ev['op']}"


def expected(icecdc, args):
    """Event ids of `icecdc changes` (the reference), in order."""
    p = subprocess.run([icecdc, "changes"] + args, capture_output=True, text=True, env=stores.clean_env(), timeout=300)
    if p.returncode != 0:
        raise RuntimeError(f"icecdc changes {' '.join(args)}: exit {p.returncode}: {p.stderr.strip()[-1000:]}")
    return [event_id(json.loads(ln)) for ln in p.stdout.splitlines() if ln.strip()]


def http_get(url):
    try:
        with urllib.request.urlopen(url, timeout=10) as r:
            return r.status, r.read().decode()
    except urllib.error.HTTPError as err:
        return err.code, err.read().decode()


def secret_leaks(where, text):
    return [f"the S3 secret key appears in {where}"] if stores.SECRET_KEY in text else []


def compose(a):
    ns, name = scenarios.COMPOSE_TABLE
    table, topic = f"{ns}.{name}", f"icecdc.{ns}.{name}"
    want = expected(a.icecdc, stores.icecdc_args("rests3", table, a.s3_endpoint, rest_s3_uri=a.rest_s3_uri))
    t0 = time.monotonic()
    recs = []
    while time.monotonic() - t0 < 60:
        recs = kafka_e2e.consume(a.brokers, topic)
        if sum(1 for h, _ in recs if "id" in h) >= len(want):
            break
        time.sleep(0.5)
    time.sleep(1.5)  # anything more would be a duplicate: give it time to show
    recs = kafka_e2e.consume(a.brokers, topic)
    got = [h["id"] for h, _ in recs if "id" in h]
    problems = []
    if got != want:
        problems.append(f"{topic}: {len(got)} events, want {len(want)} (first difference at "
                        f"{next((i for i, (g, w) in enumerate(zip(got, want)) if g != w), min(len(got), len(want)))})")
    for i, (h, _) in enumerate(recs):
        if h.get("op") == "d" and (i + 1 >= len(recs) or recs[i + 1][1] is not None or "id" in recs[i + 1][0]):
            problems.append(f"{topic}: delete {h.get('id')} is not followed by its tombstone")
            break
    code, body = http_get(f"http://{a.http}/readyz")
    if code != 200:
        problems.append(f"/readyz answered {code}: {body.strip()[:300]}")
    code, status = http_get(f"http://{a.http}/status")
    if code != 200:
        problems.append(f"/status answered {code}")
    problems += secret_leaks("/status", status)
    with open(a.log) as fh:
        log = fh.read()
    problems += secret_leaks(f"the daemon's log {a.log}", log)
    msgs = [json.loads(ln).get("msg", "") for ln in log.splitlines() if ln.startswith("{")]
    waited = next((i for i, m in enumerate(msgs) if m.startswith("no table to follow yet")), None)
    found = next((i for i, m in enumerate(msgs) if m.startswith("tables found")), None)
    if waited is None or found is None or found < waited:
        problems.append(f"the log does not show the wait for shop.* and then the table found (messages: {msgs[:8]})")
    if problems:
        print("compose: FAILED: icecdc run -c examples/icecdc.compose.yaml")
        for p in problems:
            print("  " + p)
        return 1
    print(f"compose: icecdc run -c examples/icecdc.compose.yaml (REST catalog, warehouse on S3, keys vended by the "
          f"catalog) waited for shop.* before Spark created {table}, then followed it while Spark wrote it: "
          f"{len(got)}/{len(want)} events read back by kcat (read_committed) in order, each delete followed by its "
          f"tombstone; /readyz 200; no secret in the log or /status")
    return 0


def s3_run(a):
    with sqlite3.connect(a.s3_catalog_db) as c:
        tables = [f"{r[0]}.{r[1]}" for r in c.execute(
            "SELECT table_namespace, table_name FROM iceberg_tables WHERE catalog_name = 's3' ORDER BY 1, 2")]
    if not tables:
        print(f"s3 run: FAILED: no table in the S3 JDBC catalog {a.s3_catalog_db}")
        return 1
    want = {t: expected(a.icecdc, stores.icecdc_args("s3", t, a.s3_endpoint, a.s3_catalog_db)) for t in tables}
    total = sum(len(v) for v in want.values())
    os.makedirs(a.work, exist_ok=True)
    events = os.path.join(a.work, "events.jsonl")
    props = "\n".join(f"    {k}: \"{v}\"" for k, v in stores.s3_props(a.s3_endpoint).items())
    cfg = os.path.join(a.work, "icecdc.yaml")
    with open(cfg, "w") as fh:
        fh.write(f"""name: interop-s3
catalog:
  name: s3
  type: sql
  uri: "file:{a.s3_catalog_db}"
  warehouse: "{stores.warehouse('s3')}"
  properties:
{props}
tables:
  - name: "{scenarios.NS}.*"
    start: earliest
poll: {{interval: 200ms}}
sink:
  type: file
  file: {{path: "{events}"}}
state: {{path: "{os.path.join(a.work, 'state.db')}"}}
""")
    log_path = os.path.join(a.work, "icecdc-run.log")
    t0 = time.monotonic()
    with open(log_path, "w") as log:
        d = subprocess.Popen([a.icecdc, "run", "-c", cfg], stdout=log, stderr=subprocess.STDOUT, env=stores.clean_env())
        n = 0
        while time.monotonic() - t0 < 120 and d.poll() is None:
            n = count_lines(events)
            if n >= total:
                break
            time.sleep(0.2)
        time.sleep(1)  # anything more would be a duplicate
        secs = time.monotonic() - t0
        d.send_signal(signal.SIGTERM)
        try:
            rc = d.wait(timeout=40)
        except subprocess.TimeoutExpired:
            d.kill()
            rc = "killed after 40s"
    got = {}
    if os.path.exists(events):
        with open(events) as fh:
            for ln in fh:
                ev = json.loads(ln)
                got.setdefault(f"{ev['source']['schema']}.{ev['source']['table']}", []).append(event_id(ev))
    problems = [f"{t}: {len(got.get(t, []))} events, want {len(want[t])}" + ("" if len(got.get(t, [])) != len(want[t]) else "; order or ids differ")
                for t in tables if got.get(t, []) != want[t]]
    problems += [f"events of a table not in the catalog: {t}" for t in got if t not in want]
    if rc != 0:
        problems.append(f"SIGTERM: exit {rc}")
    with open(log_path) as fh:
        problems += secret_leaks(f"the daemon's log {log_path}", fh.read())
    if problems:
        print(f"s3 run: FAILED: icecdc run -c {cfg} (log {log_path})")
        for p in problems:
            print("  " + p)
        return 1
    print(f"s3 run: icecdc run (file sink) read {len(tables)} tables of the JDBC catalog on S3: {total} events "
          f"in {secs:.1f}s, exactly those of `icecdc changes`, in order; SIGTERM: exit 0")
    return 0


def count_lines(path):
    try:
        with open(path, "rb") as fh:
            return sum(1 for _ in fh)
    except FileNotFoundError:
        return 0


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("check", choices=["compose", "s3-run"])
    ap.add_argument("--icecdc", required=True)
    ap.add_argument("--s3-endpoint", required=True)
    ap.add_argument("--rest-s3-uri")
    ap.add_argument("--brokers")
    ap.add_argument("--http", help="the compose daemon's http.listen address")
    ap.add_argument("--log", help="the compose daemon's log")
    ap.add_argument("--s3-catalog-db")
    ap.add_argument("--work")
    a = ap.parse_args()
    return compose(a) if a.check == "compose" else s3_run(a)


if __name__ == "__main__":
    sys.exit(main())
