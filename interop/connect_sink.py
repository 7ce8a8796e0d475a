"""connect sink: icecdc's events through Kafka Connect into PostgreSQL.

Debezium's JDBC sink connector (Kafka Connect standalone, JsonConverter with
schemas.enable=true, insert.mode=upsert, delete.enabled=true,
primary.key.mode=record_key) consumes the topics and writes one
PostgreSQL table per Iceberg table; after the stream, every PostgreSQL
table must equal the Iceberg table's rows at the head as Spark reads them
(run_scenarios.py --heads), column by column. It runs twice: keyed by
_row_id ("rowid" topics and tables) and keyed by the identifier columns
("ident"). A third copy of the ident topics ("replay") carries every
chunk twice in a row, as an at-least-once delivery that replays an
unconfirmed chunk does: the sink must converge to the same rows. A second
consumer (confluent-kafka, below) decodes every record's schema and payload
the way JsonConverter does, checks the payload against its schema, applies
the events by key and must reach the same rows.

The records come from one of two producers:
  native      `icecdc run` with the Kafka sink and format debezium-connect-json
  translated  `icecdc changes` (debezium-json) turned into Connect JSON here,
              with the Debezium logical types the type mapping below names;
              it proves the chain while the format is not in icecdc
              (run.sh picks native when icecdc has the format).

Type mapping (Iceberg -> Connect schema -> PostgreSQL column the JDBC sink
creates); compared as the Python value in brackets:
  boolean      boolean                                       boolean      [bool]
  int          int32                                         integer      [int]
  long         int64                                         bigint       [int]
  float        float32                                       real         [float, rounded to float32]
  double       float64                                       double prec. [float]
  decimal(p,s) bytes org.apache.kafka.connect.data.Decimal   numeric(p,s) [Decimal]
  date         int32 io.debezium.time.Date                   date         [date]
  timestamp    int64 io.debezium.time.MicroTimestamp         timestamp    [naive datetime]
  timestamptz  string io.debezium.time.ZonedTimestamp        timestamptz  [UTC datetime]
  string       string                                        text         [str]
  binary       bytes                                         bytea        [bytes]
The row-id key adds _row_id (int64 -> bigint) as the primary key.

Prints one line per scenario and mode: rows compared, exact or not.
"""

import argparse
import base64
import datetime
import decimal
import json
import os
import signal
import sqlite3
import struct
import subprocess
import sys
import time
import traceback
from collections import Counter

NS = "interop"
# Scenarios the sink does not get: why.
LEFT_OUT = {
    "upgrade": "its rows written at format v2 have no lineage and are never emitted (docs/contract.md): "
               "the head holds rows the stream never carried",
}
MODES = ("rowid", "ident", "replay")
EPOCH = datetime.datetime(1970, 1, 1)
decimal.getcontext().prec = 80  # decimal(38, s) and its unscaled value exactly
UTC = datetime.timezone.utc


def key_columns(table):
    return ["order_id"] if table.startswith("bookshop") else ["id"]


# ---------------------------------------------------------------- typed values

def norm(v, t):
    """A value of Iceberg type t in the form every side is compared in."""
    if v is None:
        return None
    if t == "float":
        return struct.unpack("f", struct.pack("f", float(v)))[0]
    if t == "double":
        return float(v)
    if t.startswith("decimal"):
        return decimal.Decimal(v)
    if t == "timestamptz":
        return v.astimezone(UTC)
    if t == "binary":
        return bytes(v)
    return v


def from_heads_json(v):
    """run_scenarios.py --heads writes non-JSON values as {"type": text}."""
    if not isinstance(v, dict):
        return v
    (k, x), = v.items()
    return {
        "decimal": decimal.Decimal,
        "date": datetime.date.fromisoformat,
        "timestamp": datetime.datetime.fromisoformat,
        "timestamptz": datetime.datetime.fromisoformat,
        "binary": base64.b64decode,
    }[k](x)


# ---------------------------------------------------------------- Connect JSON (translated producer)

