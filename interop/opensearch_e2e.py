"""opensearch: the Spark tables followed into a real OpenSearch node.

`icecdc run` with `sink: {type: opensearch}` follows the local Spark
scenario tables from earliest into the node (interop/parts/opensearch.sh
starts it), twice at once: documents by the key columns (index
ident-<table>, `tables[].key`) and by row id (rowid-<table>, no key);
with --flink-catalog-db a third daemon follows the Flink upsert tables
(equality deletes) by their identifier fields (flink-<table>), whose head
is flink_upserts.py's steps applied by key. Mid-stream the daemons are
SIGKILLed, their state files copied, and they are started again; later
the node is stopped (SIGTERM) for a few seconds while they run and
started again on its data. Then:

  1. every index equals Spark's rows at the head (run_scenarios.py
     --heads): one document per row, its id the key (or the row id), its
     _source the row's columns, value by value in the types below, and
     __event_id, the id of the event that wrote it; none missing, none
     extra, no other field;
  2. `icecdc run --once` with the same state ends at once and changes
     nothing (the daemons had reached the head);
  3. a replay from the state copied at the kill, and one from the start
     (`icecdc reset --all`), both `run --once` (the two modes at once),
     change no document: same _source and same _version (external_gte
     versions from the sequence number and the event index; an older
     event is refused with 409, the newest one of each document is written
     again at its own version, so its _seq_no moves and nothing else; a
     document deleted and re-created by the replay, whose tombstone the
     node forgot after index.gc_deletes, ends deleted again);
  4. control: a document changed by hand, one deleted and one added must
     each be found by the comparison.

The indexes are made before the daemons start, with a mapping from the
Iceberg types (long, double, date, ...): OpenSearch's dynamic mapping maps
every JSON fraction as float, and refuses a double column's
-1.7976931348623157E308 as "-Infinity".

Values (debezium-json, the flattened after image) are compared as:
  boolean, int, long  bool, int
  float               float rounded to float32; double: float
  decimal(p, s)       Decimal of the string
  date                date of YYYY-MM-DD
  timestamp           naive datetime; timestamptz: aware datetime (Z), in UTC
  string              str; binary: bytes of the base64

Without the sink in icecdc (its config check names sink.type), the same
model is checked with documents written by hand: `icecdc changes` events
as _bulk index/delete items with the same ids and versions (producer
"bulk"), the kill and node restart replaced by a replay of every other
chunk; the part then counts as skipped.
"""

import argparse
import base64
import datetime
import decimal
import json
import os
import shutil
import signal
import subprocess
import sys
import time
import urllib.error
import urllib.request
from collections import Counter

from connect_sink import (LEFT_OUT, NS, Stuck, changes, compared_tables, from_heads_json, key_columns, norm,
                          run_part, table_metadata)

MODES = ("ident", "rowid")


class Stream:
    """One daemon's documents: its tables (as the heads name them), their
    heads, the catalog they are in and the key of their documents
    (keys(table): the key columns, None for the row id); key_config says
    whether the config names the key (tables[].key) or leaves it to the
    table's identifier fields."""

    def __init__(self, tables, heads, catalog, db, warehouse, namespace, keys, key_config):
        self.tables, self.heads, self.keys, self.key_config = tables, heads, keys, key_config
        self.catalog, self.db, self.warehouse, self.namespace = catalog, db, warehouse, namespace


def spark_streams(a, heads, tables):
    return {"ident": Stream(tables, heads, "local", a.catalog_db, a.warehouse, NS, key_columns, True),
            "rowid": Stream(tables, heads, "local", a.catalog_db, a.warehouse, NS, lambda t: None, False)}


FLINK_TYPES = {"BIGINT": "long", "STRING": "string", "INT": "int", "DOUBLE": "double"}


