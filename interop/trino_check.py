"""icecdc's events on the tables Trino wrote, against Trino's own reads.

interop/maven/trino/TrinoHistories.java writes random histories with an
embedded Trino into a JDBC catalog on SQLite and dumps, for every snapshot,
Trino's time-travel read (FOR VERSION AS OF) with "$row_id" and
"$last_updated_sequence_number": live(S). oracle.py turns consecutive
reads of main's ancestry into the events docs/contract.md asks for, and
`icecdc changes` must give them, snapshot by snapshot, twice: through the
JDBC catalog and through the table's metadata file.

Prints one line per history and a total ("24 histories, 812
snapshots, 22617 events: exact"), the differences of every snapshot that
is not exact, and the statements Trino refused. Exit status 1 when any
snapshot is not exact.
"""

import argparse
import base64
import datetime
import json
import os
import re
import sqlite3
import struct
import sys
import time
from urllib.parse import urlparse

import icecdc_cli
import oracle


def ancestry(meta):
    """Snapshots of main, oldest first."""
    snaps = {s["snapshot-id"]: s for s in meta.get("snapshots", [])}
    ref = meta.get("refs", {}).get("main", {}).get("snapshot-id", meta.get("current-snapshot-id"))
    out = []
    while ref in snaps:
        out.append(snaps[ref])
        ref = snaps[ref].get("parent-snapshot-id")
    return list(reversed(out))


def schema_of(meta, snap):
    sid = snap.get("schema-id", meta.get("current-schema-id"))
    for sch in meta.get("schemas", []):
        if sch.get("schema-id") == sid:
            return sch
    return None


def columns_of(meta, snap):
    sch = schema_of(meta, snap)
    return {f["name"]: f.get("initial-default") for f in sch["fields"]} if sch else None


def types_of(meta, snap):
    sch = schema_of(meta, snap)
    return {f["name"]: f["type"] for f in sch["fields"] if isinstance(f["type"], str)} if sch else None


def float_to_double(v):
    """A float's value as the double a widened column reads it as."""
    return struct.unpack("f", struct.pack("f", float(v)))[0] if isinstance(v, (int, float)) else v


def default_value(v, t):
    """An initial-default (the spec's JSON single-value form, as Trino
    writes it) in the form of Trino's reads and icecdc's events: binary and
    fixed from hex to base64, timestamps with 6 digits (9 for nanoseconds)
    and "Z" with a zone."""
    if v is None or not isinstance(t, str):
        return v
    if (t == "binary" or t.startswith("fixed[")) and isinstance(v, str):
        return base64.b64encode(bytes.fromhex(v)).decode()
    if t in ("timestamp", "timestamptz") and isinstance(v, str):
        dt = datetime.datetime.fromisoformat(v)
        if t == "timestamptz":
            return dt.astimezone(datetime.timezone.utc).replace(tzinfo=None).isoformat(timespec="microseconds") + "Z"
        return dt.isoformat(timespec="microseconds")
    if t in ("timestamp_ns", "timestamptz_ns") and isinstance(v, str):
        m = re.fullmatch(r"(\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d)(?:\.(\d+))?(Z|[+-]00:00)?", v)
        if m:
            return m.group(1) + "." + (m.group(2) or "").ljust(9, "0") + ("Z" if t == "timestamptz_ns" else "")
    return v


def rebase(prev, meta, psnap, snap):
    """prev's rows (read by Trino in P's schema) in S's schema by field id:
    renamed columns take S's names, columns S dropped are left out, and a
    float column S widened to double holds the double of the float, and a
    column S added its initial-default, as icecdc's before images (one
    schema per event: docs/contract.md)."""
    ps, ss = schema_of(meta, psnap), schema_of(meta, snap)
    if not ps or not ss or ps.get("schema-id") == ss.get("schema-id"):
        return prev
    now = {f["id"]: f for f in ss["fields"]}
    mapping = {}
    for f in ps["fields"]:
        g = now.get(f["id"])
        if g is not None:
            mapping[f["name"]] = (g["name"], float_to_double if (f["type"], g["type"]) == ("float", "double") else None)
    added = {f["name"]: default_value(f.get("initial-default"), f["type"])
             for f in ss["fields"] if f["id"] not in {g["id"] for g in ps["fields"]}}
    out = oracle.Live([])
    out.why, out.no_lineage, out.duplicates, out.count = prev.why, prev.no_lineage, prev.duplicates, prev.count
    for rid, (lusn, values) in prev.by_id.items():
        nv = {}
        for k, v in values.items():
            if k in mapping:
                name, conv = mapping[k]
                nv[name] = conv(v) if conv and v is not None else v
        nv.update(added)
        out.by_id[rid] = (lusn, nv)
    return out


