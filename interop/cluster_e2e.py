"""cluster e2e: three `icecdc run` members of one pipeline in cluster mode
against a real Kafka broker, exactly-once, through SIGKILLs and a rolling
restart; takeover times measured.

interop/clusterwriter (iceberg-go) creates TABLES format-v3 tables and
commits to them, in turn, all the time. Three members (cluster: {type:
kafka}) share them. Membership changes:

  * SIGKILL (--kills times): the member is SIGSTOPped first (it goes
    silent: its session runs out from then on), the writer commits to
    every table, then the member is SIGKILLed and a new one started;
  * a rolling restart: the writer commits to every table, a member gets
    SIGTERM (it must exit 0), a new one is started; each member in turn.

Takeover time, per table the leaving member followed: from the signal
(SIGSTOP for a kill, SIGTERM for a stop) to the first batch the new owner
delivers ("cluster: first batch delivered since the table was assigned" in
its log). A table counts only when that batch is of a commit made before
the signal (the table had a pending commit then); tables whose pending
commits the leaving member delivered itself on its way out are left out,
and counted.

Then the writer stops, the members catch up and stop, and kcat reads every
topic with read_committed: the event ids (header id) must be those of
`icecdc changes` for the table, each exactly once, in commit order.
"""

import argparse
import json
import os
import signal
import statistics
import subprocess
import sys
import time
import urllib.request
from datetime import datetime

from kafka_e2e import consume

NS = "cluster"
FIRST = "cluster: first batch delivered since the table was assigned"


def free_port():
    import socket
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    return port


def get(url, timeout=2):
    with urllib.request.urlopen(url, timeout=timeout) as r:
        return r.status, r.read()


class Member:
    def __init__(self, icecdc, cfg, work, n):
        self.n = n
        self.listen = f"127.0.0.1:{free_port()}"
        self.log_path = os.path.join(work, f"member-{n}.log")
        self.log = open(self.log_path, "w")
        self.p = subprocess.Popen([icecdc, "run", "-c", cfg, "-listen", self.listen],
                                  stdout=self.log, stderr=subprocess.STDOUT)

    def status(self):
        _, body = get(f"http://{self.listen}/status")
        return json.loads(body)

    def wait_ready(self, secs=60):
        end = time.monotonic() + secs
        while time.monotonic() < end:
            if self.p.poll() is not None:
                raise RuntimeError(f"member {self.n} exited {self.p.returncode} before it was ready (log {self.log_path})")
            try:
                if get(f"http://{self.listen}/readyz")[0] == 200:
                    return
            except OSError:
                pass
            time.sleep(0.05)
        raise RuntimeError(f"member {self.n} not ready within {secs}s (log {self.log_path})")


class Writer:
    def __init__(self, binary, work, ns, tables, interval):
        self.stderr = os.path.join(work, "writer.stderr")
        self.p = subprocess.Popen([binary, "-dir", os.path.join(work, "lake"), "-namespace", ns,
                                   "-tables", str(tables), "-interval", interval],
                                  stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                  stderr=open(os.path.join(work, "writer.stderr"), "w"), text=True)
        line = self.p.stdout.readline()
        if not line.startswith("ready"):
            raise RuntimeError(f"clusterwriter did not start: {line!r} (log {work}/writer.stderr)")

    def cmd(self, what):
        self.p.stdin.write(what + "\n")
        self.p.stdin.flush()
        line = self.p.stdout.readline()
        if not line.startswith({"burst": "burst ", "stop": "stopped "}[what]):
            with open(self.stderr) as fh:
                err = fh.read().strip()[-500:]
            raise RuntimeError(f"clusterwriter: {what}: got {line!r}: {err}")
        return line.split()


def log_events(path):
    out = []
    with open(path) as fh:
        for line in fh:
            if line.startswith("{"):
                try:
                    out.append(json.loads(line))
                except ValueError:
                    pass
    return out


def ts(rec):
    return datetime.fromisoformat(rec["time"].replace("Z", "+00:00")).timestamp()


