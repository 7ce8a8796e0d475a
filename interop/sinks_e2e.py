"""The sinks part: `icecdc run` delivers a table's history to NATS
JetStream, Redis Streams and RabbitMQ (real servers the part started on
loopback), is SIGKILLed after its first deliveries and restarted while
the table takes more commits, then sees its server stop answering for a
minute (SIGSTOP) while the table takes two more; each system's own client
(nats-py, redis, pika) reads every event back. Against `icecdc changes` of the
table's last metadata: every event id present with the same op, before
and after; per key, the events in the table's order (first copies);
duplicates only where the promise allows them (none on JetStream, whose
duplicate window drops replays by Nats-Msg-Id; at-least-once on Redis
and RabbitMQ). One line per sink: events, kills, the outage, lost, duplicated, order.
"""
import argparse
import asyncio
import glob
import json
import os
import signal
import subprocess
import sys
import time

import nats
import pika
import redis

TABLE = "bookshop.orders"


def sh(*cmd, **kw):
    return subprocess.run(cmd, check=True, capture_output=True, text=True, **kw).stdout


def commit(a, kind):
    sh(a.icecdc, "demo", "--dir", a.table_dir, "--commit", kind)


def expected(a):
    meta = sorted(glob.glob(os.path.join(a.table_dir, "warehouse/bookshop.db/orders/metadata/*.metadata.json")))[-1]
    events = [json.loads(l) for l in sh(a.icecdc, "changes", "--metadata", meta, "--table", TABLE).splitlines() if l.strip()]
    for e in events:
        s = e["source"]
        e["_id"] = f'{s["table_uuid"]}:{s["sequence_number"]}:{s["row_id"]}:{e["op"]}'
        e["_key"] = (e["after"] or e["before"])["order_id"]
    return events


# ----------------------------------------------------------------- readers

class NatsReader:
    name = "nats"

    def __init__(self, url):
        self.url = url

    def section(self):
        return f'  nats:\n    urls: ["{self.url}"]\n    subject: "icecdc.{{namespace}}.{{table}}"\n'

    def reset(self):
        async def go():
            nc = await nats.connect(self.url)
            try:
                await nc.jetstream().delete_stream("ICECDC")
            except Exception:
                pass
            await nc.close()
        asyncio.run(go())

    def read(self):
        async def go():
            nc = await nats.connect(self.url)
            js = nc.jetstream()
            out = []
            try:
                info = await js.stream_info("ICECDC")
            except Exception:
                await nc.close()
                return out
            if info.state.messages:
                for seq in range(info.state.first_seq, info.state.last_seq + 1):
                    m = await js.get_msg("ICECDC", seq)
                    h = m.headers or {}
                    if h.get("Nats-Msg-Id") != h.get("id"):
                        raise SystemExit(f"nats: message {seq}: Nats-Msg-Id {h.get('Nats-Msg-Id')} is not its id {h.get('id')}")
                    out.append((h["id"], h.get("key"), m.data))
            await nc.close()
            return out
        return asyncio.run(go())


class RedisReader:
    name = "redis"

    def __init__(self, url):
        self.url = url
        self.r = redis.Redis.from_url(url)

    def section(self):
        return f'  redis:\n    url: "{self.url}"\n'

    def reset(self):
        self.r.delete("icecdc:bookshop.orders")

    def read(self):
        return [(f[b"id"].decode(), f[b"key"].decode(), f[b"value"])
                for _, f in self.r.xrange("icecdc:bookshop.orders", "-", "+")]


class RabbitReader:
    name = "rabbitmq"

    def __init__(self, url):
        self.url = url
        self.got = []

    def section(self):
        return f'  rabbitmq:\n    url: "{self.url}"\n    exchange: icecdc\n'

    def channel(self):
        self.conn = pika.BlockingConnection(pika.URLParameters(self.url))
        return self.conn.channel()

    def reset(self):
        ch = self.channel()
        ch.exchange_declare("icecdc", "topic", durable=True)
        ch.queue_delete("sinks-e2e")
        ch.queue_declare("sinks-e2e", durable=True)
        ch.queue_bind("sinks-e2e", "icecdc", "#")
        self.conn.close()
        self.got = []

    def read(self):
        ch = self.channel()
        while True:
            method, props, body = ch.basic_get("sinks-e2e", auto_ack=True)
            if method is None:
                break
            h = props.headers or {}
            if props.message_id != h.get("id") or props.delivery_mode != 2:
                raise SystemExit(f"rabbitmq: message {props.message_id}: header id {h.get('id')}, delivery mode {props.delivery_mode}")
            self.got.append((props.message_id, h.get("key"), body))
        self.conn.close()
        return list(self.got)


