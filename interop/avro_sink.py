"""avro: icecdc's format debezium-avro through a real schema registry.

Apicurio Registry (interop/parts/avro.sh starts it) holds the schemas;
icecdc registers them through its Confluent-compatible API
(/apis/ccompat/v7) and writes Confluent's wire format. Two readers:

  Kafka Connect   three Debezium JDBC sink connectors, added to the connect
                  part's worker through its REST API, each with Apicurio's
                  AvroConverter for key and value (Confluent-compatible
                  mode: a 4-byte content id after the magic byte) writing
                  PostgreSQL tables avro_<mode>_<table>; after the stream
                  every table must equal its head, column by column, as in
                  interop/connect_sink.py (whose comparison this reuses):
                  keyed by _row_id (rowid), by the key columns (ident), and
                  the ident records with every chunk twice (replay);
  Python          confluent-kafka's AvroDeserializer with its
                  SchemaRegistryClient on the ccompat API decodes every
                  record; its Avro schema, read back as Connect's
                  AvroConverter reads it (connect.name, connect.version,
                  connect.parameters, unions with null as optional), must
                  give the Connect schema of the debezium-connect-json record
                  of the same event, and its value the same typed payload
                  (connect_sink.decode); applied by key, the records must
                  reach the head too.

The tables: the local Spark tables the connect part compares, and
interop.evolve (interop/evolvewriter), whose schema changes (a column
added, one renamed, two widened) while the daemons stream it: each change
must show as a new version of the table's value subject, and both readers
must follow it.

The records come from one of two producers:
  native      `icecdc run` with format debezium-avro and schema_registry;
  translated  `icecdc changes --format debezium-connect-json`, encoded here
              with the Avro schema Connect's AvroConverter derives from the
              Connect schema, registered through the same API: it proves the
              chain while icecdc has no format debezium-avro (avro.sh picks
              native when it has).

The rowid daemons also write the schema-change topic in Avro: the second
consumer decodes it and compares it with the tables' snapshot schemas, and
a FileStreamSink connector with Apicurio's converter must convert every
record.

Prints one line per table and mode, the registry's versions of the evolved
table, the schema-change checks, and the records decoded.
"""

import argparse
import base64
import decimal
import faulthandler
import json
import os
import queue
import subprocess
import sys
import threading
import time
import urllib.error
import urllib.request

import connect_sink as cs

NS = cs.NS
MODES = ("rowid", "ident", "replay")
EVOLVE = "evolve"
# Debezium's topic.prefix of the daemons: the start of the schema names, and
# the schema-change topic (<prefix>.schema-changes) the rowid ones write.
PREFIX = "avro"
SCHEMA_CHANGES = f"{PREFIX}.schema-changes"
CONVERTER = "io.apicurio.registry.utils.converter.AvroConverter"


def topic_of(mode, table):
    return f"avro-{mode}.{NS}.{table}"


# ---------------------------------------------------------------- HTTP

def http(method, url, body=None):
    """(status, parsed body) of a JSON request, within 30s; (None, the
    reason) when there is no answer."""
    data = None if body is None else json.dumps(body).encode()
    req = urllib.request.Request(url, data=data, method=method, headers={"Content-Type": "application/json"})
    try:
        with urllib.request.urlopen(req, timeout=30) as r:
            text = r.read().decode()
            return r.status, json.loads(text) if text else None
    except urllib.error.HTTPError as err:
        return err.code, err.read().decode(errors="replace")
    except (urllib.error.URLError, OSError) as err:  # refused, reset, or no answer within the 30s
        return None, f"{method} {url}: {getattr(err, 'reason', err)}"


# ---------------------------------------------------------------- Connect