def flink_stream(a):
    """The Flink upsert tables (flink_upserts.py, keyed by their identifier
    fields): their heads are its STEPS applied by key, which the
    flink-upserts part holds Spark's reads of every snapshot to."""
    import flink_upserts as fu
    heads = {}
    for name, (ddl, keys, _) in fu.TABLES.items():
        cols = [(c.split()[0], FLINK_TYPES[c.split()[1]]) for c in ddl.split(", ")]
        rows = {}
        for _, steps in fu.STEPS:
            for kind, row in steps.get(name, []):
                r = dict(zip([c for c, _ in cols], row))
                k = tuple(r[c] for c in keys)
                if kind == fu.D:
                    rows.pop(k, None)
                else:
                    rows[k] = r
        heads[name] = {"columns": cols, "rows": list(rows.values())}
    return Stream(sorted(heads), heads, "flink", a.flink_catalog_db, a.flink_warehouse, fu.NAMESPACE,
                  lambda t: fu.TABLES[t][1], False)
INDEX_BITS = 20  # the sink's version: sequence_number << 20 | min(event index, 2^20 - 1)
UTC = datetime.timezone.utc


# ---------------------------------------------------------------- the node's REST API

class Node:
    def __init__(self, url):
        self.url = url.rstrip("/")

    def call(self, method, path, body=None, ndjson=False, ok=(200, 201)):
        data = None
        headers = {}
        if body is not None:
            data = body.encode() if isinstance(body, str) else json.dumps(body).encode()
            headers["Content-Type"] = "application/x-ndjson" if ndjson else "application/json"
        req = urllib.request.Request(self.url + path, data=data, method=method, headers=headers)
        try:
            with urllib.request.urlopen(req, timeout=60) as resp:
                return resp.status, json.loads(resp.read() or b"null")
        except urllib.error.HTTPError as err:
            text = err.read().decode(errors="replace")
            if err.code in ok:
                return err.code, json.loads(text or "null")
            raise RuntimeError(f"{method} {path}: {err.code} {text[:400]}") from None

    def up(self):
        try:
            return self.call("GET", "/_cluster/health")[1].get("status") in ("green", "yellow")
        except (OSError, RuntimeError):
            return False

    def documents(self, index):
        """{id: (source, _version, _seq_no)} of every document of index;
        None when there is no such index."""
        st, _ = self.call("HEAD", f"/{index}", ok=(200, 404))
        if st == 404:
            return None
        self.call("POST", f"/{index}/_refresh")
        out, after = {}, None
        while True:
            q = {"size": 5000, "sort": [{"_id": "asc"}], "version": True, "seq_no_primary_term": True,
                 "query": {"match_all": {}}}
            if after is not None:
                q["search_after"] = after
            hits = self.call("POST", f"/{index}/_search", q)[1]["hits"]["hits"]
            for h in hits:
                out[h["_id"]] = (h["_source"], h["_version"], h["_seq_no"])
            if len(hits) < 5000:
                return out
            after = hits[-1]["sort"]

    def count(self, pattern):
        try:
            self.call("POST", f"/{pattern}/_refresh")
            return self.call("GET", f"/{pattern}/_count")[1]["count"]
        except (OSError, RuntimeError):
            return -1


MAPPING = {"boolean": "boolean", "int": "integer", "long": "long", "float": "float", "double": "double",
           "date": "date", "timestamp": "date", "timestamptz": "date", "string": "keyword", "binary": "binary"}


def mapping(columns):
    """The index mapping of a table's columns: its Iceberg types' nearest
    field types; a decimal is a keyword (its exact digits), dynamic off
    (a field the table does not have is kept in _source, unindexed)."""
    props = {}
    for n, t in columns:
        props[n] = {"type": "keyword"} if t.startswith("decimal") else {"type": MAPPING.get(t, "object")}
        if t in ("timestamp", "timestamptz"):
            props[n]["format"] = "strict_date_optional_time_nanos"
    return {"mappings": {"dynamic": False, "properties": props}}


# ---------------------------------------------------------------- expected documents

