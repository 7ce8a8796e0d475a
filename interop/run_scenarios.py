"""Spark writes the scenario tables; icecdc's events must equal the oracle's.

Prints one line per scenario ("scenario bookshop: 9/9 snapshots exact"),
the differences of every snapshot that is not exact, what Spark/Iceberg
Java wrote (facts), and the time each part took. Exit status 1 when any
scenario is not exact or PyIceberg disagrees on a row count.
"""

import argparse
import base64
import datetime
import json
import os
import re
import sys
import time
import traceback
from concurrent.futures import ThreadPoolExecutor

import facts
import flink_upserts
import icecdc_cli
import oracle
import pyiceberg_check
import retention
import scenarios
import spark_session
import stores
import testdata_tables


def sql(spark, stmt):
    return spark.sql(stmt).collect()


def build(spark, sc):
    """Create the table and run its steps with the scenario's own Spark
    settings; returns [(label, ran, refused, head)]."""
    for k, v in sc.spark_conf.items():
        spark.conf.set(k, v)
    try:
        return build_steps(spark, sc)
    finally:
        for k in sc.spark_conf:
            spark.conf.unset(k)


def build_steps(spark, sc):
    fmt = dict(t=sc.table, cat=sc.catalog, ident=sc.ident)
    sql(spark, f"CREATE NAMESPACE IF NOT EXISTS {sc.catalog}.{scenarios.NS}")
    sql(spark, f"DROP TABLE IF EXISTS {sc.table} PURGE")
    part = f" PARTITIONED BY ({sc.partitioned_by})" if sc.partitioned_by else ""
    sql(spark, f"CREATE TABLE {sc.table} ({sc.columns}) USING iceberg{part} "
               f"TBLPROPERTIES ({spark_session.tblproperties(sc.props)})")
    steps = []
    for label, stmts in sc.steps:
        ran, refused = [], []
        for st in stmts:
            alts = st if isinstance(st, tuple) else (st,)
            for i, alt in enumerate(alts):
                text = alt.format(**fmt) if isinstance(alt, str) else alt.__name__
                try:
                    if isinstance(alt, str):
                        sql(spark, text)
                    else:
                        text = alt(spark, sc)
                    ran.append(text)
                    break
                except Exception as err:  # Spark refused it: try the next alternative
                    msg = str(err).strip().splitlines()[0][:300]
                    if i == len(alts) - 1:
                        raise RuntimeError(f"step '{label}': {text}: {msg}") from err
                    refused.append((text, msg))
        steps.append((label, ran, refused, head(spark, sc)))
    return steps


def head(spark, sc):
    rows = sql(spark, f"SELECT snapshot_id FROM {sc.table}.refs WHERE name = 'main'")
    return rows[0][0] if rows else None


def metadata_location(spark, sc):
    rows = sql(spark, f"SELECT file FROM {sc.table}.metadata_log_entries ORDER BY timestamp DESC LIMIT 1")
    return rows[0][0]


def ancestry(meta):
    """Snapshots of main, oldest first."""
    snaps = {s["snapshot-id"]: s for s in meta.get("snapshots", [])}
    ref = meta.get("refs", {}).get("main", {}).get("snapshot-id", meta.get("current-snapshot-id"))
    out = []
    while ref in snaps:
        out.append(snaps[ref])
        ref = snaps[ref].get("parent-snapshot-id")
    return list(reversed(out))


def columns_of(meta, snap):
    """The snapshot's top-level columns: {name: initial-default or None}."""
    sid = snap.get("schema-id", meta.get("current-schema-id"))
    for sch in meta.get("schemas", []):
        if sch.get("schema-id") == sid:
            return {f["name"]: f.get("initial-default") for f in sch["fields"]}
    return None