def add_connectors(a):
    """The Avro JDBC sink connectors, one a mode, and a file sink of the
    schema-change topic, through the worker's REST API; waits until each
    task runs."""
    deadline = time.monotonic() + 180
    while True:  # the REST API opens, and then serves /connectors once the worker has started
        status, body = http("GET", f"{a.connect}/connectors")
        if status == 200:
            break
        if time.monotonic() > deadline:
            raise cs.Stuck(f"connect {a.connect}: GET /connectors: {status} {body} (the worker did not start in 180s)")
        time.sleep(1)
    conv = {"apicurio.registry.url": f"{a.registry}/apis/registry/v2",
            "apicurio.registry.as-confluent": "true",
            "apicurio.registry.use-id": "contentId",
            "apicurio.registry.headers.enabled": "false"}
    connectors = {}
    for mode in MODES:
        connectors[f"avro-jdbc-{mode}"] = {
            "connector.class": "io.debezium.connector.jdbc.JdbcSinkConnector", "tasks.max": "1",
            "topics.regex": f"avro-{mode}\\..*",
            "connection.url": f"jdbc:postgresql://127.0.0.1:{a.pg_port}/postgres",
            "connection.username": "icecdc", "connection.password": "",
            "insert.mode": "upsert", "delete.enabled": "true", "primary.key.mode": "record_key",
            "schema.evolution": "basic", "collection.name.format": f"avro_{mode}_${{source.table}}"}
    # Connect's converter reads the schema-change records too: the file
    # sink writes each as the Struct it converted to, or its task fails.
    connectors["avro-file-schema-changes"] = {
        "connector.class": "org.apache.kafka.connect.file.FileStreamSinkConnector", "tasks.max": "1",
        "topics": SCHEMA_CHANGES, "file": schema_changes_file(a)}
    for name, cfg in connectors.items():
        cfg.update({"key.converter": CONVERTER, "value.converter": CONVERTER})
        for side in ("key", "value"):
            cfg.update({f"{side}.converter.{k}": v for k, v in conv.items()})
        status, body = http("PUT", f"{a.connect}/connectors/{name}/config", cfg)
        if status not in (200, 201):
            raise RuntimeError(f"connect {a.connect}: PUT connector {name}: {status} {body}")
    deadline = time.monotonic() + 60
    for name in connectors:
        while True:
            status, body = http("GET", f"{a.connect}/connectors/{name}/status")
            tasks = body.get("tasks", []) if isinstance(body, dict) else []
            if tasks and all(t["state"] == "RUNNING" for t in tasks):
                break
            if any(t["state"] == "FAILED" for t in tasks):
                raise RuntimeError(f"connect {a.connect}: connector {name}: {status} {body}")
            if time.monotonic() > deadline:
                raise cs.Stuck(f"connect {a.connect}: connector {name}: its tasks not RUNNING within 60s: "
                               f"{status} {body}")
            time.sleep(0.5)


def schema_changes_file(a):
    return os.path.join(a.work, "schema-changes.txt")


# ---------------------------------------------------------------- Avro schemas as Connect reads them

AVRO_PRIMITIVE = {"boolean": "boolean", "int": "int32", "long": "int64", "float": "float", "double": "double",
                  "string": "string", "bytes": "bytes"}


def avro_to_connect(s, named, optional=False, ns=""):
    """An Avro schema (parsed JSON) as the Connect schema AvroConverter
    reads it into, in Connect JSON's form; named collects the named types
    (a record is written once and named after), ns is the enclosing
    namespace."""
    if isinstance(s, str):
        for full in (s, f"{ns}.{s}"):
            if full in named:
                return dict(named[full], optional=optional)
        s = {"type": s}
    if isinstance(s, list):
        branches = [b for b in s if b != "null"]
        if len(branches) != 1 or len(s) != 2:
            raise cs.SchemaError(f"union {s}: only [null, T] is a Connect optional")
        return avro_to_connect(branches[0], named, True, ns)
    t = s["type"]
    if isinstance(t, (dict, list)):
        return avro_to_connect(t, named, optional, ns)
    out = {"optional": optional}
    if t == "record":
        if "." in s["name"]:
            full = s["name"]
        else:
            ns = s.get("namespace", ns)
            full = f"{ns}.{s['name']}" if ns else s["name"]
        ns = full.rpartition(".")[0]
        out.update(type="struct", name=full)
        if "connect.version" in s:
            out["version"] = s["connect.version"]
        named[full] = out
        out["fields"] = [dict(avro_to_connect(f["type"], named, ns=ns), field=f["name"]) for f in s["fields"]]
        return out
    if t == "array":
        out.update(type="array", items=avro_to_connect(s["items"], named, ns=ns))
        return out
    if t == "map":
        out.update(type="map", keys={"type": "string", "optional": False},
                   values=avro_to_connect(s["values"], named, ns=ns))
        return out
    if t not in AVRO_PRIMITIVE:
        raise cs.SchemaError(f"Avro type {t!r} has no Connect type here")
    out["type"] = s.get("connect.type", AVRO_PRIMITIVE[t])
    for k, ck in (("connect.name", "name"), ("connect.version", "version"), ("connect.parameters", "parameters")):
        if k in s:
            out[ck] = s[k]
    return out


