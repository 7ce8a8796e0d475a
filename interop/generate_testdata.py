"""Writes testdata/java/: small v3 tables written by Spark 4.1 + Iceberg 1.11
(1.12 for those testdata_tables.py assigns it; ICECDC_ICEBERG_VERSION picks
the session's), each with the events Spark's own reads imply (issue #13), and
those Iceberg Java's generic writers wrote (--java: WriteGenericTables.java's
warehouse), with the events Java's generic reader implies (issue #20).

Run through interop/generate_testdata.sh, which installs the Python side and
builds the relocation tool. For every table of testdata_tables.py it:
  1. has Spark write the table in a JDBC/SQLite catalog (as the interop
     stage does, run_scenarios.build);
  2. reads live(S) of every snapshot of main's ancestry with
     SELECT *, _row_id, _last_updated_sequence_number ... VERSION AS OF S
     and turns consecutive ones into events (oracle.expected_events; before
     images are mapped by field id, so a renamed column keeps its value);
  3. copies the table's files (the current metadata.json and every manifest
     list, manifest, Parquet and Puffin file it references, bytes as Java
     wrote them) to testdata/java/<name>/ with the table location replaced
     by the placeholder file:/ICECDC_TESTDATA (the Go tool
     internal/javatables/relocate, through iceberg-go's Avro writers);
  4. writes testdata/java/<name>/expected.json and testdata/java/README.md.
"""

import argparse
import copy
import json
import os
import shutil
import subprocess
import sys
import time

import facts
import oracle
import run_scenarios
import spark_session
import testdata_tables

PLACEHOLDER = "file:/ICECDC_TESTDATA"


def local_path(path):
    """The local file a file: URI names (facts.py reads through a FileIO and
    has no such helper since it learnt S3)."""
    for p in ("file://", "file:"):
        if path.startswith(p):
            return path[len(p):]
    return path


def fields_of(meta, snap):
    """The snapshot's top-level columns: {name: field id}."""
    sid = snap.get("schema-id", meta.get("current-schema-id"))
    for sch in meta.get("schemas", []):
        if sch.get("schema-id") == sid:
            return {f["name"]: f["id"] for f in sch["fields"]}
    raise RuntimeError(f"snapshot {snap['snapshot-id']}: no schema {sid}")


def renamed(prev, prev_fields, cur_fields):
    """prev's rows with their columns named as in S (by field id): a column
    renamed between P and S keeps its value under the new name."""
    names = {fid: name for name, fid in cur_fields.items()}
    out = copy.copy(prev)
    out.by_id = {}
    for rid, (lusn, values) in prev.by_id.items():
        vals = {}
        for k, v in values.items():
            fid = prev_fields.get(k)
            vals[names.get(fid, k) if fid is not None else k] = v
        out.by_id[rid] = (lusn, vals)
    return out


def event_obj(e):
    op, rid, _, before, after = e  # no paired updates: Spark writes no equality deletes
    return {"op": op, "row_id": rid,
            "before": None if before is None else json.loads(before),
            "after": None if after is None else json.loads(after)}


def expected_for(spark, sc, meta, labels):
    snaps = run_scenarios.ancestry(meta)
    out, prev, prev_snap = [], oracle.EMPTY, None
    for s in snaps:
        sid, seq = s["snapshot-id"], s.get("sequence-number", 0)
        cur = run_scenarios.live(spark, sc, sid)
        notes = []
        if cur.by_id:
            p = prev
            if prev_snap is not None and prev.by_id:
                p = renamed(prev, fields_of(meta, prev_snap), fields_of(meta, s))
            events, notes = oracle.expected_events(p, cur, seq, run_scenarios.columns_of(meta, s))
        else:
            events = []
            if cur.no_lineage:
                notes.append(f"no lineage in this snapshot ({cur.no_lineage} rows): no events")
        anomalies = [n for n in notes if "anomaly" in n]
        events.sort(key=lambda e: (oracle.PHASE[e[0]], e[1]))
        rows = [{"row_id": rid, "lusn": lusn, "values": vals} for rid, (lusn, vals) in sorted(cur.by_id.items())]
        out.append({
            "snapshot_id": sid,
            "parent_id": s.get("parent-snapshot-id"),
            "sequence_number": seq,
            "operation": s.get("summary", {}).get("operation"),
            "step": labels.get(sid, "within a step"),
            "lineage": bool(cur.by_id),
            "live_count": cur.count,
            "notes": [n for n in notes if n not in anomalies],
            # Spark's reads that no event stream can explain (docs/contract.md):
            # the events above are what §1 gives for them regardless.
            "anomalies": anomalies,
            "events": [event_obj(e) for e in events],
            "live": rows,
        })
        prev, prev_snap = cur, s
    return out