def types_of(meta, snap):
    """The snapshot's top-level primitive columns: {name: Iceberg type}."""
    sid = snap.get("schema-id", meta.get("current-schema-id"))
    for sch in meta.get("schemas", []):
        if sch.get("schema-id") == sid:
            return {f["name"]: f["type"] for f in sch["fields"] if isinstance(f["type"], str)}
    return None


def identifier_columns(meta, snap):
    """The snapshot schema's identifier columns, by name."""
    sid = snap.get("schema-id", meta.get("current-schema-id"))
    for sch in meta.get("schemas", []):
        if sch.get("schema-id") == sid:
            names = {f["id"]: f["name"] for f in sch["fields"]}
            return [names[i] for i in sch.get("identifier-field-ids", [])]
    return []


def v3_scenarios():
    """The v3 set (--set v3, Iceberg 1.12): testdata/java's VARIANT
    histories, unshredded and with Iceberg's variant shredding, written
    afresh and compacted at the end."""
    out = []
    for sc in (testdata_tables.variant(), testdata_tables.variant_shredded()):
        sc.steps = list(sc.steps) + [
            ("insert 26-27 after the merge", ["INSERT INTO {t} VALUES (26, parse_json('{{\"a\": 9}}'), 'late'), "
                                              "(27, parse_json('[true]'), 'late')"]),
            ("rewrite_data_files (compaction)",
             ["CALL {cat}.system.rewrite_data_files(table => '{ident}', options => map('rewrite-all', 'true'))"]),
        ]
        out.append(sc)
    return out


def typed_value_files(spark, sc):
    """How many of the data files the table has had hold a typed_value
    column (their Parquet schemas, read with pyarrow), of how many."""
    import pyarrow.parquet as pq

    paths = [r[0] for r in sql(spark, f"SELECT file_path FROM {sc.table}.files WHERE content = 0")]
    paths += [r[0] for r in sql(spark, f"SELECT DISTINCT data_file.file_path FROM {sc.table}.all_entries "
                                       f"WHERE data_file.content = 0")]
    paths = sorted(set(paths))
    shredded = 0
    for p in paths:
        schema = pq.ParquetFile(p.removeprefix("file:")).schema
        shredded += any("typed_value" in schema.column(i).path.split(".") for i in range(len(schema)))
    return shredded, len(paths)


def flink_scenarios():
    """The tables flink_upserts.py writes, as scenarios without steps:
    Spark only reads them. One snapshot per step that touches a table."""
    out = []
    for name in flink_upserts.TABLES:
        sc = scenarios.Scenario(name=f"flink-{name}", columns="", steps=[], catalog="flink",
                                namespace=flink_upserts.NAMESPACE, table_name=name)
        labels = [label for label, changes in flink_upserts.STEPS if name in changes]
        out.append((sc, labels))
    return out