def doc_value(v, t):
    """A debezium-json value of Iceberg type t, typed as Spark's (norm)."""
    if v is None:
        return None
    if t in ("float", "double") and isinstance(v, str):
        return norm(float(v.replace("Infinity", "inf")), t)
    if t.startswith("decimal"):
        return decimal.Decimal(v)
    if t == "date":
        return datetime.date.fromisoformat(v)
    if t == "timestamp":
        return datetime.datetime.fromisoformat(v)
    if t == "timestamptz":
        return datetime.datetime.fromisoformat(v).astimezone(UTC)
    if t == "binary":
        return base64.b64decode(v)
    return norm(v, t)


def doc_id(values):
    """The sink's document id of a key (its columns' values, in order):
    one column: its value as text; several: the JSON array."""
    if len(values) == 1:
        v = values[0]
        return v if isinstance(v, str) else json.dumps(v)
    return json.dumps(values, separators=(",", ":"))


def head_docs(head, keys):
    """{id: {column: typed value}} that an index must hold: keys are the
    key columns, None for the row id."""
    out = {}
    for r in head["rows"]:
        row = {n: norm(from_heads_json(r.get(n)), t) for n, t in head["columns"]}
        if keys is None:
            key = doc_id([r["_row_id"]])
        else:
            key = doc_id([r[k] for k in keys])  # bigint and string keys: plain JSON
        out[key] = row
    return out


def compare(node, head, keys, index):
    """(exact, lines, documents): the index against the head."""
    want = head_docs(head, keys)
    types = dict(head["columns"])
    docs = node.documents(index)
    if docs is None:
        return False, [f"  no index {index}"], {}
    lines, bad = [], 0
    for k in sorted(set(want) - set(docs))[:4]:
        lines.append(f"  missing    {k}: {want[k]}")
    for k in sorted(set(docs) - set(want))[:4]:
        lines.append(f"  unexpected {k}: {docs[k][0]}")
    for k in sorted(set(want) & set(docs)):
        src = dict(docs[k][0])
        problems = []
        # The id of the event that wrote the document (docs/sinks.md#event-ids).
        eid = str(src.pop("__event_id", ""))
        parts = eid.split(":")
        if len(parts) != 4 or not parts[1].isdigit() or not parts[2].isdigit() or parts[3] not in ("c", "u", "r"):
            problems.append(f"__event_id {eid!r}, want <table_uuid>:<seq>:<row_id>:<c|u|r>")
        if set(src) != set(types):
            problems.append(f"fields {sorted(src)}, the table's {sorted(types)}")
        for n, t in types.items():
            try:
                got = doc_value(src.get(n), t)
            except (ValueError, TypeError, decimal.InvalidOperation) as err:
                problems.append(f"{n}: {src.get(n)!r} does not read as {t}: {err}")
                continue
            if got != want[k][n]:
                problems.append(f"{n} = {src.get(n)!r}, Spark's {want[k][n]!r}")
        if problems:
            bad += 1
            if bad <= 4:
                lines.append(f"  document {k}: " + "; ".join(problems))
    missing, extra = len(set(want) - set(docs)), len(set(docs) - set(want))
    exact = not missing and not extra and not bad
    if not exact:
        lines.insert(0, f"  {len(docs)} documents, {len(want)} rows: {missing} missing, {extra} unexpected, {bad} differ")
    return exact, lines, docs


def index_of(mode, table):
    return f"{mode}-{table}"


# ---------------------------------------------------------------- daemons