def generate_java(jt, args):
    """Stores a table WriteGenericTables.java wrote in --java, with the events
    Java's generic reader implies (its rows of every snapshot of main, with
    _row_id and _last_updated_sequence_number, as Spark's are read)."""
    t0 = time.monotonic()
    with open(os.path.join(args.java, f"{jt.name}.java.json")) as fh:
        jdoc = json.load(fh)
    meta_path = local_path(jdoc["metadata"])
    with open(meta_path) as fh:
        meta = json.load(fh)
    by_id = {s["snapshot-id"]: s for s in meta["snapshots"]}
    if len(jdoc["snapshots"]) != len(jt.steps):
        raise RuntimeError(f"{jt.name}: {len(jdoc['snapshots'])} snapshots, {len(jt.steps)} steps")
    out, prev, prev_snap = [], oracle.EMPTY, None
    for js, label in zip(jdoc["snapshots"], jt.steps):
        s = by_id[js["snapshot_id"]]
        cur = oracle.Live(js["rows"])
        p = prev
        if prev_snap is not None and prev.by_id:
            p = renamed(prev, fields_of(meta, prev_snap), fields_of(meta, s))
        events, notes = oracle.expected_events(p, cur, js["sequence_number"], run_scenarios.columns_of(meta, s))
        anomalies = [n for n in notes if "anomaly" in n]
        events.sort(key=lambda e: (oracle.PHASE[e[0]], e[1]))
        out.append({
            "snapshot_id": js["snapshot_id"],
            "parent_id": s.get("parent-snapshot-id"),
            "sequence_number": js["sequence_number"],
            "operation": js["operation"],
            "step": label,
            "lineage": bool(cur.by_id),
            "live_count": cur.count,
            "notes": [n for n in notes if n not in anomalies],
            "anomalies": anomalies,
            "events": [event_obj(e) for e in events],
            "live": [{"row_id": rid, "lusn": lusn, "values": vals} for rid, (lusn, vals) in sorted(cur.by_id.items())],
        })
        prev, prev_snap = cur, s
    _, fct = facts.table_facts(meta_path, [s["snapshot_id"] for s in out])
    for s in out:
        s["facts"] = fct[s["snapshot_id"]]
    doc = {
        "table": jt.name,
        "name": f"interop.{jt.name.replace('-', '_')}",
        "quirk": jt.quirk,
        "written_by": jdoc["written_by"],
        "columns": jt.columns,
        "partitioned_by": None,
        "properties": meta.get("properties", {}),
        "placeholder": PLACEHOLDER,
        "metadata": None,
        "steps": [{"step": label, "sql": [], "refused": []} for label in jt.steps],
        "snapshots": out,
    }
    size, files = store(doc, meta_path, meta["location"], args)
    return doc, size, files, time.monotonic() - t0


def relocate(tool, meta_path, location, dest):
    if os.path.exists(dest):
        shutil.rmtree(dest)
    cmd = [tool, "-metadata", meta_path, "-from", location, "-to", PLACEHOLDER, "-out", dest]
    p = subprocess.run(cmd, capture_output=True, text=True)
    if p.returncode != 0:
        raise RuntimeError(f"{' '.join(cmd)}: exit {p.returncode}: {p.stderr.strip()}")
    return json.loads(p.stdout)