def wait_for_flink(path, timeout):
    """The Flink writer's exit status, which run.sh writes to path when the
    writer ends; None when it did not end within timeout seconds."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            with open(path) as fh:
                text = fh.read().strip()
            if text:
                return int(text.split()[0])
        except FileNotFoundError:
            pass
        time.sleep(1)
    return None


def live(spark, sc, sid):
    try:
        rows = sql(spark, f"SELECT {sc.select}, _row_id, _last_updated_sequence_number FROM {sc.table} VERSION AS OF {sid}")
        return oracle.Live(rows)
    except Exception as err:  # a snapshot Spark gives no lineage for: its rows have none
        rows = [dict(r.asDict(), _row_id=None) for r in sql(spark, f"SELECT {sc.select} FROM {sc.table} VERSION AS OF {sid}")]
        return oracle.Live(rows, why=str(err).strip().splitlines()[0][:200])


def head_rows(spark, sc, meta):
    """Spark's rows at the head, typed for JSON (connect_sink.py reads them):
    {"columns": [[name, iceberg type]], "rows": [{column: value, "_row_id": n}]}.
    Values JSON has no type for are {"decimal"|"date"|"timestamp"|"timestamptz"|"binary": text};
    a timestamptz is the UTC instant (PySpark hands it over in local time)."""
    sid = meta.get("current-schema-id")
    fields = next(s["fields"] for s in meta["schemas"] if s.get("schema-id") == sid)
    cols = [[f["name"], f["type"] if isinstance(f["type"], str) else "nested"] for f in fields]
    types = dict(cols)
    out = []
    # A variant column is read as its to_json text (the scenario's select).
    for k, v in list(types.items()):
        if v == "variant":
            types[k] = "string"
    for r in sql(spark, f"SELECT {sc.select}, _row_id FROM {sc.table}"):
        d = r.asDict()
        row = {}
        for k, v in d.items():
            t = types.get(k, "long")
            if v is None or isinstance(v, (bool, int, float, str)):
                row[k] = v
            elif t.startswith("decimal"):
                row[k] = {"decimal": str(v)}
            elif t == "timestamptz":
                row[k] = {"timestamptz": v.astimezone(datetime.timezone.utc).isoformat()}
            elif t == "timestamp":
                row[k] = {"timestamp": v.isoformat()}
            elif t == "date":
                row[k] = {"date": v.isoformat()}
            elif t == "binary":
                row[k] = {"binary": base64.b64encode(bytes(v)).decode()}
            else:
                row[k] = {"unsupported": str(v)}
        out.append(row)
    return {"columns": cols, "rows": out}


def spark_part(spark, sc, out, heads=None):
    """What needs Spark: build the table, and its live rows at every snapshot."""
    t = {}
    t0 = time.monotonic()
    steps = build(spark, sc)
    t["build"] = time.monotonic() - t0
    return read_part(spark, sc, out, t, steps, heads)


def read_part(spark, sc, out, t, steps, heads=None):
    """Spark's reads of every snapshot of a table already written; steps
    as build returns them, for the labels; heads, when given, gets Spark's
    rows at a local table's head."""
    labels = {}
    for label, ran, refused, h in steps:
        if h is not None and h not in labels:
            labels[h] = label
        for text, msg in refused:
            out.append(f"  note: Spark refused `{text}`: {msg}")
        if refused:
            out.append(f"  note: instead ran: {ran[-1]}")
    meta_path = metadata_location(spark, sc)
    meta = facts.read_json(meta_path)
    snaps = ancestry(meta)

    t0 = time.monotonic()
    lives = {s["snapshot-id"]: live(spark, sc, s["snapshot-id"]) for s in snaps}
    t["oracle"] = time.monotonic() - t0
    if heads is not None and sc.catalog == "local":
        heads[sc.ident.split(".", 1)[1]] = head_rows(spark, sc, meta)
    return t, labels, meta_path, meta, snaps, lives


