"""Flink writes nanosecond timestamps (issue 20): a format-v3 Iceberg table
with TIMESTAMP(9) and TIMESTAMP_LTZ(9) columns (v3 timestamp_ns and
timestamptz_ns) in upsert mode, one job (one commit) per step, each an
INSERT of SQL literals with nine fraction digits: inserting a key that is
there is an upsert (an equality delete of the key and the new row).

  python flink_ns.py write --catalog-db DB --warehouse DIR --reads FILE

After each job, Flink itself reads the table (a batch query) as the
oracle: FILE gets, per snapshot, its id and the rows Flink reads, the
timestamps as text. Spark cannot be the oracle here: it reads no
nanoseconds.

  python flink_ns.py check --reads FILE --icecdc BIN --catalog-db DB --warehouse DIR

replays icecdc's events (debezium-json) snapshot by snapshot, by key, and
compares the rows with Flink's reads; prints one line, exit 1 when not
exact. It needs no PyFlink.
"""

import argparse
import datetime
import json
import subprocess
import sys
import time

NAMESPACE = "interop_flink_ns"
TABLE = "ts9"
IDENT = f"{NAMESPACE}.{TABLE}"

# Each step is one INSERT (one job, one commit). Values: (id, ts, tsz, note);
# tsz is given as UTC wall time (the session time zone is UTC).
STEPS = [
    ("insert 1-4: nine digits, before 1970, the first nanosecond after 1970, null", [
        (1, "2024-02-29 23:59:59.123456789", "2024-02-29 23:59:59.987654321", "nine"),
        (2, "1969-12-31 23:59:59.999999999", "1900-01-01 00:00:00.000000001", "before 1970"),
        (3, "1970-01-01 00:00:00.000000001", "1970-01-01 00:00:00.000000001", "first ns"),
        (4, None, None, "nulls"),
    ]),
    ("upsert 1 and 4 (nanoseconds change only), insert 5", [
        (1, "2024-02-29 23:59:59.123456788", "2024-02-29 23:59:59.987654321", "nine"),
        (4, "2000-01-01 00:00:00.000000500", "2000-01-01 00:00:00.000000500", "was nulls"),
        (5, "2262-04-11 23:47:16.854775807", "2262-04-11 23:47:16.854775807", "last ns of int64"),
    ]),
    ("upsert 2 twice in one commit, upsert 3", [
        (2, "1969-12-31 23:59:59.999999998", None, "twice a"),
        (2, "1969-12-31 23:59:59.999999997", "1969-12-31 23:59:59.999999997", "twice b"),
        (3, "1970-01-01 00:00:00.000000002", "1970-01-01 00:00:00.000000001", "first ns+1"),
    ]),
]


def catalog_ddl(catalog_db, warehouse):
    return (
        "CREATE CATALOG flink WITH ("
        "'type'='iceberg', 'catalog-impl'='org.apache.iceberg.jdbc.JdbcCatalog', "
        f"'uri'='jdbc:sqlite:{catalog_db}', 'warehouse'='file:{warehouse}', "
        "'jdbc.schema-version'='V1')"
    )


def lit(v, typ):
    if v is None:
        return f"CAST(NULL AS {typ})"
    return f"CAST(TIMESTAMP '{v}' AS {typ})"


def write(args):
    from pyflink.table import EnvironmentSettings, TableEnvironment

    def env(batch):
        s = EnvironmentSettings.in_batch_mode() if batch else EnvironmentSettings.in_streaming_mode()
        t = TableEnvironment.create(s)
        t.get_config().set("table.local-time-zone", "UTC")
        t.get_config().set("parallelism.default", "1")
        t.execute_sql(catalog_ddl(args.catalog_db, args.warehouse)).wait()
        return t

    tenv, reader = env(False), env(True)
    tenv.get_config().set("execution.checkpointing.interval", "1s")
    tenv.execute_sql(f"CREATE DATABASE IF NOT EXISTS flink.{NAMESPACE}").wait()
    tenv.execute_sql(f"DROP TABLE IF EXISTS flink.{IDENT}").wait()
    tenv.execute_sql(
        f"CREATE TABLE flink.{IDENT} (id BIGINT NOT NULL, ts TIMESTAMP(9), tsz TIMESTAMP_LTZ(9), note STRING, "
        "PRIMARY KEY (id) NOT ENFORCED) "
        "WITH ('format-version'='3', 'write.upsert.enabled'='true', 'write.format.default'='parquet')").wait()
    reads = []
    for n, (label, rows) in enumerate(STEPS, 1):
        t0 = time.monotonic()
        values = ", ".join(f"({i}, {lit(ts, 'TIMESTAMP(9)')}, {lit(tz, 'TIMESTAMP_LTZ(9)')}, '{note}')"
                           for i, ts, tz, note in rows)
        tenv.execute_sql(f"INSERT INTO flink.{IDENT} VALUES {values}").wait()
        snap = [r[0] for r in reader.execute_sql(
            f"SELECT snapshot_id FROM flink.{NAMESPACE}.`{TABLE}$snapshots` ORDER BY committed_at DESC LIMIT 1").collect()]
        got = [list(r) for r in reader.execute_sql(
            f"SELECT id, CAST(ts AS STRING), CAST(tsz AS STRING), note FROM flink.{IDENT}").collect()]
        reads.append({"step": label, "snapshot_id": snap[0] if snap else None, "rows": got})
        print(f"flink-ns: job {n} ({label}): {len(rows)} rows in {time.monotonic() - t0:.1f}s; "
              f"Flink reads {len(got)} rows at snapshot {snap[0] if snap else '?'}", flush=True)
    with open(args.reads, "w") as fh:
        json.dump(reads, fh)
    return 0