def dir_size(path):
    return sum(os.path.getsize(os.path.join(d, f)) for d, _, fs in os.walk(path) for f in fs)


def generate(spark, sc, args):
    t0 = time.monotonic()
    for k, v in sc.spark_conf.items():
        spark.conf.set(k, v)
    try:
        steps = run_scenarios.build(spark, sc)
    finally:
        for k in sc.spark_conf:
            spark.conf.unset(k)
    labels, ran_sql = {}, []
    for label, ran, refused, head in steps:
        if head is not None and head not in labels:
            labels[head] = label
        ran_sql.append({"step": label, "sql": ran,
                        "refused": [f"{text}: {msg}" for text, msg in refused]})
    meta_path = run_scenarios.metadata_location(spark, sc)
    with open(local_path(meta_path)) as fh:
        meta = json.load(fh)
    snapshots = expected_for(spark, sc, meta, labels)
    _, fct = facts.table_facts(meta_path, [s["snapshot_id"] for s in snapshots])
    for s in snapshots:
        s["facts"] = fct[s["snapshot_id"]]

    doc = {
        "table": sc.name,
        "name": sc.table,
        "quirk": sc.quirk,
        "written_by": f"Spark {spark.version} with {spark_session.ICEBERG_RUNTIME.split(':', 1)[1]}",
        "spark_conf": sc.spark_conf or None,
        "columns": sc.columns,
        "partitioned_by": sc.partitioned_by or None,
        "properties": sc.props,
        "placeholder": PLACEHOLDER,
        "metadata": None,
        "steps": ran_sql,
        "snapshots": snapshots,
    }
    # Kept in the work directory too: --reuse stores it again without Spark.
    with open(os.path.join(args.work, f"{sc.name}.expected.json"), "w") as fh:
        json.dump(dict(doc, source_metadata=meta_path, source_location=meta["location"]), fh, indent=1)
    size, files = store(doc, local_path(meta_path), meta["location"], args)
    return doc, size, files, time.monotonic() - t0


def store(doc, meta_path, location, args):
    """Relocates the table into testdata/java/<name>/ with its expected.json."""
    dest = os.path.join(args.out, doc["table"])
    written = relocate(args.relocate, meta_path, location, dest)
    doc["metadata"] = written["metadata"]
    with open(os.path.join(dest, "expected.json"), "w") as fh:
        json.dump(doc, fh, indent=1, sort_keys=False)
        fh.write("\n")
    return dir_size(dest), written["files"]


def reuse(sc, args):
    """Stores a table a previous run left in --work, without Spark."""
    t0 = time.monotonic()
    with open(os.path.join(args.work, f"{sc.name}.expected.json")) as fh:
        doc = json.load(fh)
    meta_path, location = doc.pop("source_metadata"), doc.pop("source_location")
    doc["quirk"] = sc.quirk
    size, files = store(doc, local_path(meta_path), location, args)
    return doc, size, files, time.monotonic() - t0