def check_part(sc, args, t, labels, meta_path, meta, snaps, lives):
    """What needs no Spark (it runs while Spark builds the next table):
    icecdc's events against the oracle's, PyIceberg's row counts, the facts."""
    t0 = time.monotonic()
    upserts = sc.catalog == "flink"
    if sc.catalog in stores.S3_CATALOGS:
        cargs = stores.icecdc_args(sc.catalog, sc.ident, args.s3_endpoint, args.s3_catalog_db, args.rest_s3_uri)
    elif upserts:
        cargs = icecdc_cli.catalog_args(sc.catalog, sc.ident, args.flink_catalog_db, args.flink_warehouse)
    else:
        cargs = icecdc_cli.catalog_args(sc.catalog, sc.ident, args.catalog_db, args.warehouse, args.rest_uri)
    got, err, stderr = icecdc_cli.changes(args.icecdc, cargs, env=stores.clean_env())
    t["icecdc"] = time.monotonic() - t0
    warnings = [ln for ln in stderr.splitlines() if ln.strip()]

    t0 = time.monotonic()
    try:
        if sc.catalog in stores.S3_CATALOGS:
            pcat = stores.pyiceberg_catalog(sc.catalog, args.s3_endpoint, args.s3_catalog_db, args.rest_s3_uri)
            ptable = pcat.load_table(sc.ident)
        elif upserts:
            ptable = None  # PyIceberg 0.12 refuses equality deletes ("does not yet support")
        elif args.set == "v3":
            ptable = None  # PyIceberg 0.12 refuses the variant type ("Unsupported field type: 'variant'")
        else:
            ptable = pyiceberg_check.load_table(sc.catalog, sc.ident, args.catalog_db, args.warehouse, args.rest_uri)
        pcounts = pyiceberg_check.row_counts(ptable, [s["snapshot-id"] for s in snaps]) if ptable else None
    except Exception as perr:
        pcounts = {s["snapshot-id"]: f"load failed: {type(perr).__name__}: {perr}" for s in snaps}
    t["pyiceberg"] = time.monotonic() - t0

    header, fct = facts.table_facts(meta_path, [s["snapshot-id"] for s in snaps])

    exact, pagree, detail, events = 0, 0, [], 0
    prev = oracle.EMPTY
    for s in snaps:
        sid, seq = s["snapshot-id"], s.get("sequence-number", 0)
        cur = lives[sid]
        if cur.by_id:
            expected, notes = oracle.expected_events(prev, cur, seq, columns_of(meta, s),
                                                     identifier_columns(meta, s) if upserts else None, types_of(meta, s))
        else:
            expected, notes = [], []
            if cur.no_lineage:
                why = f" (Spark: {cur.why})" if cur.why else " (Spark returns null _row_id)"
                notes.append(f"no lineage in this snapshot ({cur.no_lineage} rows{why}): no events")
        events += len(expected)
        problems = [err] if err else oracle.compare(expected, got.pop(sid, []), seq, upserts, types_of(meta, s))
        pc = pcounts.get(sid) if pcounts is not None else None
        pok = pcounts is None or pc == cur.count
        exact += not problems
        pagree += pok
        title = f"  snapshot {sid} seq {seq} {s.get('summary', {}).get('operation', '?')} ({labels.get(sid, 'within a step')})"
        block = [title + f": {len(expected)} events expected, live rows {cur.count}"]
        block += ["    " + n for n in notes]
        if not pok:
            block.append(f"    pyiceberg: {pc} rows, Spark: {cur.count}")
        block += ["    " + p for p in problems]
        block += ["    facts: " + fct[sid][0]] + ["    " + ln for ln in fct[sid][1:]]
        detail.append((not problems and pok and not any("anomaly" in n for n in notes), block))
        prev = cur
    for sid, evs in got.items():
        detail.append((False, [f"  icecdc emitted {len(evs)} events for snapshot {sid}, not in main's ancestry"]))
    ok = exact == len(snaps) and pagree == len(snaps) and not got
    line = f"scenario {sc.name}: {exact}/{len(snaps)} snapshots exact"
    if upserts:
        line = (f"flink {sc.ident}: {len(snaps)} snapshots, {events} events, "
                + ("exact" if ok else f"NOT exact ({exact}/{len(snaps)} snapshots exact)"))
    if pcounts is None:
        line += "; PyIceberg not asked (it reads no " + ("equality deletes)" if upserts else "variant)")
    elif pagree != len(snaps):
        line += f"; pyiceberg row counts agree on {pagree}/{len(snaps)}"
    if got:
        line += f"; {len(got)} unexpected snapshots"
    return ok, line, header, detail, warnings, t