def nanos(text):
    """Nanoseconds since the epoch of 'YYYY-MM-DD[ T]HH:MM:SS[.f]'[Z] text."""
    if text is None:
        return None
    text = text.replace("T", " ").removesuffix("Z")
    whole, _, frac = text.partition(".")
    d = datetime.datetime.strptime(whole, "%Y-%m-%d %H:%M:%S").replace(tzinfo=datetime.timezone.utc)
    secs = (d - datetime.datetime(1970, 1, 1, tzinfo=datetime.timezone.utc)) // datetime.timedelta(seconds=1)
    return secs * 10**9 + int((frac + "000000000")[:9])


def column_types(catalog_db):
    """The table's current columns and types, from its metadata file."""
    import sqlite3
    with sqlite3.connect(catalog_db) as c:
        (loc,), = c.execute("SELECT metadata_location FROM iceberg_tables WHERE table_namespace = ? AND table_name = ?",
                            (NAMESPACE, TABLE)).fetchall()
    meta = json.load(open(loc.removeprefix("file:")))
    sc = next(x for x in meta["schemas"] if x["schema-id"] == meta["current-schema-id"])
    return {f["name"]: f["type"] for f in sc["fields"]}


def check(args):
    reads = json.load(open(args.reads))
    types = column_types(args.catalog_db)
    if (types.get("ts"), types.get("tsz")) != ("timestamp_ns", "timestamptz_ns"):
        print(f"flink-ns {IDENT}: Flink wrote ts {types.get('ts')}, tsz {types.get('tsz')}, "
              "not timestamp_ns and timestamptz_ns: NOT checked")
        return 1
    cmd = [args.icecdc, "changes", "--catalog-type", "sql", "--catalog-name", "flink", "--catalog-uri",
           f"file:{args.catalog_db}", "--warehouse", f"file://{args.warehouse}", "--table", IDENT]
    p = subprocess.run(cmd, capture_output=True, text=True, timeout=300)
    if p.returncode != 0:
        print(f"flink-ns {IDENT}: icecdc changes failed (exit {p.returncode}): {p.stderr.strip()[-300:]}")
        return 1
    by_snap = {}
    for line in p.stdout.splitlines():
        e = json.loads(line)
        by_snap.setdefault(e["source"]["snapshot_id"], []).append(e)
    state, exact, events, problems = {}, 0, 0, []

    def row(img):
        return (img["id"], nanos(img["ts"]), nanos(img["tsz"]), img["note"])

    for r in reads:
        evs = by_snap.pop(r["snapshot_id"], [])
        events += len(evs)
        for e in evs:
            if e["before"] is not None:
                state.pop(e["before"]["id"], None)
            if e["after"] is not None:
                state[e["after"]["id"]] = row(e["after"])
        want = {x[0]: (x[0], nanos(x[1]), nanos(x[2]), x[3]) for x in r["rows"]}
        if want == state:
            exact += 1
        else:
            diff = sorted(set(want.items()) ^ set(state.items()))[:4]
            problems.append(f"  snapshot {r['snapshot_id']} ({r['step']}): replayed != Flink's read: {diff}")
    if by_snap:
        problems.append(f"  icecdc emitted events for {len(by_snap)} snapshots Flink's steps did not make")
    ok = not problems and exact == len(reads)
    print(f"flink-ns {IDENT} (Flink TIMESTAMP(9), TIMESTAMP_LTZ(9) as timestamp_ns, timestamptz_ns; upserts): "
          f"{len(reads)} snapshots, {events} events; "
          f"{exact}/{len(reads)} snapshots replay to Flink's read" + ("" if ok else ": NOT exact"))
    for pr in problems:
        print(pr)
    return 0 if ok else 1


def main():
    ap = argparse.ArgumentParser()
    sub = ap.add_subparsers(dest="cmd", required=True)
    w = sub.add_parser("write")
    c = sub.add_parser("check")
    for s in (w, c):
        s.add_argument("--catalog-db", required=True)
        s.add_argument("--warehouse", required=True)
        s.add_argument("--reads", required=True)
    c.add_argument("--icecdc", required=True)
    args = ap.parse_args()
    return write(args) if args.cmd == "write" else check(args)


if __name__ == "__main__":
    sys.exit(main())
