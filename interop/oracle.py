"""The oracle: Spark's own reads turned into the events docs/contract.md asks for.

live(S) = SELECT *, _row_id, _last_updated_sequence_number FROM t VERSION AS OF S
(Spark returns the effective values: stored, else inherited from the data
file's first_row_id and data sequence number). For a snapshot S with
sequence number s and parent P:
  d  row_id in live(P), not in live(S)          before = P's values
  u  row_id in both, lusn(S) == s               before = P's, after = S's
  c  row_id only in live(S), lusn == s          after = S's
  rows in both with lusn < s (moves) and rows of an upgraded table's first
  lineage-bearing snapshot that had no lineage in P yield no event.

Before images are expressed in S's schema, as icecdc encodes every event of
a commit with the snapshot's schema (source/table.go schemaFor): a column
added between P and S takes its initial-default (what Spark shows for those
rows when it reads them with the new schema), a dropped one is left out.
Spark's VERSION AS OF P itself answers in P's schema.
"""

import base64
import datetime
import decimal
import json
import struct
from collections import Counter

ROW_ID = "_row_id"
LUSN = "_last_updated_sequence_number"
PHASE = {"d": 0, "u": 1, "c": 2}
DECIMALS = decimal.Context(prec=80)  # decimal(38, s) exactly


def canon(v):
    """One JSON-comparable form for a value from Spark or from icecdc's JSON."""
    if isinstance(v, bool) or v is None or isinstance(v, str):
        return v
    if isinstance(v, int):
        return v
    if isinstance(v, float):
        return int(v) if v.is_integer() and abs(v) < 2**53 else v
    if isinstance(v, decimal.Decimal):
        return str(v)
    if isinstance(v, datetime.datetime):
        return v.isoformat()
    if isinstance(v, datetime.date):
        return v.isoformat()
    if isinstance(v, (bytes, bytearray)):
        return base64.b64encode(bytes(v)).decode()
    if isinstance(v, dict):
        return {k: canon(x) for k, x in v.items()}
    if isinstance(v, (list, tuple)):
        return [canon(x) for x in v]
    if hasattr(v, "asDict"):
        return canon(v.asDict(recursive=True))
    return str(v)


def key(values, types=None):
    if values is None:
        return None
    if types:
        values = {k: typed(v, types.get(k)) for k, v in values.items()}
    return json.dumps(canon(values), sort_keys=True)


def typed(v, t):
    """One form for both sides of a value whose JSON form depends on its
    Iceberg type t: Spark hands over a float column's value widened to a
    double (1.100000023841858) where icecdc writes the float's shortest form
    (1.1); and a timestamp as a naive datetime (timestamptz: in local time)
    where icecdc writes ISO-8601 with six fraction digits ("Z" for
    timestamptz); and a decimal in Python's notation (1.00E-10) where icecdc
    writes the scale's digits. Both become the float32 value, the UTC
    date-time with six digits and the decimal with the scale's digits."""
    if v is None or t is None:
        return v
    if t.startswith("decimal(") and isinstance(v, str):
        # Python writes small decimals as 1.00E-10; icecdc with the scale's digits
        scale = int(t[len("decimal("):-1].split(",")[1])
        return format(decimal.Decimal(v).quantize(decimal.Decimal(1).scaleb(-scale), context=DECIMALS), "f")
    if t == "float" and isinstance(v, (int, float)) and not isinstance(v, bool):
        return struct.unpack("f", struct.pack("f", float(v)))[0]
    if t in ("timestamp", "timestamptz") and isinstance(v, str):
        dt = datetime.datetime.fromisoformat(v)
        if dt.tzinfo is not None or t == "timestamptz":
            dt = dt.astimezone(datetime.timezone.utc).replace(tzinfo=None)
        return dt.isoformat(timespec="microseconds")
    return v


class Live:
    """The rows of one snapshot, by effective row id."""

    def __init__(self, rows, why=None):
        self.why = why  # why the rows have no lineage, when Spark said so
        self.by_id = {}
        self.no_lineage = 0
        self.duplicates = []
        self.count = len(rows)
        for r in rows:
            d = r.asDict(recursive=True) if hasattr(r, "asDict") else dict(r)
            rid = d.pop(ROW_ID, None)
            lusn = d.pop(LUSN, None)
            if rid is None:
                self.no_lineage += 1
                continue
            if rid in self.by_id:
                self.duplicates.append(rid)
            self.by_id[rid] = (lusn, {k: canon(v) for k, v in d.items()})


EMPTY = Live([])


def project(values, columns):
    """values in the schema columns ({name: initial-default}) describe."""
    if columns is None:
        return values
    return {k: values[k] if k in values else canon(d) for k, d in columns.items()}


