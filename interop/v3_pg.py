"""v3 types through Kafka Connect into PostgreSQL with PostGIS (issue 20).

`icecdc changes --format debezium-connect-json --with-key` of two tables
goes to topics v3.<table>; Debezium's JDBC sink connector (added to the
Connect worker run.sh started, through its REST API) writes them into
PostgreSQL, where io.debezium.data.Json goes into a jsonb column (the
sink itself would create json; the table is made beforehand) and
Debezium's Geometry/Geography become PostGIS geometry/geography columns. Every record must also
decode against its own schema as JsonConverter reads it
(connect_sink.decode), and the sink's consumer must commit the end of the
topic (a record JsonConverter or the sink cannot convert stops its task).
Then the PostgreSQL table must equal the Iceberg table at its head, value
by value:
  variant  (Spark 4.1 + Iceberg 1.12, run_scenarios.py --set v3): the
           column is jsonb and equals Spark's to_json(v) as jsonb (SQL
           NULL for SQL NULL)
  geo      (Iceberg Java 1.12's generic writers, testdata/java/geo): the
           columns are PostGIS geometry/geography and ST_AsBinary equals
           the WKB Java wrote; ST_SRID is the srid of the column's CRS
           (0 where the CRS names none)

Prints one line per table; exit status 1 when any is not exact.
"""

import argparse
import base64
import json
import sys
import time
import urllib.error
import urllib.request

import connect_sink

CONNECTOR = "jdbc-v3"


def add_connector(connect_url, pg_port):
    cfg = {
        "connector.class": "io.debezium.connector.jdbc.JdbcSinkConnector",
        "tasks.max": "1",
        "topics.regex": "v3\\..*",
        "connection.url": f"jdbc:postgresql://127.0.0.1:{pg_port}/postgres",
        "connection.username": "icecdc",
        "connection.password": "",
        "insert.mode": "upsert",
        "delete.enabled": "true",
        "primary.key.mode": "record_key",
        "schema.evolution": "basic",
        "collection.name.format": "v3_${source.table}",
    }
    req = urllib.request.Request(f"{connect_url}/connectors/{CONNECTOR}/config", data=json.dumps(cfg).encode(),
                                 method="PUT", headers={"Content-Type": "application/json"})
    # The worker's REST server comes up a while after it starts (404 until
    # its resources are there).
    deadline = time.monotonic() + 300
    while True:
        try:
            with urllib.request.urlopen(req, timeout=60) as r:
                r.read()
            return
        except urllib.error.URLError as err:
            if time.monotonic() > deadline or isinstance(err, urllib.error.HTTPError) and err.code < 500 and err.code != 404:
                raise RuntimeError(f"add connector {CONNECTOR} at {connect_url}: {err}") from err
            time.sleep(2)


def connector_state(connect_url):
    try:
        with urllib.request.urlopen(f"{connect_url}/connectors/{CONNECTOR}/status", timeout=10) as r:
            st = json.load(r)
    except Exception as err:
        return f"status unavailable: {err}"
    tasks = st.get("tasks", [])
    failed = [t.get("trace", "").splitlines()[0] for t in tasks if t.get("state") == "FAILED"]
    return "; ".join(failed) if failed else None


def records(icecdc, args):
    import subprocess
    p = subprocess.run([icecdc, "changes", "--format", "debezium-connect-json", "--with-key"] + args,
                       capture_output=True, text=True, timeout=300)
    if p.returncode != 0:
        raise RuntimeError(f"icecdc changes {' '.join(args)}: exit {p.returncode}: {p.stderr.strip()[-400:]}")
    out = []
    for i, line in enumerate(p.stdout.splitlines()):
        k, v = line.split("\t", 1)
        for part, text in (("key", k), ("value", v)):
            rec = json.loads(text)
            connect_sink.decode(rec["schema"], rec["payload"], f"record {i} {part}")
        out.append((k.encode(), v.encode()))
    return out


def check_variant(cur, table, head):
    """head: Spark's rows at the head (run_scenarios.py --heads), v as to_json."""
    cur.execute("SELECT column_name, udt_name FROM information_schema.columns WHERE table_name = %s", (table,))
    types = dict(cur.fetchall())
    if types.get("v") != "jsonb":
        return 0, [f"column v is {types.get('v')}, not jsonb"]
    cur.execute(f'SELECT count(*) FROM "{table}"')
    n = cur.fetchone()[0]
    problems = [] if n == len(head) else [f"{n} rows, head has {len(head)}"]
    for r in head:
        cur.execute(f'SELECT v IS NOT DISTINCT FROM %s::jsonb, note IS NOT DISTINCT FROM %s, v::text FROM "{table}" '
                    f'WHERE id = %s', (r["v"], r["note"], r["id"]))
        got = cur.fetchall()
        if len(got) != 1 or not got[0][0] or not got[0][1]:
            problems.append(f"id {r['id']}: PostgreSQL {got}, Spark v={r['v']!r} note={r['note']!r}")
    return len(head), problems


GEO_SRID = {"g": 3857, "geog": 4326, "other": 0}