def config(a, mode, s, state):
    lines = [f"name: interop-opensearch-{mode}",
             f'catalog: {{name: {s.catalog}, type: sql, uri: "file:{s.db}", warehouse: "file://{s.warehouse}"}}',
             "tables:"]
    for t in s.tables:
        key = f", key: [{', '.join(s.keys(t))}]" if s.key_config else ""
        lines.append(f'  - {{name: "{s.namespace}.{t}", start: earliest{key}}}')
    lines += ["poll: {interval: 100ms}", f"chunk: {a.chunk}", "sink:", "  type: opensearch",
              f'  opensearch: {{urls: ["{a.url}"], index: "{mode}-{{table}}", batch: {{max_docs: {a.max_docs}}}, '
              f'timeout: 10s}}',
              f'state: {{path: "{state}"}}']
    path = os.path.join(a.work, f"{mode}.yaml")
    with open(path, "w") as fh:
        fh.write("\n".join(lines) + "\n")
    return path


def has_sink(a):
    """Whether this icecdc knows sink type opensearch (its config check
    names sink.type when it does not)."""
    probe = Stream(["probe"], {}, "local", a.catalog_db, a.warehouse, NS, lambda t: None, False)
    cfg = config(a, "probe", probe, os.path.join(a.work, "probe.db"))
    p = subprocess.run([a.icecdc, "status", "-c", cfg], capture_output=True, text=True, timeout=60)
    out = p.stdout + p.stderr
    if 'unknown key "opensearch"' in out or "sink.type" in out:
        return False
    if "config:" in out:
        raise RuntimeError("icecdc refuses the part's opensearch config: "
                           + next(ln for ln in out.splitlines() if "config:" in ln).strip())
    return True


def start(a, mode, cfg, log, *extra):
    return subprocess.Popen([a.icecdc, "run", "-c", cfg, *extra], stdout=log, stderr=subprocess.STDOUT)


def run_once(a, cfg, state, label, timeout=300):
    t0 = time.monotonic()
    with open(os.path.join(a.work, f"{label}.log"), "w") as log:
        try:
            p = subprocess.run([a.icecdc, "run", "--once", "-c", cfg, "--state", state], stdout=log,
                               stderr=subprocess.STDOUT, timeout=timeout)
        except subprocess.TimeoutExpired:
            raise Stuck(f"{label}: `icecdc run --once -c {cfg}` did not end within {timeout}s") from None
    if p.returncode != 0:
        with open(log.name, encoding="utf-8", errors="replace") as fh:
            tail = fh.read()[-1500:]
        raise RuntimeError(f"{label}: `icecdc run --once -c {cfg} --state {state}` exited {p.returncode}:\n{tail}")
    return time.monotonic() - t0


def delivered(path):
    """The events `commit delivered` lines of a daemon log count."""
    n = 0
    try:
        with open(path, encoding="utf-8", errors="replace") as fh:
            for ln in fh:
                if '"commit delivered"' in ln:
                    try:
                        n += json.loads(ln).get("events", 0)
                    except json.JSONDecodeError:
                        pass
    except FileNotFoundError:
        pass
    return n


def alive(daemons, logs):
    for mode, d in daemons.items():
        if d.poll() is not None:
            with open(logs[mode], encoding="utf-8", errors="replace") as fh:
                tail = fh.read()[-2000:]
            raise RuntimeError(f"`{' '.join(d.args)}` exited with {d.returncode}:\n{tail}")


def copy_state(src, dst):
    for suffix in ("", "-wal", "-shm", ".lock"):
        if os.path.exists(src + suffix):
            shutil.copy2(src + suffix, dst + suffix)


# ---------------------------------------------------------------- the node's restart

def ready_lines(a):
    with open(a.node_log, encoding="utf-8", errors="replace") as fh:
        return sum(1 for ln in fh if ln.startswith("opensearch node ready"))