README_HEAD = """# testdata/java — tables written by Iceberg Java

Generated by `bash interop/generate_testdata.sh` (issue #13); do not edit by
hand: change `interop/testdata_tables.py` and regenerate (review the diff
like code). Each directory is one small table that Spark 4.1.4 wrote in a
JDBC catalog (with iceberg-spark-runtime-4.1_2.13 1.11.0, or 1.12.0 where its
section says so), or Iceberg Java 1.12's generic writers in a Hadoop catalog
(interop/maven/generic/WriteGenericTables.java, for the types Spark SQL
cannot write): its current `metadata.json` and every manifest list,
manifest, Parquet and Puffin file that metadata references, with the table
location replaced by the placeholder `{placeholder}`:

- `metadata.json`: byte for byte as Java wrote it but for the location;
- manifest lists and manifests: re-encoded with iceberg-go's Avro writers
  (paths, manifest lengths and the sizes of rewritten files change;
  sequence numbers, snapshot ids, status, first_row_id — null where Java
  left it null — partition values, bounds and vector offsets do not; each
  rewrite is read back and compared field by field);
- Puffin files: the blobs' `referenced-data-file` property (iceberg-go's
  Puffin writer; blobs keep their bytes and offsets);
- v2 position-delete files: their `file_path` column (re-written with
  arrow-go's Parquet writer, field ids kept; the manifest's column sizes
  are Java's);
- data files: unchanged.

`internal/javatables` copies a table into a test's temporary directory the
same way with the placeholder replaced, and `go test ./source -run Java`
replays each one through the engine: its events must equal
`expected.json`'s, and replaying them must reproduce Spark's live rows and
iceberg-go's reading of every snapshot (docs/contract.md). A table the engine
does not handle yet is listed, with why, in `javaKnownFailures` in
`source/java_test.go`: its test logs the differences and skips, and fails
once they are gone.

`expected.json` holds, for every snapshot of main's ancestry, the events
Spark's own reads imply (`SELECT *, _row_id, _last_updated_sequence_number
... VERSION AS OF`, turned into events as `interop/oracle.py` does, before
images mapped by field id onto the snapshot's schema), the live rows Spark
read, `anomalies` (reads no event stream can explain), and what Java wrote
(`facts`: data sequence numbers, first_row_id, stored lineage columns,
Puffin layout; d1, p1 … are short names for data and Puffin files).
`go test ./internal/javatables -run 'Quirks|Size'` reads these facts back
through iceberg-go and checks that each table still shows its quirk
(`quirks` in `internal/javatables/quirks_test.go`) and that testdata/
stays under 2 MiB.

| table | quirk it pins | snapshots (main) | events d/u/c | size |
|---|---|---|---|---|
"""


def readme(docs):
    out = [README_HEAD.format(placeholder=PLACEHOLDER)]
    for doc, size in docs:
        n = {"d": 0, "u": 0, "c": 0}
        for s in doc["snapshots"]:
            for e in s["events"]:
                n[e["op"]] += 1
        out.append(f"| `{doc['table']}` | {doc['quirk']} | {len(doc['snapshots'])} | "
                   f"{n['d']}/{n['u']}/{n['c']} | {size / 1024:.0f} KiB |\n")
    out.append("\n## What Spark SQL made them\n")
    for doc, _ in docs:
        props = ", ".join(f"'{k}'='{v}'" for k, v in doc["properties"].items())
        part = f" PARTITIONED BY ({doc['partitioned_by']})" if doc["partitioned_by"] else ""
        out.append(f"\n### {doc['table']}\n\n{doc['quirk']}.\n\nWritten by {doc['written_by']}"
                   + (f" with {doc['spark_conf']}" if doc.get("spark_conf") else "") + ".\n\n")
        if not any(st["sql"] for st in doc["steps"]):  # interop/maven/generic/WriteGenericTables.java
            out.append(f"    {doc['name']} ({doc['columns']})\n")
            for st in doc["steps"]:
                out.append(f"    -- {st['step']}\n")
            out.append("\nSnapshots of main (seq, operation, step → events):\n\n")
            for s in doc["snapshots"]:
                ops = "".join(e["op"] for e in s["events"]) or "none"
                out.append(f"- seq {s['sequence_number']} {s['operation']} ({s['step']}): {ops}\n")
            continue
        out.append(f"    CREATE TABLE {doc['name']} ({doc['columns']}) USING iceberg{part}\n      TBLPROPERTIES ({props})\n")
        for st in doc["steps"]:
            for q in st["sql"]:
                out.append(f"    {q}\n")
        out.append("\nSnapshots of main (seq, operation, step → events):\n\n")
        for s in doc["snapshots"]:
            ops = "".join(e["op"] for e in s["events"]) or "none"
            out.append(f"- seq {s['sequence_number']} {s['operation']} ({s['step']}): {ops}\n")
            for a in s.get("anomalies", []):
                out.append(f"  - **{a}**\n")
    return "".join(out)