# ----------------------------------------------------------------- the run

def config(a, reader, state):
    path = os.path.join(a.work, reader.name + ".yaml")
    with open(path, "w") as f:
        f.write(f"""name: sinks-e2e
catalog:
  type: sql
  uri: file:{a.table_dir}/catalog.db
  warehouse: file://{a.table_dir}/warehouse
tables:
  - name: {TABLE}
    start: earliest
poll: {{interval: 200ms, max_interval: 1s}}
sink:
  type: {reader.name}
{reader.section()}state:
  path: {state}
allowed_locations: [file://{a.table_dir}/warehouse]
""")
    return path


def start(a, cfg, log):
    return subprocess.Popen([a.icecdc, "run", "-c", cfg], stdout=log, stderr=log)


def wait_for(what, cond, secs, daemon, logpath):
    t0 = time.time()
    while time.time() - t0 < secs:
        if cond():
            return
        if daemon.poll() is not None:
            raise SystemExit(f"{what}: icecdc run exited {daemon.returncode} (log {logpath}):\n" + open(logpath).read()[-2000:])
        time.sleep(0.2)
    raise SystemExit(f"{what}: not within {secs}s (log {logpath})")


def check(reader, got, want, dup_ok):
    by_id = {e["_id"]: e for e in want}
    first, seen, dups = [], set(), 0
    for id_, key, value in got:
        if id_ in seen:
            dups += 1
            continue
        seen.add(id_)
        first.append((id_, key, value))
    lost = [i for i in by_id if i not in seen]
    extra = [i for i in seen if i not in by_id]
    problems = []
    for id_, key, value in first:
        e = by_id.get(id_)
        if e is None:
            continue
        v = json.loads(value)
        if (v["op"], v["before"], v["after"]) != (e["op"], e["before"], e["after"]):
            problems.append(f"event {id_}: {v['op']} {v['before']} {v['after']} is not {e['op']} {e['before']} {e['after']}")
        if json.loads(key) != {"order_id": e["_key"]}:
            problems.append(f"event {id_}: key {key}, want order_id {e['_key']}")
    order = {}
    for e in want:
        order.setdefault(e["_key"], []).append(e["_id"])
    got_order = {}
    for id_, _, _ in first:
        if id_ in by_id:
            got_order.setdefault(by_id[id_]["_key"], []).append(id_)
    bad_keys = [k for k in order if got_order.get(k, []) != [i for i in order[k] if i in seen]]
    if lost:
        problems.append(f"{len(lost)} events lost, first {lost[:3]}")
    if extra:
        problems.append(f"{len(extra)} events not in icecdc changes, first {extra[:3]}")
    if bad_keys:
        problems.append(f"order broken for keys {bad_keys[:5]}")
    if dups and not dup_ok:
        problems.append(f"{dups} duplicates, where the duplicate window should drop every replay")
    return lost, dups, len(order), problems


def outage(a, reader, daemon, logpath):
    """The server stops answering for a.outage seconds (SIGSTOP: its
    connections stay open and nothing comes back, as in a network
    partition or a stalled host) while the table takes two commits; the
    daemon must keep running, retrying, and deliver both once the server
    answers again. Returns the events wanted and the seconds the delivery
    took after SIGCONT."""
    pid, group = a.pids[reader.name]
    stop = (lambda sig: os.killpg(pid, sig)) if group else (lambda sig: os.kill(pid, sig))
    stop(signal.SIGSTOP)
    try:
        for kind in ("update", "insert"):
            commit(a, kind)
        deadline = time.time() + a.outage
        while time.time() < deadline:
            if daemon.poll() is not None:
                raise SystemExit(f"{reader.name}: icecdc run exited {daemon.returncode} while the server was stopped (log {logpath}):\n"
                                 + open(logpath).read()[-2000:])
            time.sleep(0.5)
    finally:
        stop(signal.SIGCONT)
    t0 = time.time()
    want = expected(a)
    ids = {e["_id"] for e in want}
    wait_for(f"{reader.name}: the commits made while the server was stopped", lambda: ids <= {g[0] for g in reader.read()},
             180, daemon, logpath)
    return want, time.time() - t0