def restart_node(a, node, down_secs):
    """SIGTERM to the node, down_secs without it, then the same command on
    the same data; returns (seconds down in all, seconds to green)."""
    with open(a.node_pid_file) as fh:
        pid = int(fh.read().strip())
    t0 = time.monotonic()
    os.kill(pid, signal.SIGTERM)
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            break
        time.sleep(0.2)
    else:
        os.kill(pid, signal.SIGKILL)
    time.sleep(down_secs)
    before = ready_lines(a)
    t1 = time.monotonic()
    log = open(a.node_log, "a")
    p = subprocess.Popen([a.node_cmd], stdout=log, stderr=subprocess.STDOUT, start_new_session=True)
    with open(a.node_pid_file, "w") as fh:
        fh.write(f"{p.pid}\n")
    deadline = time.monotonic() + 300
    while ready_lines(a) == before:
        if p.poll() is not None:
            raise RuntimeError(f"the restarted node exited with {p.returncode} (log {a.node_log})")
        if time.monotonic() > deadline:
            raise Stuck(f"the restarted node was not ready within 300s (log {a.node_log})")
        time.sleep(0.2)
    if not node.up():
        raise RuntimeError("the restarted node says it is ready but its health does not answer")
    return time.monotonic() - t0, time.monotonic() - t1


# ---------------------------------------------------------------- the proof

def check_all(node, streams, label, quiet=False):
    """Compares every index with its head; prints a line a stream and table
    unless quiet (then only whether all are exact). Returns (ok, docs)."""
    ok, docs = True, {}
    for mode, s in streams.items():
        for t in s.tables:
            exact, lines, d = compare(node, s.heads[t], s.keys(t), index_of(mode, t))
            docs[mode, t] = d
            ok = ok and exact
            if not quiet:
                print(f"opensearch {label} {mode:5} {t}: {len(s.heads[t]['rows'])} rows, {len(d)} documents: "
                      + ("exact" if exact else "NOT exact"), flush=True)
                for ln in lines:
                    print(ln)
    return ok, docs


def unchanged(before, after, label):
    """Whether every document has the same _source and _version; prints
    one line, with how many were written again (_seq_no moved)."""
    changed, rewritten, lines = 0, 0, []
    for k, b in before.items():
        a = after.get(k, {})
        for i in set(b) | set(a):
            if i not in a or i not in b or a[i][0] != b[i][0] or a[i][1] != b[i][1]:
                changed += 1
                if len(lines) < 4:
                    lines.append(f"  {k[0]}-{k[1]} {i}: before {b.get(i, 'none')}, after {a.get(i, 'none')}")
            elif a[i][2] != b[i][2]:
                rewritten += 1
    total = sum(len(b) for b in before.values())
    print(f"opensearch {label}: {total} documents, {changed} changed (_source or _version), "
          f"{rewritten} written again at their own version (_seq_no moved)", flush=True)
    for ln in lines:
        print(ln)
    return changed == 0


def create_indexes(node, streams):
    for mode, s in streams.items():
        for t in s.tables:
            index = index_of(mode, t)
            node.call("DELETE", f"/{index}", ok=(200, 404))
            node.call("PUT", f"/{index}", mapping(s.heads[t]["columns"]))