def flink_tables(spark, args, checked, check, failed):
    """Spark reads every snapshot of the tables Flink wrote (once the
    writer has ended); icecdc's events must match at each."""
    t0 = time.monotonic()
    rc = wait_for_flink(os.path.join(args.flink_work, "status"), args.flink_timeout)
    waited = time.monotonic() - t0
    if rc != 0:
        why = f"exit {rc}" if rc is not None else f"not done after {args.flink_timeout:.0f}s"
        print(f"flink: the Flink writer failed ({why}): no table to check; see its log", flush=True)
        failed.append("flink")
        return
    print(f"timing: waited {waited:.1f}s for the Flink writer", flush=True)
    for sc, labels in flink_scenarios():
        notes = []
        try:
            steps = [(label, [], [], None) for label in labels]
            t, lbl, meta_path, meta, snaps, lives = read_part(spark, sc, notes, {}, steps)
            lbl = {s["snapshot-id"]: label for s, label in zip(snaps, labels)}
            if len(snaps) != len(labels):
                notes.append(f"  note: {len(snaps)} snapshots for {len(labels)} Flink jobs")
            checked(sc, notes, check(sc, t, lbl, meta_path, meta, snaps, lives))
        except Exception as err:
            traceback.print_exc()
            checked(sc, notes, (False, f"flink {sc.ident}: FAILED to read: {err}", "", [], [], {}))