def report(doc, size, files, secs):
    n = sum(len(s["events"]) for s in doc["snapshots"])
    print(f"table {doc['table']}: {len(doc['snapshots'])} snapshots, {n} events, {files} files, "
          f"{size / 1024:.1f} KiB ({secs:.1f}s)", flush=True)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--work", required=True)
    ap.add_argument("--ivy", required=True)
    ap.add_argument("--out", required=True, help="testdata/java")
    ap.add_argument("--relocate", required=True, help="the internal/javatables/relocate binary")
    ap.add_argument("--only", nargs="*")
    ap.add_argument("--any-version", action="store_true",
                    help="write every table with the running Iceberg version (ICECDC_ICEBERG_VERSION), "
                         "not only those testdata_tables.py assigns it (to compare versions in another --out)")
    ap.add_argument("--reuse", action="store_true",
                    help="store the tables a previous run left in --work again, without Spark")
    ap.add_argument("--java", help="the warehouse WriteGenericTables.java wrote its tables in")
    ap.add_argument("--readme-only", action="store_true", help="only rewrite README.md from the stored tables")
    args = ap.parse_args()
    catalog_db = os.path.join(args.work, "catalog.db")
    warehouse = os.path.join(args.work, "wh")
    tables = testdata_tables.all_tables()
    jtables = testdata_tables.java_tables()
    unknown = sorted(set(args.only or []) - {t.name for t in tables + jtables} - {"-"})
    if unknown:
        print(f"testdata: unknown tables {unknown}")
        return 2
    if args.readme_only:
        args.only = ["-"]
    spark = None
    todo = [sc for sc in tables if (not args.only or sc.name in args.only)
            and (args.reuse or args.any_version or sc.iceberg == spark_session.ICEBERG_VERSION)]
    if not args.reuse and not args.readme_only and todo:
        os.makedirs(warehouse, exist_ok=True)
        spark, secs = spark_session.start(catalog_db, warehouse, args.ivy)
        print(f"timing: spark session start {secs:.1f}s (spark {spark.version})", flush=True)
    os.makedirs(args.out, exist_ok=True)
    docs, failed = [], []
    for sc in tables:
        if args.only and sc.name not in args.only:
            continue
        if not args.readme_only and not args.reuse and not args.any_version and sc.iceberg != spark_session.ICEBERG_VERSION:
            continue
        try:
            doc, size, files, secs = reuse(sc, args) if args.reuse else generate(spark, sc, args)
        except Exception as err:
            import traceback
            traceback.print_exc()
            print(f"table {sc.name}: FAILED: {err}", flush=True)
            failed.append(sc.name)
            continue
        docs.append((doc, size))
        report(doc, size, files, secs)
    for jt in jtables if args.java else []:
        if args.only and jt.name not in args.only:
            continue
        try:
            doc, size, files, secs = generate_java(jt, args)
        except Exception as err:
            import traceback
            traceback.print_exc()
            print(f"table {jt.name}: FAILED: {err}", flush=True)
            failed.append(jt.name)
            continue
        docs.append((doc, size))
        report(doc, size, files, secs)
    if not args.only and not failed and not args.any_version:
        for d in sorted(os.listdir(args.out)):
            if os.path.isdir(os.path.join(args.out, d)) and d not in {t.name for t in tables + jtables}:
                print(f"testdata: removing {d}/, no longer in testdata_tables.py")
                shutil.rmtree(os.path.join(args.out, d))
    stored = []  # every table on disk, in testdata_tables order, for the README
    for sc in tables + jtables:
        path = os.path.join(args.out, sc.name, "expected.json")
        if os.path.exists(path):
            with open(path) as fh:
                stored.append((json.load(fh), dir_size(os.path.join(args.out, sc.name))))
    if stored:
        with open(os.path.join(args.out, "README.md"), "w") as fh:
            fh.write(readme(stored))
    if spark is not None:
        spark.stop()
    total = dir_size(args.out)
    print(f"testdata: {len(docs)} tables written, {len(failed)} failed, {args.out} is {total / 1024:.0f} KiB")
    if total > 2 * 1024 * 1024:
        print("testdata: larger than 2 MiB: keep the tables smaller")
        return 1
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