def native(a, node, streams):
    t0 = time.monotonic()
    create_indexes(node, streams)
    modes = list(streams)
    total = {m: sum(len(s.heads[t]["rows"]) for t in s.tables) for m, s in streams.items()}
    cfgs = {m: config(a, m, s, os.path.join(a.work, f"{m}.db")) for m, s in streams.items()}
    logs = {m: os.path.join(a.work, f"{m}-run.log") for m in modes}
    fhs = {m: open(logs[m], "w") for m in modes}
    daemons = {m: start(a, m, cfgs[m], fhs[m]) for m in modes}
    deadline = time.monotonic() + a.timeout
    try:
        # 1. SIGKILL the daemons once a third of the Spark rows' documents
        # are in.
        while min(node.count(f"{m}-*") for m in MODES) < total["ident"] // 3:
            alive(daemons, logs)
            if time.monotonic() > deadline:
                raise Stuck(f"fewer than {total['ident'] // 3} documents in the indexes after {a.timeout:.0f}s")
            time.sleep(0.2)
        counts = {m: node.count(f"{m}-*") for m in modes}
        for m in modes:
            daemons[m].send_signal(signal.SIGKILL)
            daemons[m].wait()
            copy_state(os.path.join(a.work, f"{m}.db"), os.path.join(a.work, f"{m}-at-kill.db"))
        print("opensearch: SIGKILL of the daemons at " + ", ".join(f"{counts[m]} {m}" for m in modes)
              + " documents (events of whole commits delivered: " + ", ".join(str(delivered(logs[m])) for m in modes)
              + "); their state files copied", flush=True)
        daemons = {m: start(a, m, cfgs[m], fhs[m]) for m in modes}
        # 2. Stop the node for a while once the Spark daemons have delivered
        # another commit (or all is in: small tables), and start it again.
        mark = {m: delivered(logs[m]) for m in MODES}
        while not all(delivered(logs[m]) > mark[m] for m in MODES):
            if check_all(node, streams, "", quiet=True)[0]:
                break
            alive(daemons, logs)
            if time.monotonic() > deadline:
                raise Stuck(f"the restarted daemons delivered nothing within {a.timeout:.0f}s")
            time.sleep(0.5)
        down, green = restart_node(a, node, a.node_down)
        alive(daemons, logs)
        print(f"opensearch: node stopped (SIGTERM) and started again on its data while the daemons ran: "
              f"down {down:.1f}s, {green:.1f}s of it starting", flush=True)
        # 3. Every index equal to its head.
        while True:
            alive(daemons, logs)
            ok, _ = check_all(node, streams, "", quiet=True)
            if ok:
                break
            if time.monotonic() > deadline:
                print(f"opensearch: FAILED: the indexes did not reach the heads within {a.timeout:.0f}s", flush=True)
                break
            time.sleep(1)
    finally:
        for d in daemons.values():
            if d.poll() is None:
                d.send_signal(signal.SIGTERM)
        for d in daemons.values():
            try:
                d.wait(timeout=30)
            except subprocess.TimeoutExpired:
                d.kill()
                d.wait()
    print(f"opensearch: the daemons caught up in {time.monotonic() - t0:.1f}s (chunk {a.chunk}, "
          f"batch.max_docs {a.max_docs}); SIGTERM: exit " + ", ".join(str(daemons[m].returncode) for m in modes),
          flush=True)
    good, docs = check_all(node, streams, "head")
    good = good and all(d.returncode == 0 for d in daemons.values())
    for m in modes:
        secs = run_once(a, cfgs[m], os.path.join(a.work, f"{m}.db"), f"{m}-once")
        print(f"opensearch: {m}: run --once with the daemon's state: {secs:.1f}s, "
              f"{delivered(os.path.join(a.work, f'{m}-once.log'))} events delivered", flush=True)
    ok2, docs2 = check_all(node, streams, "after run --once", quiet=True)
    good = unchanged(docs, docs2, "run --once at the head") and ok2 and good
    states = {m: os.path.join(a.work, f"{m}-at-kill.db") for m in modes}
    secs = all_once(a, cfgs, states, "replay-kill")
    print(f"opensearch: replay from the state copied at the kill, the daemons at once: {secs:.1f}s, events "
          f"delivered: {', '.join(str(delivered(os.path.join(a.work, f'{m}-replay-kill.log'))) for m in modes)}",
          flush=True)
    ok3, docs3 = check_all(node, streams, "after the replay", quiet=True)
    good = unchanged(docs, docs3, "replay from the kill's checkpoint") and ok3 and good
    states = {m: os.path.join(a.work, f"{m}.db") for m in modes}
    for m in modes:
        p = subprocess.run([a.icecdc, "reset", "--all", "-c", cfgs[m], "--state", states[m]], capture_output=True,
                           text=True, timeout=120)
        if p.returncode != 0:
            raise RuntimeError(f"`icecdc reset --all -c {cfgs[m]}` exited {p.returncode}: {p.stderr.strip()[-500:]}")
    secs = all_once(a, cfgs, states, "replay-all")
    print(f"opensearch: replay from the start (icecdc reset --all), the daemons at once: {secs:.1f}s, events "
          f"delivered: {', '.join(str(delivered(os.path.join(a.work, f'{m}-replay-all.log'))) for m in modes)}",
          flush=True)
    ok4, docs4 = check_all(node, streams, "after the full replay", quiet=True)
    good = unchanged(docs, docs4, "replay from the start") and ok4 and good
    return 0 if control(node, streams["ident"]) and good else 1