def connect_field(name, t, optional=True):
    """The Connect schema of one Iceberg primitive column."""
    s = {"field": name, "optional": optional}
    if t.startswith("decimal"):
        p, sc = t[len("decimal("):-1].split(",")
        s.update(type="bytes", name="org.apache.kafka.connect.data.Decimal", version=1,
                 parameters={"scale": sc.strip(), "connect.decimal.precision": p.strip()})
        return s
    simple = {"boolean": "boolean", "int": "int32", "long": "int64", "float": "float", "double": "double",
              "string": "string", "binary": "bytes"}
    if t in simple:
        s["type"] = simple[t]
    elif t == "date":
        s.update(type="int32", name="io.debezium.time.Date", version=1)
    elif t == "timestamp":
        s.update(type="int64", name="io.debezium.time.MicroTimestamp", version=1)
    elif t == "timestamptz":
        s.update(type="string", name="io.debezium.time.ZonedTimestamp", version=1)
    else:
        raise ValueError(f"column {name}: no Connect mapping for Iceberg type {t}")
    return s


def connect_value(v, t):
    """icecdc's debezium-json value of Iceberg type t as Connect JSON."""
    if v is None:
        return None
    if t.startswith("decimal"):
        scale = int(t[len("decimal("):-1].split(",")[1])
        unscaled = int(decimal.Decimal(v).scaleb(scale).to_integral_exact())
        n = max(1, (unscaled.bit_length() + 8) // 8)
        return base64.b64encode(unscaled.to_bytes(n, "big", signed=True)).decode()
    if t == "date":
        return (datetime.date.fromisoformat(v) - EPOCH.date()).days
    if t == "timestamp":
        dt = datetime.datetime.fromisoformat(v)
        delta = dt - EPOCH
        return (delta.days * 86400 + delta.seconds) * 1_000_000 + delta.microseconds
    return v  # timestamptz: the ISO string as it is; binary: base64 as it is


def table_metadata(catalog_db, table):
    """The table's current metadata.json, parsed."""
    with sqlite3.connect(catalog_db) as c:
        loc = c.execute("SELECT metadata_location FROM iceberg_tables WHERE table_namespace = ? AND table_name = ?",
                        (NS, table)).fetchone()[0]
    with open(loc.removeprefix("file:").removeprefix("//"), encoding="utf-8") as fh:
        return json.load(fh)


def table_schemas(catalog_db, table):
    """{snapshot_id: [(name, type)]}."""
    meta = table_metadata(catalog_db, table)
    schemas = {s["schema-id"]: [(f["name"], f["type"]) for f in s["fields"]] for s in meta["schemas"]}
    return {s["snapshot-id"]: schemas[s.get("schema-id", meta["current-schema-id"])] for s in meta.get("snapshots", [])}


def translate(events, schemas, table, mode):
    """icecdc's debezium-json events -> [(key json, value json or None)], tombstones after deletes."""
    out = []
    for ev in events:
        cols = schemas[ev["source"]["snapshot_id"]]
        types = dict(cols)
        row_schema = {"type": "struct", "optional": True, "name": f"icecdc.{NS}.{table}.Value",
                      "fields": [connect_field(n, t) for n, t in cols]}
        src = ev["source"]
        src_schema = {"type": "struct", "optional": False, "name": "io.icecdc.Source",
                      "fields": [{"field": k, "optional": v is None,
                                  "type": {bool: "boolean", int: "int64", str: "string"}.get(type(v), "string")}
                                 for k, v in src.items()]}
        envelope = {"type": "struct", "optional": False, "name": f"icecdc.{NS}.{table}.Envelope", "version": 1,
                    "fields": [dict(row_schema, field="before"), dict(row_schema, field="after"),
                               dict(src_schema, field="source"),
                               {"field": "op", "type": "string", "optional": False},
                               {"field": "ts_ms", "type": "int64", "optional": True}]}

        def image(img):
            return None if img is None else {n: connect_value(img.get(n), t) for n, t in cols}

        payload = {"before": image(ev["before"]), "after": image(ev["after"]), "source": src,
                   "op": ev["op"], "ts_ms": ev["ts_ms"]}
        if mode == "rowid":
            key = {"schema": {"type": "struct", "optional": False, "name": f"icecdc.{NS}.{table}.Key",
                              "fields": [{"field": "_row_id", "type": "int64", "optional": False}]},
                   "payload": {"_row_id": src["row_id"]}}
        else:
            img = ev["before"] if ev["op"] == "d" else ev["after"]
            kc = key_columns(table)
            key = {"schema": {"type": "struct", "optional": False, "name": f"icecdc.{NS}.{table}.Key",
                              "fields": [connect_field(n, types[n], optional=False) for n in kc]},
                   "payload": {n: connect_value(img[n], types[n]) for n in kc}}
        kj = json.dumps(key, separators=(",", ":"))
        out.append((kj, json.dumps({"schema": envelope, "payload": payload}, separators=(",", ":"))))
        if ev["op"] == "d":
            out.append((kj, None))
    return out


# ---------------------------------------------------------------- the second consumer: JsonConverter's reading

class SchemaError(Exception):
    pass


def decode(schema, v, where):
    """A Connect JSON value read with its schema (schemas.enable=true), typed."""
    if v is None:
        if not schema.get("optional", False):
            raise SchemaError(f"{where}: null for a required {schema.get('type')}")
        return None
    t, name = schema.get("type"), schema.get("name")
    if t == "struct":
        if not isinstance(v, dict):
            raise SchemaError(f"{where}: struct payload is {type(v).__name__}")
        fields = {f["field"]: f for f in schema.get("fields", [])}
        extra = set(v) - set(fields)
        if extra:
            raise SchemaError(f"{where}: payload fields {sorted(extra)} not in its schema")
        return {n: decode(f, v.get(n), f"{where}.{n}") for n, f in fields.items()}
    if name == "org.apache.kafka.connect.data.Decimal":
        scale = int(schema["parameters"]["scale"])
        return decimal.Decimal(int.from_bytes(base64.b64decode(v), "big", signed=True)).scaleb(-scale)
    if name == "io.debezium.data.VariableScaleDecimal":
        return decimal.Decimal(int.from_bytes(base64.b64decode(v["value"]), "big", signed=True)).scaleb(-v["scale"])
    if name in ("io.debezium.time.Date", "org.apache.kafka.connect.data.Date"):
        return EPOCH.date() + datetime.timedelta(days=v)
    if name == "io.debezium.time.MicroTimestamp":
        return EPOCH + datetime.timedelta(microseconds=v)
    if name in ("io.debezium.time.Timestamp", "org.apache.kafka.connect.data.Timestamp"):
        return EPOCH + datetime.timedelta(milliseconds=v)
    if name == "io.debezium.time.NanoTimestamp":
        return EPOCH + datetime.timedelta(microseconds=v // 1000)
    if name in ("io.debezium.time.ZonedTimestamp", "io.debezium.time.IsoTimestamp"):
        return datetime.datetime.fromisoformat(v)
    if name == "io.debezium.time.IsoDate":
        return datetime.date.fromisoformat(v.removesuffix("Z"))
    if name == "io.debezium.time.MicroTime":
        return (EPOCH + datetime.timedelta(microseconds=v)).time()
    if t in ("int8", "int16", "int32", "int64"):
        if not isinstance(v, int) or isinstance(v, bool):
            raise SchemaError(f"{where}: {t} payload is {v!r}")
        return v
    if t in ("float", "double"):
        if isinstance(v, str) and v in ("NaN", "Infinity", "-Infinity"):
            return float(v.replace("Infinity", "inf"))
        if not isinstance(v, (int, float)) or isinstance(v, bool):
            raise SchemaError(f"{where}: {t} payload is {v!r}")
        return float(v)
    if t == "boolean":
        if not isinstance(v, bool):
            raise SchemaError(f"{where}: boolean payload is {v!r}")
        return v
    if t == "string":
        if not isinstance(v, str):
            raise SchemaError(f"{where}: string payload is {v!r}")
        return v
    if t == "bytes":
        return base64.b64decode(v)
    if t == "array":
        if not isinstance(v, list):
            raise SchemaError(f"{where}: array payload is {type(v).__name__}")
        return [decode(schema["items"], x, f"{where}[{i}]") for i, x in enumerate(v)]
    raise SchemaError(f"{where}: schema type {t!r} (name {name!r}) not read here")


def consume_topic(brokers, topic):
    """[(key bytes, value bytes or None)] of a topic, from the beginning to its end."""
    from confluent_kafka import Consumer, KafkaError, KafkaException, TopicPartition
    c = Consumer({"bootstrap.servers": brokers, "group.id": f"icecdc-interop-check-{os.getpid()}",
                  "enable.auto.commit": False, "auto.offset.reset": "earliest"})
    try:
        try:
            lo, hi = c.get_watermark_offsets(TopicPartition(topic, 0), timeout=10)
        except KafkaException as err:
            if err.args and err.args[0].code() in (KafkaError.UNKNOWN_TOPIC_OR_PART, KafkaError._UNKNOWN_PARTITION):
                return []  # not created yet, or not in this client's metadata yet
            raise
        c.assign([TopicPartition(topic, 0, lo)])
        out = []
        deadline = time.monotonic() + 60
        while hi > lo and (not out or out[-1][2] < hi - 1) and time.monotonic() < deadline:
            m = c.poll(1.0)
            if m is None:
                continue
            if m.error():
                raise RuntimeError(f"consume {topic}: {m.error()}")
            out.append((m.key(), m.value(), m.offset()))
        return [(k, v) for k, v, _ in out]
    finally:
        c.close()


def wait_sunk(brokers, group, topic, stall=120):
    """Waits until the sink connector's consumer group has committed the end
    of the topic (the JDBC sink commits an offset once its records are
    written); gives up when the committed offset has not moved for stall
    seconds. Returns (committed offset, end offset). Every broker request
    has its own deadline: one that passes raises Stuck."""
    from concurrent.futures import TimeoutError as FutureTimeout
    from confluent_kafka import Consumer, ConsumerGroupTopicPartitions, TopicPartition
    from confluent_kafka.admin import AdminClient
    admin = AdminClient({"bootstrap.servers": brokers})
    c = Consumer({"bootstrap.servers": brokers, "group.id": f"icecdc-interop-ends-{os.getpid()}"})
    try:
        _, end = c.get_watermark_offsets(TopicPartition(topic, 0), timeout=10)
        last, moved = None, time.monotonic()
        while True:
            f = admin.list_consumer_group_offsets([ConsumerGroupTopicPartitions(group, [TopicPartition(topic, 0)])],
                                                  request_timeout=30)
            try:
                off = f[group].result(timeout=60).topic_partitions[0].offset
            except FutureTimeout:
                raise Stuck(f"broker {brokers}: the committed offset of group {group} on {topic}: "
                            "no answer within 60s") from None
            if off >= end:
                return off, end
            if off != last:
                last, moved = off, time.monotonic()
            elif time.monotonic() - moved > stall:
                return off, end
            time.sleep(0.5)
    finally:
        c.close()


def second_consumer(records, topic):
    """Applies a topic's records by key as a schemas.enable consumer reads them.
    Returns ({key: row}, problems)."""
    rows, problems = {}, []
    for i, (k, v) in enumerate(records):
        try:
            kj = json.loads(k)
            key = decode(kj["schema"], kj["payload"], f"{topic} record {i} key")
            kid = json.dumps(key, sort_keys=True, default=str)
            if v is None:
                rows.pop(kid, None)
                continue
            vj = json.loads(v)
            env = decode(vj["schema"], vj["payload"], f"{topic} record {i} value")
            if env["op"] == "d":
                rows.pop(kid, None)
            elif env["op"] in ("c", "u", "r"):
                rows[kid] = dict(env["after"], **key)
            else:
                problems.append(f"{topic} record {i}: op {env['op']!r}")
        except (SchemaError, KeyError, ValueError, TypeError) as err:
            problems.append(f"{topic} record {i}: {err}")
            if len(problems) > 5:
                break
    return rows, problems


# ---------------------------------------------------------------- producing

def produce(brokers, topic, records):
    from confluent_kafka import Producer
    p = Producer({"bootstrap.servers": brokers, "enable.idempotence": True, "linger.ms": 5})
    errors = []

    def cb(err, _msg):
        if err:
            errors.append(str(err))
    for k, v in records:
        p.produce(topic, key=k, value=v, on_delivery=cb)
        p.poll(0)
    left = p.flush(60)
    if errors:
        raise RuntimeError(f"produce to {topic}: {errors[0]}")
    if left:
        raise Stuck(f"produce to {topic}: {left} of {len(records)} records not acknowledged within 60s")


def replayed(records, chunk):
    """Every chunk of records twice in a row: chunk 1, chunk 1, chunk 2, chunk 2, …"""
    out = []
    for i in range(0, len(records), chunk):
        out += records[i:i + chunk] * 2
    return out


# ---------------------------------------------------------------- daemons and deadlines (avro_sink.py's too)

class Stuck(RuntimeError):
    """A wait past its deadline; the message says what it waited for."""


def start_run(icecdc, work, log, *, name, catalog_db, warehouse, tables, mode, chunk, fmt, brokers, topic,
              debezium="", extra=()):
    """`icecdc run` of tables of a SQL catalog into the Kafka topic pattern
    topic (tombstones after deletes), from earliest, keyed by key_columns in
    the ident mode, its config and state in work and its output in log;
    debezium is the debezium block's body, extra more config lines."""
    os.makedirs(work, exist_ok=True)
    cfg = os.path.join(work, "icecdc.yaml")
    lines = [f"name: {name}",
             f'catalog: {{name: local, type: sql, uri: "file:{catalog_db}", warehouse: "file://{warehouse}"}}',
             "tables:"]
    for t in tables:
        lines.append(f'  - {{name: "{NS}.{t}", start: earliest'
                     + (f", key: [{', '.join(key_columns(t))}]" if mode == "ident" else "") + "}")
    if debezium:
        lines.append(f"debezium: {{{debezium}}}")
    lines += ["poll: {interval: 100ms}", f"chunk: {chunk}", f"format: {fmt}", *extra, "sink:", "  type: kafka",
              f'  kafka: {{brokers: ["{brokers}"], topic: "{topic}", tombstones: true}}',
              f'state: {{path: "{os.path.join(work, "state.db")}"}}']
    with open(cfg, "w") as fh:
        fh.write("\n".join(lines) + "\n")
    return subprocess.Popen([icecdc, "run", "-c", cfg], stdout=log, stderr=subprocess.STDOUT)


def check_daemons(daemons, log):
    """Raises RuntimeError naming the first daemon that has exited, with the
    end of their log."""
    ended = [d for d in daemons if d.poll() is not None]
    if ended:
        log.flush()
        with open(log.name, encoding="utf-8", errors="replace") as fh:
            tail = fh.read()[-1500:]
        raise RuntimeError(f"`{' '.join(ended[0].args)}` exited with {ended[0].returncode}:\n{tail}")


def wait_topic(label, brokers, topic, n, daemons, log, deadline):
    """The records of topic once it has n, or what it has at the deadline
    (saying so); raises when a daemon has exited."""
    while True:
        check_daemons(daemons, log)
        recs = consume_topic(brokers, topic)
        if len(recs) >= n:
            return recs
        if time.monotonic() > deadline:
            print(f"{label}: {topic} has {len(recs)} of its {n} records at the deadline", flush=True)
            return recs
        time.sleep(0.5)


def stop_daemons(label, daemons):
    """SIGTERM, and SIGKILL for a daemon still there 30s later."""
    for d in daemons:
        if d.poll() is None:
            d.send_signal(signal.SIGTERM)
    for d in daemons:
        try:
            d.wait(timeout=30)
        except subprocess.TimeoutExpired:
            print(f"{label}: `{' '.join(d.args)}` did not stop within 30s of SIGTERM; killed", flush=True)
            d.kill()
            d.wait()


def changes(icecdc, catalog_db, warehouse, table, *args, timeout=300):
    """The output lines of `icecdc changes` of a table of a SQL catalog;
    one line of error when it fails or has not ended within timeout."""
    cmd = [icecdc, "changes", "--catalog-type", "sql", "--catalog-uri", f"file:{catalog_db}",
           "--warehouse", f"file://{warehouse}", "--table", f"{NS}.{table}", *args]
    try:
        p = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout)
    except subprocess.TimeoutExpired:
        raise Stuck(f"`icecdc changes --table {NS}.{table}` did not end within {timeout}s") from None
    if p.returncode != 0:
        raise RuntimeError(f"`icecdc changes --table {NS}.{table}` exited with {p.returncode}: "
                           f"{(p.stderr.strip().splitlines() or [''])[-1]}")
    return [ln for ln in p.stdout.splitlines() if ln.strip()]


def pg_connect(conninfo):
    """A PostgreSQL connection whose connect and every statement have a
    deadline (a lock the sink holds fails the query instead of holding it)."""
    import psycopg
    conn = psycopg.connect(conninfo, autocommit=True, connect_timeout=10)
    conn.execute("SET TIME ZONE 'UTC'")
    conn.execute("SET statement_timeout = '60s'")
    return conn


def run_native(a, tables, mode, log):
    """`icecdc run` with format debezium-connect-json into the mode's topics;
    the rowid one writes icecdc.schema-changes too (checked after)."""
    return start_run(a.icecdc, os.path.join(a.work, f"native-{mode}"), log, name=f"interop-connect-{mode}",
                     catalog_db=a.catalog_db, warehouse=a.warehouse, tables=tables, mode=mode, chunk=a.chunk,
                     fmt="debezium-connect-json", brokers=a.brokers, topic=f"{mode}.{{namespace}}.{{table}}",
                     debezium="include.schema.changes: true" if mode == "rowid" else "")


SCHEMA_CHANGES = "icecdc.schema-changes"


def expected_schema_changes(catalog_db, table):
    """[(sequence number, CREATE|ALTER, schema id, [top-level columns])] for the
    main branch's snapshots whose schema differs from their parent's: what
    `include.schema.changes` must write for a table followed from earliest."""
    meta = table_metadata(catalog_db, table)
    snaps = {s["snapshot-id"]: s for s in meta.get("snapshots", [])}
    head = meta.get("refs", {}).get("main", {}).get("snapshot-id", meta.get("current-snapshot-id"))
    chain = []
    while head in snaps:
        chain.append(snaps[head])
        head = snaps[head].get("parent-snapshot-id")
    chain.reverse()
    cols = {s["schema-id"]: [f["name"] for f in s["fields"]] for s in meta["schemas"]}
    out, prev = [], None
    for i, s in enumerate(chain):
        sid = s.get("schema-id", meta["current-schema-id"])
        if i == 0:
            kind = "CREATE" if s.get("parent-snapshot-id") is None else "ALTER"
            out.append((s["sequence-number"], kind, sid, cols[sid]))
        elif sid != prev:
            out.append((s["sequence-number"], "ALTER", sid, cols[sid]))
        prev = sid
    return out


def schema_changes_exact(label, topic, recs, read, catalogs, converter, sink_file, how=""):
    """Whether the schema-change records recs of topic, each read by
    read(i, key, value) into its value (raising on one it cannot read),
    are the CREATE and ALTERs that the snapshot schemas of each table of
    catalogs ({table: catalog db}) imply, and whether Connect's converter
    (named converter) converted every one: the FileStreamSink writing
    sink_file (None: not checked) writes one Struct a record. Prints a
    line for the converter and for each table."""
    got = {t: [] for t in catalogs}
    problems = []
    for i, (k, v) in enumerate(recs):
        try:
            rec = read(i, k, v)
        except Stuck:
            raise
        except Exception as err:  # noqa: BLE001 - a record that does not read is a finding, not a crash
            problems.append(f"{topic} record {i}: {type(err).__name__}: {err}")
            continue
        t = rec["source"]["table"]
        if t in got:
            tc = rec["tableChanges"][0]
            got[t].append((rec["source"]["sequence_number"], tc["type"], rec["schema_id"],
                           [c["name"] for c in tc["table"]["columns"]]))
    ok = not problems
    for p in problems[:5]:
        print(f"{label}: {p}")
    if sink_file:
        lines, deadline = [], time.monotonic() + 60
        while time.monotonic() < deadline:
            if os.path.exists(sink_file):
                with open(sink_file, encoding="utf-8") as fh:
                    lines = fh.read().splitlines()
            if len(lines) >= len(recs):
                break
            time.sleep(0.5)
        structs = sum(1 for ln in lines if ln.startswith("Struct{source=Struct{version="))
        cexact = structs == len(recs) == len(lines)
        ok = ok and cexact
        print(f"{label}: {converter} converted {structs} of {len(recs)} records "
              f"(FileStreamSink, {len(lines)} lines): {'exact' if cexact else 'NOT exact'}")
    for t, catalog_db in catalogs.items():
        want = expected_schema_changes(catalog_db, t)
        exact = got[t] == want
        ok = ok and exact
        alters = sum(1 for w in want if w[1] == "ALTER")
        print(f"{label} {t}: {len(want)} records ({alters} ALTER){how}: {'exact' if exact else 'NOT exact'}")
        if not exact:
            print(f"  want {want}\n  got  {got[t]}")
    return ok


def check_schema_changes(a, tables):
    """The rowid daemon's schema-change records, read as a schemas.enable
    consumer reads them, against the tables' snapshot schemas; Connect's own
    JsonConverter read the same records (the file sink)."""
    def read(i, k, v):
        kj, vj = json.loads(k), json.loads(v)
        decode(kj["schema"], kj["payload"], f"{SCHEMA_CHANGES} record {i} key")
        return decode(vj["schema"], vj["payload"], f"{SCHEMA_CHANGES} record {i} value")
    return schema_changes_exact("connect schema-changes", SCHEMA_CHANGES, consume_topic(a.brokers, SCHEMA_CHANGES),
                                read, {t: a.catalog_db for t in tables}, "Connect's JsonConverter",
                                a.schema_changes_file)


# ---------------------------------------------------------------- PostgreSQL

def pg_rows(conn, table, columns):
    with conn.cursor() as cur:
        cur.execute("SELECT count(*) FROM information_schema.tables WHERE table_name = %s", (table,))
        if cur.fetchone()[0] == 0:
            return None
        cur.execute(f'SELECT {", ".join(columns)} FROM "{table}"')
        return cur.fetchall()


def pg_types(conn, table):
    with conn.cursor() as cur:
        cur.execute("SELECT column_name, data_type, numeric_precision, numeric_scale FROM information_schema.columns "
                    "WHERE table_name = %s ORDER BY ordinal_position", (table,))
        out = {}
        for n, dt, p, s in cur.fetchall():
            out[n] = f"numeric({p},{s})" if dt == "numeric" else dt
        return out


def diff(want, got, limit=4):
    w, g = Counter(want), Counter(got)
    lines = [f"missing    {r}" for r in list((w - g).elements())[:limit]]
    lines += [f"unexpected {r}" for r in list((g - w).elements())[:limit]]
    return lines


def compare_head(conn, brokers, h, label, rowid, table, group, topic, n_recs, second):
    """Compares PostgreSQL table (written by the sink connector whose
    consumer group is group, from topic) and a second consumer's rows
    ({key: row}, problems) with a head h of --heads (its columns, and
    _row_id when rowid); prints one line and what differs. Returns
    (PostgreSQL exact, second consumer exact)."""
    types = dict(h["columns"])
    cols = [n for n, _ in h["columns"]]
    keyed = ["_row_id"] + cols if rowid else cols
    ktypes = dict(types, _row_id="long")
    want = [tuple(norm(from_heads_json(r.get(n)), ktypes[n]) for n in keyed) for r in h["rows"]]
    sunk, end = wait_sunk(brokers, group, topic)
    settle = time.monotonic() + 5
    while True:
        rows = pg_rows(conn, table, keyed)
        got = None if rows is None else [tuple(norm(v, ktypes[n]) for n, v in zip(keyed, r)) for r in rows]
        if got is not None and Counter(got) == Counter(want):
            break
        if time.monotonic() > settle:
            break
        time.sleep(0.5)
    by_key, problems = second
    second_rows = [tuple(norm(r.get(n), ktypes[n]) for n in keyed) for r in by_key.values()]
    exact = got is not None and Counter(got) == Counter(want)
    second_exact = Counter(second_rows) == Counter(want) and not problems
    print(f"{label}: {len(want)} rows, {len(keyed)} columns compared ({n_recs} records): "
          f"PostgreSQL {'exact' if exact else 'NOT exact'}, second consumer {'exact' if second_exact else 'NOT exact'}",
          flush=True)
    if not exact:
        if sunk < end:
            print(f"  the sink's consumer group {group} stopped at offset {sunk} of {end}")
        if got is None:
            print(f"  PostgreSQL has no table {table} (see the Connect log)")
        else:
            print(f"  PostgreSQL {table}: {len(got)} rows, the head: {len(want)}")
            print("\n".join("  " + ln for ln in diff(want, got)))
    if not second_exact:
        print("\n".join("  " + ln for ln in problems[:5] + diff(want, second_rows)))
    return exact, second_exact


def compared_tables(catalog_db, heads):
    """The local Spark tables the sink gets (those of heads, less LEFT_OUT);
    prints why each left out one is."""
    with sqlite3.connect(catalog_db) as c:
        present = {r[0] for r in c.execute(
            "SELECT table_name FROM iceberg_tables WHERE catalog_name = 'local' AND table_namespace = ?", (NS,))}
    for t in sorted(present & set(LEFT_OUT)):
        print(f"connect {t}: not compared: {LEFT_OUT[t]}")
    return sorted(t for t in present if t in heads and t not in LEFT_OUT)


# ---------------------------------------------------------------- main

def parse_args(ap, timeout):
    """The arguments both sink parts take (avro_sink.py adds its own to ap),
    parsed; --timeout defaults to timeout seconds."""
    ap.add_argument("--icecdc", required=True)
    ap.add_argument("--brokers", required=True)
    ap.add_argument("--pg", required=True, help="PostgreSQL conninfo (host 127.0.0.1)")
    ap.add_argument("--catalog-db", required=True)
    ap.add_argument("--warehouse", required=True)
    ap.add_argument("--heads", required=True, help="run_scenarios.py --heads output: Spark's rows at each head")
    ap.add_argument("--work", required=True)
    ap.add_argument("--producer", choices=("native", "translated"), required=True)
    ap.add_argument("--chunk", type=int, default=7)
    ap.add_argument("--timeout", type=float, default=timeout, help="seconds to wait for the topics to be complete")
    a = ap.parse_args()
    os.makedirs(a.work, exist_ok=True)
    return a


def load_heads(a, label):
    """(heads, the local Spark tables compared), or None when there is no
    table to stream (said in one line)."""
    with open(a.heads, encoding="utf-8") as fh:
        heads = json.load(fh)
    tables = compared_tables(a.catalog_db, heads)
    if not tables:
        print(f"{label}: skipped: no local Spark table to stream (ICECDC_INTEROP_ONLY leaves them out?)")
        return None
    return heads, tables


def run_part(label, fn, *args):
    """fn(*args), the part's exit status; an error ends the part with one
    line (RuntimeError's say what failed; others are named by their type,
    their traceback in stderr)."""
    try:
        return fn(*args)
    except Exception as err:  # noqa: BLE001 - one line for the stage, the traceback for whoever debugs it
        if not isinstance(err, RuntimeError):
            traceback.print_exc()
        kind = "" if isinstance(err, RuntimeError) else f"{type(err).__name__}: "
        print(f"{label}: FAILED: {kind}{err}", flush=True)
        return 1


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--schema-changes-file", help="where Connect's FileStreamSink writes the schema-change topic")
    a = parse_args(ap, 300)
    loaded = load_heads(a, "connect")
    if loaded is None:
        return 3
    return run_part("connect", check, a, *loaded)


def check(a, heads, tables):
    t0 = time.monotonic()
    want_records = {}
    daemons = []
    log = open(os.path.join(a.work, "icecdc-run.log"), "w")
    for t in tables:
        events = [json.loads(ln) for ln in changes(a.icecdc, a.catalog_db, a.warehouse, t)]
        want_records[t] = len(events) + sum(1 for e in events if e["op"] == "d")
        if a.producer == "translated":
            schemas = table_schemas(a.catalog_db, t)
            for mode in ("rowid", "ident"):
                produce(a.brokers, f"{mode}.{NS}.{t}", translate(events, schemas, t, mode))
    # Wait for the ident topics to be complete, then write their replay copies.
    records = {}
    try:
        if a.producer == "native":
            daemons = [run_native(a, tables, mode, log) for mode in ("rowid", "ident")]
        deadline = time.monotonic() + a.timeout
        for mode in ("rowid", "ident"):
            for t in tables:
                records[mode, t] = wait_topic("connect", a.brokers, f"{mode}.{NS}.{t}", want_records[t], daemons, log,
                                              deadline)
    finally:
        stop_daemons("connect", daemons)
    for t in tables:
        records["replay", t] = replayed(records["ident", t], a.chunk)
        produce(a.brokers, f"replay.{NS}.{t}", records["replay", t])
    print(f"connect: {sum(want_records.values())} records a mode, produced by "
          f"{'icecdc run (format debezium-connect-json)' if a.producer == 'native' else 'translation of icecdc changes'}"
          f" in {time.monotonic() - t0:.1f}s; replay topics carry every {a.chunk}-record chunk twice")

    ok = True
    conn = pg_connect(a.pg)
    t1 = time.monotonic()
    shown_types = False
    for mode in MODES:
        for t in tables:
            topic = f"{mode}.{NS}.{t}"
            exact, second_exact = compare_head(
                conn, a.brokers, heads[t], f"connect {mode:6} {t}", mode == "rowid", f"{mode}_{t}",
                f"connect-jdbc-{mode}", topic, len(records[mode, t]), second_consumer(records[mode, t], topic))
            ok = ok and exact and second_exact
            if exact and not shown_types and t == "types":
                shown_types = True
                print("connect: column types the JDBC sink created for types: "
                      + ", ".join(f"{n} {ty}" for n, ty in pg_types(conn, f"{mode}_{t}").items()))
    if a.producer == "native" and not check_schema_changes(a, tables):
        ok = False
    print(f"connect: compared in {time.monotonic() - t1:.1f}s")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