def read_history(path):
    """(statements, {snapshot_id: oracle.Live}) of one history's dump."""
    statements, lives = [], {}
    with open(path) as f:
        for line in f:
            d = json.loads(line)
            if "sql" in d:
                statements.append(d)
                continue
            names = [oracle.ROW_ID if n == "$row_id" else oracle.LUSN if n == "$last_updated_sequence_number" else n
                     for n in d["columns"]]
            lives[d["snapshot_id"]] = oracle.Live([dict(zip(names, r)) for r in d["rows"]])
    return statements, lives


def local_path(uri):
    return urlparse(uri).path if uri.startswith("file:") else uri


def check_history(args, name, statements, lives):
    """Returns (ok, line, detail lines, snapshots, events)."""
    db = sqlite3.connect(args.catalog_db)
    row = db.execute("SELECT metadata_location FROM iceberg_tables WHERE table_namespace = 'h' AND table_name = ?",
                     (name,)).fetchone()
    db.close()
    if not row:
        return False, f"history {name}: not in the catalog", [], 0, 0
    meta_path = local_path(row[0])
    with open(meta_path) as f:
        meta = json.load(f)
    snaps = ancestry(meta)
    ways = {
        "catalog": icecdc_cli.catalog_args("trino", "h." + name, args.catalog_db, args.warehouse),
        "metadata": ["--metadata", meta_path],
    }
    detail, ok, events = [], True, 0
    for way, cargs in ways.items():
        got, err, _ = icecdc_cli.changes(args.icecdc, cargs)
        prev, psnap, exact, events = oracle.EMPTY, None, 0, 0
        for s in snaps:
            sid, seq = s["snapshot-id"], s.get("sequence-number", 0)
            cur = lives.get(sid)
            if cur is None:
                detail.append(f"  {way}: snapshot {sid}: Trino did not read it")
                ok = False
                continue
            base = rebase(prev, meta, psnap, s) if psnap else prev
            expected, notes = oracle.expected_events(base, cur, seq, columns_of(meta, s), None, types_of(meta, s))
            events += len(expected)
            problems = [err] if err else oracle.compare(expected, got.pop(sid, []), seq, False, types_of(meta, s))
            problems += [n for n in notes if "anomaly" in n]
            if problems:
                op = s.get("summary", {}).get("operation", "?")
                detail.append(f"  {way}: snapshot {sid} seq {seq} {op}: {len(expected)} events expected, live rows {cur.count}")
                detail += ["    " + p for p in problems[:20]]
            else:
                exact += 1
            prev, psnap = cur, s
        for sid, evs in got.items():
            detail.append(f"  {way}: icecdc emitted {len(evs)} events for snapshot {sid}, not in main's ancestry")
            ok = False
        ok = ok and exact == len(snaps)
        if way == "catalog":
            catalog_exact = exact
    refused = [st for st in statements if "error" in st]
    line = (f"history {name}: {len(snaps)} snapshots, {events} events, {len(statements)} statements"
            f" ({len(refused)} refused): " + ("exact" if ok else f"NOT exact ({catalog_exact}/{len(snaps)} snapshots exact by catalog)"))
    detail += [f"  refused: {st['sql'][:160]}: {st['error'][:200]}" for st in refused]
    return ok, line, detail, len(snaps), events


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--icecdc", required=True)
    ap.add_argument("--dumps", required=True, help="TrinoHistories' out-dir")
    ap.add_argument("--catalog-db", required=True)
    ap.add_argument("--warehouse", required=True)
    args = ap.parse_args()
    t0 = time.monotonic()
    names = sorted((n[:-len(".jsonl")] for n in os.listdir(args.dumps) if n.endswith(".jsonl")),
                   key=lambda n: int(n[1:]) if n[1:].isdigit() else n)
    good = snapshots = events = 0
    details = []
    for name in names:
        statements, lives = read_history(os.path.join(args.dumps, name + ".jsonl"))
        ok, line, detail, n, e = check_history(args, name, statements, lives)
        print(line, flush=True)
        good += ok
        snapshots += n
        events += e
        if detail:
            details.append((name, detail))
    for name, detail in details:
        print(f"{name}:")
        print("\n".join(detail))
    verdict = "exact" if good == len(names) and names else f"NOT exact ({good}/{len(names)} histories exact)"
    print(f"{len(names)} histories, {snapshots} snapshots, {events} events: {verdict}"
          f" (checked twice, by catalog and by metadata file, in {time.monotonic() - t0:.0f}s)")
    return 0 if good == len(names) and names else 1


if __name__ == "__main__":
    sys.exit(main())