def all_once(a, cfgs, states, label):
    """run_once of every daemon at once; the seconds they took."""
    from concurrent.futures import ThreadPoolExecutor
    t0 = time.monotonic()
    with ThreadPoolExecutor(max_workers=len(cfgs)) as pool:
        for f in [pool.submit(run_once, a, cfgs[m], states[m], f"{m}-{label}") for m in cfgs]:
            f.result()
    return time.monotonic() - t0


def control(node, s):
    """The comparison must see a document changed, one deleted and one
    added by hand (in the ident index of the table with the most rows,
    after every other check): each is a failure it reports."""
    heads = s.heads
    t = max(s.tables, key=lambda x: len(heads[x]["rows"]))
    index = index_of("ident", t)
    docs = node.documents(index)
    ids = sorted(docs)
    if len(ids) < 2:
        print(f"opensearch control: FAILED: {index} has {len(ids)} documents; it needs two")
        return False
    changed, gone = ids[0], ids[1]
    src, version, _ = docs[changed]
    col = next(n for n, ty in heads[t]["columns"] if ty == "string" and n in src)
    bad = dict(src, **{col: f"{src[col]} (changed by hand)"})
    node.call("PUT", f"/{index}/_doc/{changed}?version={version + 1}&version_type=external_gte", bad)
    node.call("DELETE", f"/{index}/_doc/{gone}")
    node.call("PUT", f"/{index}/_doc/by-hand", src)
    exact, lines, _ = compare(node, heads[t], s.keys(t), index)
    want = f"  {len(docs)} documents, {len(docs)} rows: 1 missing, 1 unexpected, 1 differ"
    found = not exact and lines and lines[0] == want
    print(f"opensearch control: document {changed} of {index} changed by hand, {gone} deleted and by-hand added: "
          + ("each found" if found else "NOT all found:"), flush=True)
    if not found:
        for ln in lines:
            print(ln)
    return bool(found)


# ---------------------------------------------------------------- by hand (no sink yet)

def bulk_items(events, table, mode):
    """`icecdc changes` events as _bulk lines, the sink's model: id from
    the key, version sequence_number << 20 | event index in its snapshot."""
    out, pos = [], Counter()
    for ev in events:
        src = ev["source"]
        i = pos[src["snapshot_id"]]
        pos[src["snapshot_id"]] += 1
        version = src["sequence_number"] << INDEX_BITS | min(i, (1 << INDEX_BITS) - 1)
        img = ev["before"] if ev["op"] == "d" else ev["after"]
        key = doc_id([src["row_id"]]) if mode == "rowid" else doc_id([img[k] for k in key_columns(table)])
        meta = {"_index": index_of(mode, table), "_id": key, "version": version, "version_type": "external_gte"}
        if ev["op"] == "d":
            out.append(json.dumps({"delete": meta}) + "\n")
        else:
            out.append(json.dumps({"index": meta}) + "\n" + json.dumps(ev["after"]) + "\n")
    return out


def send(node, items, chunk):
    """Sends items in _bulk requests of chunk; every item must be written,
    refused as older (409) or a delete of a missing document (404)."""
    counts = Counter()
    for i in range(0, len(items), chunk):
        body = "".join(items[i:i + chunk])
        res = node.call("POST", "/_bulk", body, ndjson=True)[1]
        for it in res["items"]:
            (verb, r), = it.items()
            st = r.get("status")
            if st in (200, 201) or st == 409 or (verb == "delete" and st == 404):
                counts[st] += 1
            else:
                raise RuntimeError(f"_bulk {verb} {r.get('_index')}/{r.get('_id')}: {st} {r.get('error')}")
    return counts