def connect_shape(s):
    """What of a Connect schema two converters must agree on."""
    if s is None:
        return None
    out = {k: s.get(k) for k in ("type", "name", "version", "parameters")}
    out["optional"] = bool(s.get("optional", False))
    if s.get("type") == "struct":
        out["fields"] = [(f["field"], connect_shape(f)) for f in s.get("fields", [])]
    if s.get("type") == "array":
        out["items"] = connect_shape(s.get("items"))
    if s.get("type") == "map":
        out["values"] = connect_shape(s.get("values"))
    return out


def avro_payload(schema, v):
    """A value fastavro decoded, in Connect JSON's payload form for the
    Connect schema schema (bytes as base64, decimals as their unscaled
    bytes), for connect_sink.decode."""
    if v is None:
        return None
    t = schema.get("type")
    if t == "struct":
        return {f["field"]: avro_payload(f, v.get(f["field"])) for f in schema["fields"]}
    if t == "array":
        return [avro_payload(schema["items"], x) for x in v]
    if t == "map":
        return {k: avro_payload(schema["values"], x) for k, x in v.items()}
    if t == "bytes":
        if isinstance(v, decimal.Decimal):
            scale = int(schema["parameters"]["scale"])
            unscaled = int(v.scaleb(scale).to_integral_exact())
            v = unscaled.to_bytes(max(1, (unscaled.bit_length() + 8) // 8), "big", signed=True)
        return base64.b64encode(v).decode()
    return v


# ---------------------------------------------------------------- Connect schemas as AvroConverter writes them (translated)

def connect_to_avro(s, named):
    """The Avro schema Connect's AvroConverter derives from a Connect schema."""
    t = s["type"]
    if t == "struct":
        name = s.get("name") or "ConnectDefault"
        if name in named:
            body = name
        else:
            named.add(name)
            fields = []
            for f in s["fields"]:
                ft = connect_to_avro(f, named)
                field = {"name": f["field"]}
                if f.get("optional"):
                    if "default" in f and f["default"] is not None:
                        field.update(type=[ft, "null"], default=f["default"])
                    else:
                        field.update(type=["null", ft], default=None)
                else:
                    field["type"] = ft
                fields.append(field)
            ns, _, short = name.rpartition(".")
            body = {"type": "record", "name": short, "fields": fields}
            if ns:
                body["namespace"] = ns
            if "version" in s:
                body["connect.version"] = s["version"]
        return body
    if t == "array":
        return {"type": "array", "items": opt(connect_to_avro(s["items"], named), s["items"])}
    if t == "map":
        return {"type": "map", "values": opt(connect_to_avro(s["values"], named), s["values"])}
    avro = {"int8": "int", "int16": "int", "int32": "int", "int64": "long", "float": "float", "double": "double",
            "boolean": "boolean", "string": "string", "bytes": "bytes"}[t]
    out = {"type": avro}
    if t in ("int8", "int16"):
        out["connect.type"] = t
    for ck, k in (("name", "connect.name"), ("version", "connect.version"), ("parameters", "connect.parameters")):
        if ck in s:
            out[k] = s[ck]
    if s.get("name") == "org.apache.kafka.connect.data.Decimal":
        p = s["parameters"]
        out.update(logicalType="decimal", scale=int(p["scale"]), precision=int(p.get("connect.decimal.precision", 64)))
    return out if len(out) > 1 else avro


def opt(avro, s):
    return ["null", avro] if s.get("optional") else avro


def json_to_avro(schema, v):
    """A Connect JSON payload value as the datum fastavro writes for
    connect_to_avro's schema."""
    if v is None:
        return None
    t = schema["type"]
    if t == "struct":
        return {f["field"]: json_to_avro(f, v.get(f["field"])) for f in schema["fields"]}
    if t == "array":
        return [json_to_avro(schema["items"], x) for x in v]
    if t == "map":
        return {k: json_to_avro(schema["values"], x) for k, x in v.items()}
    if t == "bytes":
        raw = base64.b64decode(v)
        if schema.get("name") == "org.apache.kafka.connect.data.Decimal":
            return decimal.Decimal(int.from_bytes(raw, "big", signed=True)).scaleb(-int(schema["parameters"]["scale"]))
        return raw
    if t in ("float", "double") and isinstance(v, str):
        return float(v.replace("Infinity", "inf"))
    return v


def ident_key(value_json, table):
    """The ident mode's Connect JSON key of a debezium-connect-json value."""
    vs, vp = value_json["schema"], value_json["payload"]
    img_field = "before" if vp["op"] == "d" else "after"
    img_schema = next(f for f in vs["fields"] if f["field"] == img_field)
    by_name = {f["field"]: f for f in img_schema["fields"]}
    kc = cs.key_columns(table)
    return {"schema": {"type": "struct", "optional": False, "name": img_schema["name"].rsplit(".", 1)[0] + ".Key",
                       "fields": [dict(by_name[n], optional=False) for n in kc]},
            "payload": {n: vp[img_field][n] for n in kc}}


# ---------------------------------------------------------------- producing

def connect_json(a, catalog_db, warehouse, table, name, mode="rowid"):
    """`icecdc changes --format debezium-connect-json --with-key` of a table:
    [(key json, value json or None)], a tombstone after each delete as the
    Kafka sink writes it; in the ident mode keyed by the key columns."""
    lines = cs.changes(a.icecdc, catalog_db, warehouse, table, "--name", name, "--topic-prefix", PREFIX,
                       "--format", "debezium-connect-json", "--with-key")
    out = []
    for ln in lines:
        k, v = ln.split("\t", 1)
        kj, vj = json.loads(k), json.loads(v)
        if mode == "ident":
            kj = ident_key(vj, table)
        out.append((kj, vj))
        if vj["payload"]["op"] == "d":
            out.append((kj, None))
    return out


def produce_translated(a, sr, mode, table, events):
    """The events Avro-encoded as AvroConverter would, registered through
    the ccompat API (TopicNameStrategy), to the mode's topic."""
    from confluent_kafka import Producer
    from confluent_kafka.schema_registry.avro import AvroSerializer
    from confluent_kafka.serialization import MessageField, SerializationContext
    topic = topic_of(mode, table)
    serializers = {}

    def encode(j, field):
        sch = j["schema"]
        avro = json.dumps(connect_to_avro(sch, set()), sort_keys=True)
        if (avro, field) not in serializers:
            serializers[avro, field] = AvroSerializer(sr, avro, conf={"auto.register.schemas": True})
        return serializers[avro, field](json_to_avro(sch, j["payload"]), SerializationContext(topic, field))
    p = Producer({"bootstrap.servers": a.brokers, "enable.idempotence": True, "linger.ms": 5})
    for kj, vj in events:
        p.produce(topic, key=encode(kj, MessageField.KEY),
                  value=None if vj is None else encode(vj, MessageField.VALUE))
        p.poll(0)
    if p.flush(60):
        raise RuntimeError(f"produce to {topic}: records left unsent")


def daemon(a, work, name, catalog_db, warehouse, tables, mode, log):
    """`icecdc run` with format debezium-avro into the mode's topics; the
    rowid ones write the schema-change topic too."""
    return cs.start_run(a.icecdc, work, log, name=name, catalog_db=catalog_db, warehouse=warehouse, tables=tables,
                        mode=mode, chunk=a.chunk, fmt="debezium-avro", brokers=a.brokers,
                        topic=f"avro-{mode}.{{namespace}}.{{table}}",
                        debezium=f"topic.prefix: {PREFIX}" + (", include.schema.changes: true" if mode == "rowid" else ""),
                        extra=[f'schema_registry: {{url: "{a.registry}/apis/ccompat/v7"}}'])


class Writer:
    """interop/evolvewriter, driven a step at a time; every answer has a
    deadline (a thread reads them, so that a writer that stops answering
    fails the part instead of blocking it)."""

    def __init__(self, binary, work, answer=120):
        os.makedirs(work, exist_ok=True)
        self.answer = answer
        self.p = subprocess.Popen([binary, "-dir", work], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
        self.catalog_db, self.warehouse = os.path.join(work, "catalog.db"), os.path.join(work, "warehouse")
        self.lines = queue.Queue()
        threading.Thread(target=self._read, name="evolvewriter-stdout", daemon=True).start()
        try:
            self.expect("ready", "start")
        except RuntimeError:
            self.p.kill()
            raise

    def _read(self):
        for ln in self.p.stdout:
            self.lines.put(ln)
        self.lines.put("")

    def expect(self, prefix, what):
        try:
            ln = self.lines.get(timeout=self.answer).strip()
        except queue.Empty:
            raise cs.Stuck(f"evolvewriter: no answer to {what} within {self.answer}s") from None
        if not ln.startswith(prefix):
            raise RuntimeError(f"evolvewriter: {ln or 'exited'} (want {prefix}...)")
        return ln

    def cmd(self, c, prefix):
        self.p.stdin.write(c + "\n")
        self.p.stdin.flush()
        return self.expect(prefix, f"`{c}`")

    def close(self):
        if self.p.poll() is None:
            try:
                self.p.stdin.write("stop\n")
                self.p.stdin.close()
                self.p.wait(timeout=30)
            except (OSError, subprocess.TimeoutExpired):
                print("avro: evolvewriter did not stop within 30s of `stop`; killed", flush=True)
                self.p.kill()
                self.p.wait()


# ---------------------------------------------------------------- the second consumer

# The registry client's HTTP deadline and tries: confluent-kafka's
# SchemaRegistryClient has none by default (its httpx client is made with
# timeout=None), so a registry that accepts a request and never answers
# held the second consumer for ever.
REGISTRY_TIMEOUT, REGISTRY_RETRIES = 30, 2


def registry_client(a):
    from confluent_kafka.schema_registry import SchemaRegistryClient
    return SchemaRegistryClient({"url": f"{a.registry}/apis/ccompat/v7", "timeout": REGISTRY_TIMEOUT,
                                 "max.retries": REGISTRY_RETRIES})


class Decoder:
    """confluent-kafka's AvroDeserializer on the registry's ccompat API, and
    the writer schema of each id read back as Connect's AvroConverter does."""

    def __init__(self, sr, url):
        from confluent_kafka.schema_registry.avro import AvroDeserializer
        self.sr, self.url, self.deser, self.connect = sr, url, AvroDeserializer(sr), {}

    def decode(self, topic, field, data):
        """(schema id, Connect schema, typed value) of one key or value;
        Stuck when the registry does not answer."""
        from confluent_kafka.serialization import SerializationContext
        try:
            import httpx2 as httpx  # the one confluent-kafka uses when installed, as it picks
        except ImportError:
            import httpx
        if data is None:
            return None, None, None
        if len(data) < 5 or data[0] != 0:
            raise cs.SchemaError(f"{topic} {field}: not Confluent's wire format (first bytes {data[:5].hex()})")
        sid = int.from_bytes(data[1:5], "big")
        try:
            if sid not in self.connect:
                self.connect[sid] = avro_to_connect(json.loads(self.sr.get_schema(sid).schema_str), {})
            v = self.deser(data, SerializationContext(topic, field))
        except httpx.TransportError as err:
            raise cs.Stuck(f"registry {self.url}/apis/ccompat/v7: schema id {sid} of a {topic} {field}: "
                           f"{type(err).__name__} in each of {REGISTRY_RETRIES + 1} tries of "
                           f"{REGISTRY_TIMEOUT}s") from None
        schema = self.connect[sid]
        return sid, schema, cs.decode(schema, avro_payload(schema, v), f"{topic} {field}")


def strip_ts(env):
    """An envelope less its processing times (the daemon's and `changes`'
    differ)."""
    return {k: v for k, v in env.items() if k not in ("ts_ms", "ts_us", "ts_ns")}


def canon(schema, v):
    """A typed value with its float32 fields rounded to float32 (JSON prints
    the shortest text, Avro carries the four bytes)."""
    if v is None or schema is None:
        return v
    t = schema.get("type")
    if t == "struct":
        return {f["field"]: canon(f, v.get(f["field"])) for f in schema["fields"]}
    if t == "array":
        return [canon(schema["items"], x) for x in v]
    if t == "float":
        return cs.norm(v, "float")
    return v


def check_records(dec, topic, records, want):
    """Decodes every record of a topic and compares it with the
    debezium-connect-json record of the same event (want, in order); applies
    them by key. Returns (decoded, {key: row}, problems, value schema ids in
    record order)."""
    from confluent_kafka.serialization import MessageField
    rows, problems, ids = {}, [], []
    if len(records) != len(want):
        problems.append(f"{topic}: {len(records)} records, debezium-connect-json has {len(want)}")
    decoded = 0
    for i, ((k, v), (wk, wv)) in enumerate(zip(records, want)):
        try:
            _, ks, key = dec.decode(topic, MessageField.KEY, k)
            vid, vs, env = dec.decode(topic, MessageField.VALUE, v)
            decoded += 1
            key = canon(ks, key)
            if connect_shape(ks) != connect_shape(wk["schema"]):
                problems.append(f"{topic} record {i} key schema: Avro reads as {connect_shape(ks)}, "
                                f"Connect JSON has {connect_shape(wk['schema'])}")
            if key != canon(wk["schema"], cs.decode(wk["schema"], wk["payload"], f"{topic} record {i} JSON key")):
                problems.append(f"{topic} record {i} key: {key} != {wk['payload']}")
            kid = json.dumps(key, sort_keys=True, default=str)
            if v is None or wv is None:
                if (v is None) != (wv is None):
                    problems.append(f"{topic} record {i}: tombstone in one encoding only")
                rows.pop(kid, None)
                continue
            ids.append(vid)
            if connect_shape(vs) != connect_shape(wv["schema"]):
                problems.append(f"{topic} record {i} value schema: Avro reads as {connect_shape(vs)}, "
                                f"Connect JSON has {connect_shape(wv['schema'])}")
            env = canon(vs, env)
            wenv = canon(wv["schema"], cs.decode(wv["schema"], wv["payload"], f"{topic} record {i} JSON value"))
            if strip_ts(env) != strip_ts(wenv):
                diffs = sorted(f for f in set(env) | set(wenv) if env.get(f) != wenv.get(f))
                problems.append(f"{topic} record {i} value: fields {diffs} differ: "
                                f"{[(env.get(f), wenv.get(f)) for f in diffs][:2]}")
            if env["op"] == "d":
                rows.pop(kid, None)
            else:
                rows[kid] = dict(env["after"], **key)
        except cs.Stuck:
            raise
        except Exception as err:  # noqa: BLE001 - a record that does not decode is a finding, not a crash
            problems.append(f"{topic} record {i}: {type(err).__name__}: {err}")
        if len(problems) > 5:
            break
    return decoded, rows, problems, ids


# ---------------------------------------------------------------- main

def watchdog(limit, children):
    """Past limit seconds every thread's stack goes to stderr (faulthandler's
    own thread writes it, even while the main thread is in a call that
    never returns), and 10s later the children are killed and the part
    fails with one line."""
    faulthandler.dump_traceback_later(limit, exit=False)

    def expire():
        print(f"avro: FAILED: the part did not end within {limit:.0f}s; every thread's stack at {limit:.0f}s "
              "is in its stderr", flush=True)
        for p in children:
            if p.poll() is None:
                p.kill()
        os._exit(1)
    t = threading.Timer(limit + 10, expire)
    t.daemon = True
    t.start()


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--registry", required=True, help="Apicurio Registry's base URL")
    ap.add_argument("--connect", required=True, help="the Connect worker's REST URL")
    ap.add_argument("--evolvewriter", required=True)
    ap.add_argument("--limit", type=float, default=0,
                    help="seconds after which every thread's stack is dumped and the part fails (0: none)")
    a = cs.parse_args(ap, 600)
    a.pg_port = dict(kv.split("=", 1) for kv in a.pg.split())["port"]
    children = []
    if a.limit:
        watchdog(a.limit, children)
    loaded = cs.load_heads(a, "avro")
    if loaded is None:
        return 3
    return cs.run_part("avro", check, a, *loaded, children)


def check(a, heads, tables, children):
    """The part: children collects the processes it starts (the watchdog
    kills them)."""
    sr = registry_client(a)
    t0 = time.monotonic()
    add_connectors(a)
    log = open(os.path.join(a.work, "icecdc-run.log"), "w")
    writer = Writer(a.evolvewriter, os.path.join(a.work, "evolve"))
    children.append(writer.p)
    sources = {t: (a.catalog_db, a.warehouse) for t in tables}
    sources[EVOLVE] = (writer.catalog_db, writer.warehouse)
    daemons, steps = [], []
    deadline = time.monotonic() + a.timeout
    try:
        if a.producer == "native":
            for mode in ("rowid", "ident"):
                daemons.append(daemon(a, os.path.join(a.work, f"spark-{mode}"), f"avro-{mode}",
                                      a.catalog_db, a.warehouse, tables, mode, log))
                daemons.append(daemon(a, os.path.join(a.work, f"evolve-{mode}"), f"avro-{mode}",
                                      writer.catalog_db, writer.warehouse, [EVOLVE], mode, log))
            children.extend(daemons)
        # The schema changes land while the daemons stream the table: each
        # step waits until both modes carry the events of the one before.
        while True:
            if a.producer == "native":
                n = len(connect_json(a, writer.catalog_db, writer.warehouse, EVOLVE, "avro-rowid"))
                for mode in ("rowid", "ident"):
                    cs.wait_topic("avro", a.brokers, topic_of(mode, EVOLVE), n, daemons, log, deadline)
            ln = writer.cmd("step", "")
            if ln == "done":
                break
            steps.append(ln)
        heads[EVOLVE] = json.loads(writer.cmd("rows", "{"))
        writer.close()
        want, records = {}, {}
        for mode in ("rowid", "ident"):
            for t in tables + [EVOLVE]:
                want[mode, t] = connect_json(a, *sources[t], t, f"avro-{mode}", mode)
                if a.producer == "translated":
                    produce_translated(a, sr, mode, t, want[mode, t])
        for mode in ("rowid", "ident"):
            for t in tables + [EVOLVE]:
                records[mode, t] = cs.wait_topic("avro", a.brokers, topic_of(mode, t), len(want[mode, t]), daemons,
                                                 log, deadline)
    finally:
        writer.close()
        cs.stop_daemons("avro", daemons)
    for t in tables + [EVOLVE]:
        want["replay", t] = cs.replayed(want["ident", t], a.chunk)
        records["replay", t] = cs.replayed(records["ident", t], a.chunk)
        cs.produce(a.brokers, topic_of("replay", t), records["replay", t])
    n_recs = sum(len(want["rowid", t]) for t in tables + [EVOLVE])
    print(f"avro: {n_recs} records a mode, produced by "
          f"{'icecdc run (format debezium-avro)' if a.producer == 'native' else 'Avro encoding of icecdc changes'}"
          f" in {time.monotonic() - t0:.1f}s; evolve: {'; '.join(steps)}; replay topics carry every "
          f"{a.chunk}-record chunk twice")

    ok = True
    dec = Decoder(sr, a.registry)
    conn = cs.pg_connect(a.pg)
    t1 = time.monotonic()
    decoded = 0
    evolve_ids = {}
    for mode in MODES:
        for t in tables + [EVOLVE]:
            topic = topic_of(mode, t)
            n, by_key, problems, ids = check_records(dec, topic, records[mode, t], want[mode, t])
            decoded += n
            table, group = f"avro_{mode}_{t}", f"connect-avro-jdbc-{mode}"
            if t == EVOLVE:
                evolve_ids[mode] = ids
                table = follow_renames(conn, a.brokers, group, topic, table, heads[t]["renamed"], by_key)
            exact, second_exact = cs.compare_head(conn, a.brokers, heads[t], f"avro {mode:6} {t}", mode == "rowid",
                                                  table, group, topic, len(records[mode, t]), (by_key, problems))
            ok = ok and exact and second_exact
    for mode in ("rowid", "ident"):
        ok = check_versions(a, mode, evolve_ids[mode], len(steps) + 1) and ok
    if a.producer == "native":
        n, sc_ok = check_schema_changes(a, dec, {t: sources[t][0] for t in tables + [EVOLVE]})
        decoded += n
        ok = ok and sc_ok
    print(f"avro: the second consumer decoded {decoded} records (AvroDeserializer, {a.registry}/apis/ccompat/v7, "
          f"{len(dec.connect)} schemas); compared in {time.monotonic() - t1:.1f}s")
    return 0 if ok else 1


def follow_renames(conn, brokers, group, topic, table, renamed, by_key):
    """The JDBC sink adds a renamed column as a new one: a row last written
    before the rename keeps its value in the old one, and so does the
    second consumer's row, decoded with the schema of then. Both are read
    as the head's columns here (new, else old): PostgreSQL through a view,
    which this returns the name of."""
    for row in by_key.values():
        for new, old in renamed.items():
            if new not in row:
                row[new] = row.pop(old, None)
    if not renamed:
        return table
    cs.wait_sunk(brokers, group, topic)
    with conn.cursor() as cur:
        cur.execute("SELECT column_name FROM information_schema.columns WHERE table_name = %s", (table,))
        cols = [r[0] for r in cur.fetchall()]
        if not cols:
            return table
        sel = [f'COALESCE("{c}", "{renamed[c]}") AS "{c}"' if c in renamed and renamed[c] in cols else f'"{c}"'
               for c in cols if c not in renamed.values()]
        cur.execute(f'CREATE OR REPLACE VIEW "{table}_head" AS SELECT {", ".join(sel)} FROM "{table}"')
    return f"{table}_head"


def check_schema_changes(a, dec, catalogs):
    """The rowid daemons' schema-change records on SCHEMA_CHANGES, decoded by
    the second consumer, against the CREATE and ALTERs the tables' snapshot
    schemas imply (connect_sink.expected_schema_changes); catalogs maps each
    table to its catalog; Apicurio's AvroConverter read the same records
    (the file sink). Returns (records decoded, exact)."""
    from confluent_kafka.serialization import MessageField

    def read(_i, k, v):
        dec.decode(SCHEMA_CHANGES, MessageField.KEY, k)
        return dec.decode(SCHEMA_CHANGES, MessageField.VALUE, v)[2]
    recs = cs.consume_topic(a.brokers, SCHEMA_CHANGES)
    return len(recs), cs.schema_changes_exact("avro schema-changes", SCHEMA_CHANGES, recs, read, catalogs,
                                              "Apicurio's AvroConverter", schema_changes_file(a), ", decoded from Avro")


def check_versions(a, mode, ids, schemas):
    """The evolved table's value subject: one registry version per schema
    the table had, in the order the records use them."""
    subject = f"{topic_of(mode, EVOLVE)}-value"
    url = f"{a.registry}/apis/ccompat/v7/subjects/{subject}/versions"
    status, versions = http("GET", url)
    if status != 200:
        print(f"avro registry {subject}: GET versions: {status} {versions}")
        return False
    by_id = {}
    for v in versions:
        status, body = http("GET", f"{url}/{v}")
        if status != 200:
            print(f"avro registry {subject}: GET version {v}: {status} {body}")
            return False
        by_id[body["id"]] = v
    used = [by_id.get(i) for i in ids]
    first = list(dict.fromkeys(used))
    ok = len(versions) == schemas and None not in used and used == sorted(used) and first == sorted(versions)
    print(f"avro registry {subject}: {len(versions)} versions for {schemas} table schemas; the records use "
          f"versions {first} in that order: {'exact' if ok else 'NOT exact'}")
    return ok


if __name__ == "__main__":
    sys.exit(main())