def run_sink(a, reader, dup_ok):
    t0 = time.time()
    reader.reset()
    state = os.path.join(a.work, reader.name + "-state.db")
    cfg = config(a, reader, state)
    logpath = os.path.join(a.work, reader.name + ".log")
    log = open(logpath, "a")
    daemon = start(a, cfg, log)
    try:
        wait_for(f"{reader.name}: first events", lambda: len(reader.read()) > 0, 60, daemon, logpath)
        daemon.send_signal(signal.SIGKILL)
        daemon.wait()
        kills = 1
        # The table moves on while the daemon is down.
        for kind in ("insert", "merge", "update", "delete"):
            commit(a, kind)
        want = expected(a)
        ids = {e["_id"] for e in want}
        daemon = start(a, cfg, log)
        wait_for(f"{reader.name}: every event", lambda: ids <= {g[0] for g in reader.read()}, 90, daemon, logpath)
        # One more commit followed live.
        commit(a, "merge")
        want = expected(a)
        ids = {e["_id"] for e in want}
        wait_for(f"{reader.name}: the live commit", lambda: ids <= {g[0] for g in reader.read()}, 60, daemon, logpath)
        if a.outage > 0:
            want, recovered = outage(a, reader, daemon, logpath)
    finally:
        if daemon.poll() is None:
            daemon.send_signal(signal.SIGTERM)
            try:
                daemon.wait(20)
            except subprocess.TimeoutExpired:
                daemon.kill()
    got = reader.read()
    lost, dups, keys, problems = check(reader, got, want, dup_ok)
    out = f", server stopped {a.outage}s, delivered {recovered:.1f}s after it answered again" if a.outage > 0 else ""
    print(f"sinks: {reader.name}: {len(want)} events, {kills} kill{out}, {len(lost)} lost, {dups} duplicated "
          f"({'allowed: at-least-once' if dup_ok else 'none allowed: duplicate window'}), "
          f"order per key {'kept' if not any('order' in p for p in problems) else 'BROKEN'} ({keys} keys), {time.time() - t0:.1f}s")
    for p in problems:
        print(f"  {reader.name}: {p}")
    return not problems


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--icecdc", required=True)
    p.add_argument("--work", required=True)
    p.add_argument("--nats", required=True)
    p.add_argument("--redis", required=True)
    p.add_argument("--amqp", required=True)
    p.add_argument("--outage", type=int, default=60, help="seconds each server is stopped (SIGSTOP) after the live commit; 0: none")
    p.add_argument("--nats-pid", type=int, default=0)
    p.add_argument("--redis-pid", type=int, default=0)
    p.add_argument("--amqp-pgid", type=int, default=0, help="rabbitmq-server's process group (the node and its Erlang helpers)")
    a = p.parse_args()
    a.pids = {"nats": (a.nats_pid, False), "redis": (a.redis_pid, False), "rabbitmq": (a.amqp_pgid, True)}
    if a.outage > 0 and not all(pid for pid, _ in a.pids.values()):
        p.error("--outage needs --nats-pid, --redis-pid and --amqp-pgid")
    a.table_dir = os.path.join(a.work, "table")
    sh(a.icecdc, "demo", "--dir", a.table_dir)
    for kind in ("insert", "update", "merge", "delete") * 4:
        commit(a, kind)
    ok = True
    for reader, dup_ok in ((NatsReader(a.nats), False), (RedisReader(a.redis), True), (RabbitReader(a.amqp), True)):
        ok = run_sink(a, reader, dup_ok) and ok
    sys.exit(0 if ok else 1)


if __name__ == "__main__":
    main()