def by_hand(a, node, streams):
    create_indexes(node, streams)
    items = {}
    for t in streams["ident"].tables:
        events = [json.loads(ln) for ln in changes(a.icecdc, a.catalog_db, a.warehouse, t)]
        for m in MODES:
            items[m, t] = bulk_items(events, t, m)
    # Every other chunk twice: a retried request, then the rest.
    sent = Counter()
    for k, its in items.items():
        for i in range(0, len(its), a.chunk):
            part = its[i:i + a.chunk]
            sent += send(node, part * (2 if (i // a.chunk) % 2 else 1), a.max_docs)
    print(f"opensearch (by hand): {sum(len(v) for v in items.values())} items from icecdc changes, every other "
          f"{a.chunk}-item chunk sent twice: {dict(sent)} by status", flush=True)
    good, docs = check_all(node, streams, "(by hand) head")
    # Replay everything: nothing may change.
    replay = Counter()
    for its in items.values():
        replay += send(node, its, a.max_docs)
    print(f"opensearch (by hand): replay of every item: {dict(replay)} by status", flush=True)
    ok2, docs2 = check_all(node, streams, "(by hand) after the replay", quiet=True)
    good = unchanged(docs, docs2, "(by hand) replay from the start") and ok2 and good
    return 0 if control(node, streams["ident"]) and good else 1


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--icecdc", required=True)
    ap.add_argument("--url", required=True, help="the node's HTTP URL")
    ap.add_argument("--node-cmd", required=True, help="the node's start script (run again to restart it)")
    ap.add_argument("--node-pid-file", required=True)
    ap.add_argument("--node-log", required=True, help="the node's stdout: 'opensearch node ready' lines")
    ap.add_argument("--catalog-db", required=True)
    ap.add_argument("--warehouse", required=True)
    ap.add_argument("--heads", required=True)
    ap.add_argument("--work", required=True)
    ap.add_argument("--chunk", type=int, default=7)
    ap.add_argument("--max-docs", type=int, default=50)
    ap.add_argument("--node-down", type=float, default=3, help="seconds the node stays stopped")
    ap.add_argument("--timeout", type=float, default=420)
    ap.add_argument("--producer", choices=("auto", "native", "bulk"), default="auto")
    ap.add_argument("--flink-catalog-db", help="the Flink upsert tables' catalog (flink_upserts.py): adds them")
    ap.add_argument("--flink-warehouse")
    a = ap.parse_args()
    os.makedirs(a.work, exist_ok=True)
    with open(a.heads, encoding="utf-8") as fh:
        heads = json.load(fh)
    tables = compared_tables(a.catalog_db, heads)
    if not tables:
        print("opensearch: skipped: no local Spark table to follow (ICECDC_INTEROP_ONLY leaves them out?)")
        return 3
    node = Node(a.url)
    streams = spark_streams(a, heads, tables)
    producer = a.producer
    if producer == "auto":
        try:
            producer = "native" if has_sink(a) else "bulk"
        except RuntimeError as err:
            print(f"opensearch: FAILED: {err}")
            return 1
    if producer == "bulk":
        print("opensearch: skipped: icecdc has no sink type opensearch yet (`icecdc run` into the node is what this "
              "part checks); meanwhile the comparison and the version model are checked with documents indexed by "
              "hand through _bulk")
        rc = run_part("opensearch", by_hand, a, node, streams)
        return 3 if rc == 0 else rc
    if a.flink_catalog_db:
        streams["flink"] = flink_stream(a)
    return run_part("opensearch", native, a, node, streams)


if __name__ == "__main__":
    sys.exit(main())