def expected(icecdc, db, wh, table):
    p = subprocess.run([icecdc, "changes", "--catalog-type", "sql", "--catalog-uri", f"file:{db}",
                        "--warehouse", f"file://{wh}", "--table", table], capture_output=True, text=True, check=True)
    ids, seqs = [], []
    for line in p.stdout.splitlines():
        ev = json.loads(line)
        s = ev["source"]
        ids.append(f"{s['table_uuid']}:{s['sequence_number']}:{s['row_id']}:{ev['op']}")
        seqs.append(s["sequence_number"])
    return ids


def heads(db):
    """{table: current sequence number} from the catalog and metadata."""
    import sqlite3
    with sqlite3.connect(db) as c:
        rows = c.execute("SELECT table_namespace, table_name, metadata_location FROM iceberg_tables").fetchall()
    out = {}
    for ns, name, loc in rows:
        with open(loc.removeprefix("file://")) as fh:
            out[f"{ns}.{name}"] = json.load(fh)["last-sequence-number"]
    return out


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--icecdc", required=True)
    ap.add_argument("--writer", required=True)
    ap.add_argument("--brokers", required=True)
    ap.add_argument("--work", required=True)
    ap.add_argument("--tables", type=int, default=12)
    ap.add_argument("--kills", type=int, default=2)
    ap.add_argument("--session-timeout", default="6s")
    ap.add_argument("--namespace", default=NS,
                    help="of the tables; also names the pipeline and the group (another for each run on one broker)")
    a = ap.parse_args()
    ns = a.namespace
    os.makedirs(a.work, exist_ok=True)
    db = os.path.join(a.work, "lake", "catalog.db")
    wh = os.path.join(a.work, "lake", "warehouse")
    t0 = time.monotonic()

    writer = Writer(a.writer, a.work, ns, a.tables, "150ms")
    tables = [f"{ns}.t{i:02d}" for i in range(a.tables)]
    cfg = os.path.join(a.work, "icecdc.yaml")
    with open(cfg, "w") as fh:
        fh.write(f"""name: interop-{ns}
catalog: {{name: local, type: sql, uri: "file:{db}?_pragma=busy_timeout(5000)", warehouse: "file://{wh}"}}
tables:
  - name: "{ns}.*"
    start: earliest
poll: {{interval: 5s}}
chunk: 10
sink:
  type: kafka
  kafka: {{brokers: ["{a.brokers}"], delivery: exactly-once, tombstones: true}}
cluster: {{type: kafka, group: interop-{ns}, session_timeout: {a.session_timeout}}}
""")
    n = 0
    members = []

    def start():
        nonlocal n
        n += 1
        m = Member(a.icecdc, cfg, a.work, n)
        members.append(m)
        return m

    def settle(secs=40):
        """Waits until every table has an owner and every member some."""
        end = time.monotonic() + secs
        while time.monotonic() < end:
            try:
                sts = [m.status() for m in members]
                owned = [t for s in sts for t in s["tables"]]
                if sorted(owned) == tables and all(s["tables"] for s in sts):
                    return sts
            except OSError:
                pass
            time.sleep(0.1)
        raise RuntimeError("the group did not settle within %ds: %s" % (secs, [m.status() for m in members]))

    changes = []  # (kind, signal time, member name, tables, heads at signal)
    failures = []
    try:
        for _ in range(3):
            start()
        for m in members:
            m.wait_ready()
        settle()

        def leave(m, kind):
            st = m.status()
            if kind == "kill":
                m.p.send_signal(signal.SIGSTOP)
                at = time.time()
                writer.cmd("burst")
                hd = heads(db)
                m.p.send_signal(signal.SIGKILL)
                m.p.wait()
            else:
                writer.cmd("burst")
                hd = heads(db)
                at = time.time()
                m.p.send_signal(signal.SIGTERM)
                rc = m.p.wait(timeout=60)
                if rc != 0:
                    failures.append(f"member {m.n} exited {rc} after SIGTERM, want 0 (log {m.log_path})")
            members.remove(m)
            changes.append((kind, at, st["member"], st["tables"], hd, m.n))
            nm = start()
            nm.wait_ready()
            changes.append(("join", time.time(), None, [], {}, nm.n))
            settle()

        for _ in range(a.kills):
            time.sleep(1)
            leave(members[0], "kill")
        for _ in range(3):  # rolling restart: each of the three in turn
            time.sleep(1)
            leave(members[0], "stop")

        commits = int(writer.cmd("stop")[1])
        final = heads(db)
        want = {t: expected(a.icecdc, db, wh, t) for t in tables}
        total = sum(len(v) for v in want.values())
        end = time.monotonic() + 90
        while True:
            got = {t: [h["id"] for h, _ in consume(a.brokers, f"icecdc.{t}") if "id" in h] for t in tables}
            if sum(len(v) for v in got.values()) >= total or time.monotonic() > end:
                break
            time.sleep(1)
        time.sleep(1.5)  # anything more would be a duplicate: give it time to show
        for m in list(members):
            m.p.send_signal(signal.SIGTERM)
            rc = m.p.wait(timeout=60)
            if rc != 0:
                failures.append(f"member {m.n} exited {rc} after SIGTERM, want 0 (log {m.log_path})")
            members.remove(m)
    finally:
        for m in members:
            m.p.kill()
        if writer.p.poll() is None:
            writer.p.kill()

    # The streams.
    delivered = lost = dups = order = 0
    for t in tables:
        got = [h["id"] for h, _ in consume(a.brokers, f"icecdc.{t}") if "id" in h]
        delivered += len(got)
        pos = {e: i for i, e in enumerate(want[t])}
        seen, last = set(), -1
        for e in got:
            if e not in pos:
                failures.append(f"icecdc.{t}: event {e} is not in `icecdc changes`")
                continue
            if e in seen:
                dups += 1
                continue
            seen.add(e)
            if pos[e] < last:
                order += 1
            last = max(last, pos[e])
        lost += len(want[t]) - len(seen)
    if lost or dups or order:
        failures.append(f"{lost} events lost, {dups} duplicates, {order} order violations")

    # Takeover times, from the members' logs.
    firsts = []  # (time, member name, table, seq, ms since assigned)
    for i in range(1, n + 1):
        for r in log_events(os.path.join(a.work, f"member-{i}.log")):
            if r.get("msg") == FIRST:
                firsts.append((ts(r), r.get("member"), r.get("table"), r.get("seq"), r.get("since_assigned_ms", 0) / 1000))
    firsts.sort()
    took = {"kill": [], "stop": []}
    owning = {"kill": [], "stop": []}  # assignment to first delivery
    skipped = {"kill": 0, "stop": 0}
    for kind, at, name, owned, hd, _ in changes:
        if kind == "join":
            continue
        for t in owned:
            f = next((f for f in firsts if f[2] == t and f[1] != name and f[0] >= at), None)
            if f is None or f[3] > hd[t]:
                skipped[kind] += 1  # the leaving member had delivered all its commits
            else:
                took[kind].append(f[0] - at)
                owning[kind].append(f[4])

    kinds = {k: sum(1 for c in changes if c[0] == k) for k in ("kill", "stop", "join")}
    print(f"cluster e2e: {n} members in all (3 at a time), {sum(kinds.values())} membership changes "
          f"({kinds['kill']} SIGKILLs, {kinds['stop']} SIGTERMs of a rolling restart, {kinds['join']} joins); "
          f"{commits} commits on {len(tables)} tables; {total} events expected, {delivered} read back by kcat "
          f"(read_committed): {lost} lost, {dups} duplicates, {order} order violations")
    session = float(a.session_timeout.rstrip("s"))
    for kind, label, target in (("kill", "SIGKILL", session + 2), ("stop", "SIGTERM", 2.0)):
        ds = took[kind]
        if not ds:
            failures.append(f"no takeover after {label} measured")
            continue
        print(f"cluster e2e: takeover after {label} (signal to the new owner's first delivery of a commit pending "
              f"at the signal), {len(ds)} tables: median {statistics.median(ds):.2f}s, min {min(ds):.2f}s, "
              f"max {max(ds):.2f}s (target {target:.0f}s; {skipped[kind]} tables left out: nothing pending); "
              f"of which the group's rebalance, median {statistics.median(d - o for d, o in zip(ds, owning[kind])):.2f}s, "
              f"and the new owner's start (catalog load, producer id, checkpoint, first read), "
              f"median {statistics.median(owning[kind]):.2f}s")
    print(f"cluster e2e: {time.monotonic() - t0:.1f}s")
    if failures:
        print("cluster e2e: FAILED")
        for f in failures:
            print("  " + f)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