def start_retention(spark, args):
    """The retention-hold part runs in a thread on the shared session: most
    of its time is spent waiting for `icecdc run`, which the scenarios'
    Spark work overlaps. Its result goes to a file run.sh reports as a
    part of its own: first line "ok" or "failed", then its lines."""
    import threading

    def body():
        t0 = time.monotonic()
        try:
            ok, lines = retention.run(spark, args.icecdc, args.retention)
        except BaseException as err:  # the file must say the part failed
            ok, lines = False, [f"retention: FAILED: {type(err).__name__}: {err}"]
        lines.append(f"timing: retention-hold {time.monotonic() - t0:.1f}s (on the scenarios' Spark session, alongside them)")
        with open(os.path.join(args.retention, "result.txt"), "w") as fh:
            fh.write(("ok" if ok else "failed") + "\n" + "\n".join(lines) + "\n")

    os.makedirs(args.retention, exist_ok=True)
    th = threading.Thread(target=body, name="retention-hold", daemon=True)
    th.start()
    return th


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--work", required=True)
    ap.add_argument("--ivy", required=True)
    ap.add_argument("--icecdc", required=True)
    ap.add_argument("--rest-uri")
    ap.add_argument("--s3-endpoint", help="the S3 (and Glue) server: adds the S3 and Glue scenarios")
    ap.add_argument("--rest-s3-uri", help="the REST catalog server whose warehouse is on S3")
    ap.add_argument("--only", nargs="*")
    ap.add_argument("--set", choices=["scenarios", "v3"], default="scenarios",
                    help="v3: the VARIANT tables (run with ICECDC_ICEBERG_VERSION=1.12.0; interop/parts/v3.sh)")
    ap.add_argument("--flink-work", help="where run.sh's Flink writer keeps its catalog.db, wh/ and status "
                                         "(its exit status): adds the Flink upsert tables")
    ap.add_argument("--flink-timeout", type=float, default=900, help="seconds to wait for the Flink writer")
    ap.add_argument("--facts", help="write every snapshot's facts here")
    ap.add_argument("--heads", help="write Spark's rows at every local table's head here (JSON)")
    ap.add_argument("--verbose", action="store_true", help="print every snapshot, not only failing ones")
    ap.add_argument("--retention", metavar="DIR",
                    help="also run the retention-hold part (interop/retention.py) in DIR, on this Spark session, "
                         "alongside the scenarios; its lines and outcome go to DIR/result.txt")
    args = ap.parse_args()
    args.catalog_db = os.path.join(args.work, "catalog.db")
    args.warehouse = os.path.join(args.work, "wh")
    args.s3_catalog_db = os.path.join(args.work, "s3catalog.db")
    os.makedirs(args.warehouse, exist_ok=True)
    args.flink_catalog_db = args.flink_warehouse = None
    if args.flink_work:
        args.flink_catalog_db = os.path.join(args.flink_work, "catalog.db")
        args.flink_warehouse = os.path.join(args.flink_work, "wh")
    if args.s3_endpoint:
        facts.configure(stores.s3_props(args.s3_endpoint))

    def all_scenarios():
        if args.set == "v3":
            return v3_scenarios()
        return scenarios.all_scenarios(with_rest=bool(args.rest_uri), with_s3=bool(args.s3_endpoint),
                                       with_rest_s3=bool(args.rest_s3_uri))

    known = [sc.name for sc in all_scenarios()] + (["flink"] if args.flink_work else [])
    unknown = sorted(set(args.only or []) - set(known) - {"retention"})
    if unknown:
        print(f"scenarios: unknown {unknown}; known: {' '.join(known)} (and retention, the hold part)")
        return 2
    spark, secs = spark_session.start(args.catalog_db, args.warehouse, args.ivy, args.rest_uri,
                                      args.s3_endpoint, args.s3_catalog_db, args.rest_s3_uri,
                                      args.flink_catalog_db, args.flink_warehouse)
    print(f"timing: spark session start {secs:.1f}s (spark {spark.version})", flush=True)
    failed, passed = [], 0
    report, warned = [], set()
    hold_part = start_retention(spark, args) if args.retention else None

    def checked(sc, notes, result):
        nonlocal passed
        ok, line, header, detail, warnings, t = result
        print(line, flush=True)
        for n in notes:
            print(n)
        for w in warnings:  # each distinct message once per run
            msg = re.sub(r"^\d{4}/\d\d/\d\d \d\d:\d\d:\d\d ", "", w)
            if msg not in warned:
                warned.add(msg)
                print(f"  icecdc stderr: {msg[:300]}")
        for good, block in detail:
            if not good or args.verbose:
                print("\n".join(block))
        print("  timing: " + " ".join(f"{k} {v:.1f}s" for k, v in t.items()) + f" total {sum(t.values()):.1f}s", flush=True)
        report.append(f"== {sc.name} ({sc.table}) {header}")
        report.extend(ln for _, block in detail for ln in block)
        if ok:
            passed += 1
        else:
            failed.append(sc.name)

    def check(sc, *parts):
        try:
            return check_part(sc, args, *parts)
        except Exception as err:
            traceback.print_exc()
            return False, f"scenario {sc.name}: FAILED to read: {err}", "", [], [], parts[0]

    # Scenario N's checks run in a thread while Spark builds scenario N+1;
    # the results are printed in scenario order.
    pending = None
    heads = {} if args.heads else None
    with ThreadPoolExecutor(max_workers=1) as pool:
        for sc in all_scenarios():
            if args.only and sc.name not in args.only:
                continue
            notes = []
            try:
                parts = spark_part(spark, sc, notes, heads)
                if sc.props.get("write.parquet.shred-variants") == "true":
                    n, total = typed_value_files(spark, sc)
                    print(f"scenario {sc.name}: {n} of {total} data files hold typed_value columns", flush=True)
                    if n == 0:
                        failed.append(f"{sc.name} (no typed_value column in its files)")
            except Exception as err:
                traceback.print_exc()
                parts, failure = None, (False, f"scenario {sc.name}: FAILED to build or read: {err}", "", [], [], {})
            if pending:
                checked(pending[0], pending[1], pending[2].result())
                pending = None
            if parts is None:
                checked(sc, notes, failure)
            else:
                pending = (sc, notes, pool.submit(check, sc, *parts))
        if pending:
            checked(pending[0], pending[1], pending[2].result())
        if args.flink_work and (not args.only or "flink" in args.only):
            flink_tables(spark, args, checked, check, failed)
    if hold_part:
        hold_part.join()
    if args.facts:
        with open(args.facts, "w") as fh:
            fh.write("\n".join(report) + "\n")
    if args.heads:
        with open(args.heads, "w") as fh:
            json.dump(heads, fh)
    spark.stop()
    print(f"scenarios: {passed} exact, {len(failed)} not" + (f" ({', '.join(failed)})" if failed else ""))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