def check_geo(cur, table, head):
    """head: the rows of testdata/java/geo's last snapshot (WKB base64)."""
    cur.execute("SELECT column_name, udt_name FROM information_schema.columns WHERE table_name = %s", (table,))
    types = dict(cur.fetchall())
    problems = [f"column {c} is {types.get(c)}, not {t}" for c, t in
                (("g", "geometry"), ("geog", "geography"), ("other", "geometry")) if types.get(c) != t]
    if problems:
        return 0, problems
    cur.execute(f'SELECT count(*) FROM "{table}"')
    n = cur.fetchone()[0]
    if n != len(head):
        problems.append(f"{n} rows, head has {len(head)}")
    for r in head:
        cur.execute(f'SELECT encode(ST_AsBinary(g), \'base64\'), ST_SRID(g), encode(ST_AsBinary(geog), \'base64\'), '
                    f'ST_SRID(geog), encode(ST_AsBinary(other), \'base64\'), ST_SRID(other), note '
                    f'FROM "{table}" WHERE id = %s', (r["id"],))
        got = cur.fetchall()
        if len(got) != 1:
            problems.append(f"id {r['id']}: {len(got)} rows")
            continue
        vals = got[0]
        for j, c in enumerate(("g", "geog", "other")):
            wkb, srid = vals[2 * j], vals[2 * j + 1]
            want = r[c]
            wkb = wkb.replace("\n", "") if wkb else None
            if want is None:
                if wkb is not None:
                    problems.append(f"id {r['id']} {c}: {wkb}, want NULL")
            elif base64.b64decode(wkb or "") != base64.b64decode(want) or srid != GEO_SRID[c]:
                problems.append(f"id {r['id']} {c}: {wkb} srid {srid}, want {want} srid {GEO_SRID[c]}")
        if vals[6] != r["note"]:
            problems.append(f"id {r['id']} note: {vals[6]!r}, want {r['note']!r}")
    return len(head), problems


def geo_head(expected_path):
    exp = json.load(open(expected_path))
    live = {}
    for s in exp["snapshots"]:
        for e in s["events"]:
            if e["op"] == "d":
                live.pop(e["row_id"], None)
            else:
                live[e["row_id"]] = e["after"]
    return list(live.values())


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--icecdc", required=True)
    ap.add_argument("--brokers", required=True)
    ap.add_argument("--pg", required=True, help="libpq conninfo")
    ap.add_argument("--pg-port", required=True)
    ap.add_argument("--connect-url", required=True)
    ap.add_argument("--v3-work", required=True, help="run_scenarios.py --set v3's --work (catalog.db, wh, heads.json)")
    ap.add_argument("--geo", required=True, help="testdata/java/geo relocated: DIR with metadata/ and expected.json")
    ap.add_argument("--stall", type=float, default=180)
    a = ap.parse_args()
    import psycopg

    heads = json.load(open(f"{a.v3_work}/heads.json"))
    with open(f"{a.geo}/expected.json") as fh:
        geo_meta = f"{a.geo}/{json.load(fh)['metadata']}"
    tables = [
        ("variant", ["--catalog-type", "sql", "--catalog-name", "local", "--catalog-uri", f"file:{a.v3_work}/catalog.db",
                     "--warehouse", f"file://{a.v3_work}/wh", "--table", "interop.variant"],
         check_variant, heads["variant"]["rows"], "Spark 4.1 + Iceberg 1.12", "id bigint, v variant, note string"),
        ("geo", ["--metadata", geo_meta, "--table", "interop.geo"], check_geo, geo_head(f"{a.geo}/expected.json"),
         "Iceberg Java 1.12 generic writers", "id long, g geometry(srid:3857), geog geography, other geometry(ESRI:102008), note"),
    ]
    with psycopg.connect(a.pg, autocommit=True) as conn:
        conn.execute("CREATE EXTENSION IF NOT EXISTS postgis")
        # The sink creates a json column for io.debezium.data.Json; a table
        # made beforehand with jsonb is the one it writes into (its
        # schema.evolution=basic only adds what is missing).
        conn.execute("DROP TABLE IF EXISTS v3_variant")
        conn.execute("CREATE TABLE v3_variant (_row_id bigint PRIMARY KEY, id bigint, v jsonb, note text)")
    add_connector(a.connect_url, a.pg_port)
    ok = True
    for name, args, check, head, writer, types in tables:
        topic = f"v3.{name}"
        try:
            recs = records(a.icecdc, args)
            connect_sink.produce(a.brokers, topic, recs)
            off, end = connect_sink.wait_sunk(a.brokers, f"connect-{CONNECTOR}", topic, a.stall)
            failed = connector_state(a.connect_url)
            if off < end or failed:
                raise RuntimeError(f"the sink committed {off} of {end} records" + (f"; task failed: {failed}" if failed else ""))
            with psycopg.connect(a.pg, autocommit=True) as conn, conn.cursor() as cur:
                n, problems = check(cur, f"v3_{name}", head)
        except Exception as err:
            n, problems, recs = 0, [f"FAILED: {type(err).__name__}: {err}"], []
        exact = not problems
        ok = ok and exact
        print(f"v3-pg {name} ({writer}; {types}): {len(recs)} records, every one decoded against its schema; "
              f"{n} rows compared in PostgreSQL at the head: " + ("exact" if exact else "NOT exact"), flush=True)
        for p in problems[:10]:
            print("  " + p)
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