def expected_events(prev, cur, seq, columns=None, upsert_key=None, types=None):
    """Returns (events, notes): events as (op, row_id, paired_row_id, before,
    after) keys.

    columns: S's top-level columns {name: initial-default}, for before images;
    types: their Iceberg types {name: type}, for typed().
    upsert_key: for a table written with equality deletes only (Flink's
    upsert mode), its identifier columns: a delete and an insert of one key
    in S are one update (see pair_upserts).
    """
    events, notes = [], []
    projected = set()

    def before_of(rid):
        b = prev.by_id[rid][1]
        pb = project(b, columns)
        if pb != b:
            projected.update(set(pb) ^ set(b))
        return key(pb, types)

    for rid in prev.by_id:
        if rid not in cur.by_id:
            events.append(("d", rid, None, before_of(rid), None))
    baseline = 0
    for rid, (lusn, after) in cur.by_id.items():
        if rid in prev.by_id:
            if lusn == seq:
                events.append(("u", rid, None, before_of(rid), key(after, types)))
            elif not _same(prev.by_id[rid][1], after):
                notes.append(f"oracle anomaly: row_id {rid} changed values with lusn {lusn} != {seq}")
        elif lusn == seq:
            events.append(("c", rid, None, None, key(after, types)))
        else:
            baseline += 1
    if baseline:
        if prev.no_lineage:
            notes.append(f"{baseline} rows got lineage in this snapshot (back-filled row ids, lusn < {seq}): no events")
        else:
            notes.append(f"oracle anomaly: {baseline} new row ids with lusn != {seq}")
    if projected:
        notes.append(f"before images projected onto S's schema (columns {sorted(projected)} differ from P's)")
    if cur.duplicates:
        notes.append(f"oracle anomaly: duplicate row ids in live(S): {sorted(set(cur.duplicates))[:10]}")
    if cur.no_lineage and cur.by_id:
        notes.append(f"oracle anomaly: {cur.no_lineage} rows without row id next to rows with one")
    if upsert_key:
        events = pair_upserts(events, prev, cur, upsert_key)
    return events, notes


def pair_upserts(events, prev, cur, key_columns):
    """docs/contract.md: an equality delete and an insert with equal keys in one
    snapshot are one update, with the new row id, naming the removed one.
    Spark's reads cannot tell which delete removed a row; on a table whose
    writer removes older rows only by equality deletes (Flink in upsert
    mode: its position deletes only reach rows of the same commit) every
    delete is one. A key with more than one delete or insert is left as
    it is, as icecdc leaves it."""
    def key_of(values):
        return json.dumps([values.get(c) for c in key_columns])

    dels, ins = {}, {}
    for i, (op, rid, _, _, _) in enumerate(events):
        if op == "d":
            dels.setdefault(key_of(prev.by_id[rid][1]), []).append(i)
        elif op == "c":
            ins.setdefault(key_of(cur.by_id[rid][1]), []).append(i)
    drop, out = set(), []
    for k, ds in dels.items():
        cs = ins.get(k, [])
        if len(ds) == 1 and len(cs) == 1:
            d, c = events[ds[0]], events[cs[0]]
            out.append(("u", c[1], d[1], d[3], c[4]))
            drop.update((ds[0], cs[0]))
    return [e for i, e in enumerate(events) if i not in drop] + out


def _same(before, after):
    """Equal on the columns both have (a column added in between is no change)."""
    common = before.keys() & after.keys()
    return all(before[k] == after[k] for k in common)


def got_events(lines, types=None):
    """icecdc's events of one snapshot as keys, in emitted order."""
    out = []
    for ev in lines:
        src = ev.get("source", {})
        paired = src.get("paired_row_id") if src.get("paired") else None
        out.append((ev.get("op"), src.get("row_id"), paired, key(ev.get("before"), types), key(ev.get("after"), types)))
    return out


def compare(expected, got_lines, seq, upserts=False, types=None):
    """Returns a list of problems (empty: exact). upserts: the table is
    written with equality deletes, whose updates icecdc pairs; types: as
    expected_events'."""
    problems = []
    got = got_events(got_lines, types)
    exp_c, got_c = Counter(expected), Counter(got)
    for e in sorted((exp_c - got_c).elements(), key=_order):
        problems.append("missing    " + _fmt(e))
    for e in sorted((got_c - exp_c).elements(), key=_order):
        problems.append("unexpected " + _fmt(e))
    ranks = [PHASE.get(op, 9) for op, *_ in got]
    if ranks != sorted(ranks):
        problems.append("phase order: got " + "".join(op or "?" for op, *_ in got) + " (want all d, then u, then c)")
    for i, ev in enumerate(got_lines):
        src = ev.get("source", {})
        if src.get("sequence_number") != seq:
            problems.append(f"event {i}: source.sequence_number {src.get('sequence_number')} != {seq}")
            break
        if src.get("event_index") != i:
            problems.append(f"event {i}: source.event_index {src.get('event_index')}")
            break
        if ev.get("op") in ("c", "u") and src.get("last_updated_sequence_number") != seq:
            problems.append(f"event {i}: {ev.get('op')} with source.last_updated_sequence_number "
                            f"{src.get('last_updated_sequence_number')} != {seq}")
            break
        if src.get("paired") and not upserts:
            problems.append(f"event {i}: source.paired set on a Spark table (no equality deletes)")
            break
        if upserts and ev.get("op") == "u" and src.get("paired") != "equality-delete":
            problems.append(f"event {i}: an update on an upsert table with source.paired {src.get('paired')!r}")
            break
    return problems


def _order(e):
    return (PHASE.get(e[0], 9), e[1] if e[1] is not None else -1)


def _fmt(e):
    op, rid, paired, before, after = e
    pair = f" paired_row_id={paired}" if paired is not None else ""
    return f"{op} row_id={rid}{pair} before={before} after={after}"
