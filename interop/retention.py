"""retention hold: `hold: true` against Spark's expire_snapshots.

Two tables in a JDBC/SQLite catalog of their own ("hold"), written by
Spark 4.1 + Iceberg 1.11 with the same commits (inserts, merge-on-read
updates and deletes); one `icecdc run` follows both, db.held with
`hold: true`, db.free without:

  1. the daemon, with a file sink, follows the tables while Spark commits
     three snapshots, delivers them, and is stopped (SIGTERM);
  2. Spark commits four more while the daemon runs with a sink that fails
     (a webhook whose receiver is down, retried inside the sink): the
     daemon stalls on the first new commit, and while that write waits it
     moves the hold to the head the catalog has, every hold_interval; the
     hold is a branch `icecdc-<pipeline>` at the head with
     min-snapshots-to-keep reaching back to the checkpoint. The daemon is
     stopped once the branch is at the head: the hold keeps only what the
     daemon has seen, so a commit made while no daemon runs is kept by
     nothing but the table's own retention;
  3. the oracle's expected events of every snapshot are computed from
     Spark's reads (VERSION AS OF) before anything is expired; then
     `CALL system.expire_snapshots(older_than => now(), retain_last => 1)`
     runs on both tables; Spark's reads of main must be what they were;
  4. the daemon, with the file sink again, is restarted: db.held must
     deliver every change of the commits it had not delivered, exactly,
     then one more that Spark commits after the expiry; db.free must stop
     with the history-loss error (the checkpoint's snapshot is gone);
  5. `icecdc reset --table db.held` removes the branch (Spark's refs
     table then lists main alone).

Prints one line per case and returns 0 when every one held. Runs inside
run_scenarios.py on its Spark session (run.sh), or alone:

  python retention.py --icecdc BIN --work DIR --ivy IVY_DIR
"""

import argparse
import datetime
import json
import os
import signal
import socket
import sqlite3
import subprocess
import sys
import time
import traceback
import urllib.request

import oracle
from spark_session import MOR_V3, tblproperties

CATALOG = "hold"
NS = "db"
PIPELINE = "interop-hold"
HOLD_REF = f"icecdc-{PIPELINE}"
TABLES = ("held", "free")  # held: hold: true; free: no hold

# (label, statement) per commit; {t} is the table. Steps 1-3 are delivered
# before the sink fails, 4-7 are what the hold must keep, 8 comes after the
# expiry.
BEFORE = [
    ("insert 1-5", "INSERT INTO {t} VALUES (1, 'ada', 10), (2, 'bob', 20), (3, 'cy', 30), (4, 'dee', 40), (5, 'eve', 50)"),
    ("update 1", "UPDATE {t} SET qty = qty + 1 WHERE id = 1"),
    ("delete 2", "DELETE FROM {t} WHERE id = 2"),
]
HELD = [
    ("insert 6, 7", "INSERT INTO {t} VALUES (6, 'fay', 60), (7, 'gil', 70)"),
    ("update 3, 4", "UPDATE {t} SET name = upper(name), qty = qty * 2 WHERE id IN (3, 4)"),
    ("delete 5", "DELETE FROM {t} WHERE id = 5"),
    ("merge", "MERGE INTO {t} t USING (SELECT * FROM VALUES (1, 'ADA', 0, 'upd'), (6, '', 0, 'del'), (9, 'ivy', 90, 'ins') "
              "AS s(id, name, qty, op)) s ON t.id = s.id WHEN MATCHED AND s.op = 'del' THEN DELETE "
              "WHEN MATCHED THEN UPDATE SET t.name = s.name WHEN NOT MATCHED THEN INSERT (id, name, qty) VALUES (s.id, s.name, s.qty)"),
]
AFTER = [("insert 8", "INSERT INTO {t} VALUES (8, 'hal', 80)")]


class Failed(Exception):
    pass


def configure(spark, db, wh):
    """Registers the catalog on the running session (catalogs load lazily,
    from the session's configuration). Its cache is off, so that every
    statement sees the refs icecdc commits."""
    for k, v in {
        "": "org.apache.iceberg.spark.SparkCatalog",
        ".type": "jdbc",
        ".uri": f"jdbc:sqlite:{db}",
        ".warehouse": f"file:{wh}",
        ".cache-enabled": "false",
    }.items():
        spark.conf.set(f"spark.sql.catalog.{CATALOG}{k}", v)


def sql(spark, stmt):
    return spark.sql(stmt).collect()


def free_port():
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    return port


class Run:
    def __init__(self, spark, icecdc, work):
        self.spark, self.icecdc, self.work = spark, icecdc, work
        self.db = os.path.join(work, "hold.db")
        self.wh = os.path.join(work, "wh")
        self.events = os.path.join(work, "events.jsonl")
        self.log = os.path.join(work, "icecdc-run.log")
        self.cfg = os.path.join(work, "icecdc.yaml")
        self.listen = f"127.0.0.1:{free_port()}"
        self.proc = None
        # per table: [(snapshot id, sequence number, oracle.Live)] of main, oldest first
        self.lives = {t: [] for t in TABLES}

    def t(self, name):
        return f"{CATALOG}.{NS}.{name}"

    def write_config(self, sink):
        with open(self.cfg, "w") as fh:
            fh.write(f"""name: {PIPELINE}
catalog: {{name: {CATALOG}, type: sql, uri: "file:{self.db}", warehouse: "file://{self.wh}"}}
tables:
  - {{name: {NS}.held, start: earliest, hold: true}}
  - {{name: {NS}.free, start: earliest}}
poll: {{interval: 200ms}}
hold_interval: 100ms
chunk: 3
sink:
{sink}
state: {{path: "{os.path.join(self.work, 'state.db')}"}}
http: {{listen: "{self.listen}"}}
""")

    def file_sink(self):
        self.write_config(f"  type: file\n  file: {{path: \"{self.events}\"}}")

    def failing_sink(self):
        # Nothing listens on the port: every request fails and is retried.
        self.write_config(f"  type: webhook\n  webhook: {{url: \"http://127.0.0.1:{free_port()}/down\", "
                          f"secret: \"interop-retention-hold-secret-0123\"}}")

    # ------------------------------------------------------------ daemon

    def start(self):
        with open(self.log, "a") as log:
            log.write(f"=== start {datetime.datetime.now().isoformat()}\n")
            log.flush()
            self.proc = subprocess.Popen([self.icecdc, "run", "-c", self.cfg], stdout=log, stderr=subprocess.STDOUT)

    def stop(self):
        """SIGTERM; returns the exit code."""
        p, self.proc = self.proc, None
        p.send_signal(signal.SIGTERM)
        try:
            return p.wait(timeout=60)
        except subprocess.TimeoutExpired:
            p.kill()
            p.wait()
            raise Failed("icecdc run did not exit within 60s of SIGTERM")

    def status(self):
        try:
            with urllib.request.urlopen(f"http://{self.listen}/status", timeout=5) as r:
                return {s["table"]: s.get("checkpoint", {}) for s in json.load(r)}
        except OSError:
            return {}

    def wait(self, what, cond, secs=90):
        t0 = time.monotonic()
        while time.monotonic() - t0 < secs:
            if cond():
                return
            if self.proc is not None and self.proc.poll() is not None:
                raise Failed(f"icecdc run exited ({self.proc.returncode}) while waiting for {what}; log {self.log}:\n{self.tail()}")
            time.sleep(0.2)
        raise Failed(f"{what}: not within {secs}s; log {self.log}:\n{self.tail()}")

    def caught_up(self, names):
        def cond():
            st = self.status()
            return all(st.get(f"{NS}.{n}", {}).get("snapshot_id") == self.head(n) and st[f"{NS}.{n}"].get("done")
                       for n in names)
        self.wait(f"{', '.join(names)} delivered up to the head", cond)

    def tail(self, n=15):
        with open(self.log) as fh:
            return "".join(fh.readlines()[-n:])

    # ------------------------------------------------------------ Spark

    def head(self, name):
        """main's snapshot, from the catalog's current metadata file (a
        poll must not cost a Spark job)."""
        return self.ref(name, "main")

    def ref(self, name, ref):
        r = self.metadata(name).get("refs", {}).get(ref)
        return r and r["snapshot-id"]

    def refs(self, name):
        return {r["name"]: r for r in sql(self.spark, f"SELECT * FROM {self.t(name)}.refs")}

    def snapshot_ids(self, name):
        return {r[0] for r in sql(self.spark, f"SELECT snapshot_id FROM {self.t(name)}.snapshots")}

    def metadata(self, name):
        with sqlite3.connect(self.db) as c:
            (loc,) = c.execute("SELECT metadata_location FROM iceberg_tables WHERE catalog_name = ? AND "
                               "table_namespace = ? AND table_name = ?", (CATALOG, NS, name)).fetchone()
        with open(loc.removeprefix("file:")) as fh:
            return json.load(fh)

    def commit(self, steps, names=TABLES):
        for name in names:
            for _, stmt in steps:
                sql(self.spark, stmt.format(t=self.t(name)))
                self.capture(name)

    def capture(self, name):
        """The oracle's view of the new head: read now, before any expiry."""
        meta = self.metadata(name)
        sid = meta["refs"]["main"]["snapshot-id"]
        seq = next(s["sequence-number"] for s in meta["snapshots"] if s["snapshot-id"] == sid)
        rows = sql(self.spark, f"SELECT *, _row_id, _last_updated_sequence_number FROM {self.t(name)} VERSION AS OF {sid}")
        self.lives[name].append((sid, seq, oracle.Live(rows)))

    def main_rows(self, name):
        return sorted(oracle.key(r.asDict()) for r in sql(self.spark, f"SELECT * FROM {self.t(name)}"))

    # ------------------------------------------------------------ checks

    def delivered(self):
        """icecdc's events from the file, per table, per snapshot id, in order."""
        out = {t: {} for t in TABLES}
        if os.path.exists(self.events):
            with open(self.events) as fh:
                for ln in fh:
                    ev = json.loads(ln)
                    out[ev["source"]["table"]].setdefault(ev["source"]["snapshot_id"], []).append(ev)
        return out

    def exact(self, name, got):
        """(snapshots exact, snapshots, events, problems) against the oracle."""
        prev, exact, events, problems = oracle.EMPTY, 0, 0, []
        got = dict(got)
        for sid, seq, cur in self.lives[name]:
            want, notes = oracle.expected_events(prev, cur, seq)
            evs = got.pop(sid, [])
            p = oracle.compare(want, evs, seq) + [n for n in notes if "anomaly" in n]
            exact += not p
            events += len(evs)
            problems += [f"snapshot {sid} seq {seq}: {x}" for x in p]
            prev = cur
        problems += [f"{len(evs)} events of snapshot {sid}, which is not on main" for sid, evs in got.items()]
        return exact, len(self.lives[name]), events, problems


def run(spark, icecdc, work):
    """Returns (ok, lines)."""
    os.makedirs(work, exist_ok=True)
    r = Run(spark, icecdc, work)
    lines = []
    try:
        ok = scenario(r, lines)
    except Failed as err:
        lines.append(f"retention: FAILED: {err}")
        ok = False
    except Exception as err:  # a Spark or icecdc error: the part fails, saying where
        lines.append(f"retention: FAILED: {type(err).__name__}: {err}\n{traceback.format_exc()}")
        ok = False
    finally:
        if r.proc is not None:
            r.proc.kill()
            r.proc.wait()
    return ok, lines


def scenario(r, lines):
    spark = r.spark
    phases, t0 = [], [time.monotonic()]

    def phase(name):
        now = time.monotonic()
        phases.append(f"{name} {now - t0[0]:.1f}s")
        t0[0] = now
    configure(spark, r.db, r.wh)
    sql(spark, f"CREATE NAMESPACE IF NOT EXISTS {CATALOG}.{NS}")
    for name in TABLES:
        sql(spark, f"DROP TABLE IF EXISTS {r.t(name)} PURGE")
        sql(spark, f"CREATE TABLE {r.t(name)} (id bigint, name string, qty int) USING iceberg "
                   f"TBLPROPERTIES ({tblproperties(MOR_V3)})")

    # 1. followed while Spark commits, everything delivered.
    r.file_sink()
    r.start()
    r.commit(BEFORE)
    r.caught_up(TABLES)
    checkpoint = {n: r.lives[n][-1][0] for n in TABLES}
    r.wait(f"{HOLD_REF} at the delivered head {checkpoint['held']}", lambda: r.ref("held", HOLD_REF) == checkpoint["held"])
    if (code := r.stop()) != 0:
        raise Failed(f"SIGTERM after the first commits: exit {code}")
    if HOLD_REF in r.refs("free"):
        raise Failed(f"db.free (hold: false) has a ref {HOLD_REF}")

    phase("follow")
    # 2. the sink fails: the commits are seen, not delivered.
    r.failing_sink()
    r.start()
    r.commit(HELD)
    head = r.head("held")

    r.wait(f"{HOLD_REF} at the head {head}", lambda: r.ref("held", HOLD_REF) == head)
    ref = r.refs("held")[HOLD_REF]  # as Spark sees it
    r.stop()
    if ref["type"] != "BRANCH":
        raise Failed(f"{HOLD_REF} is a {ref['type']}, want a BRANCH")
    undelivered = len(HELD) + 1  # the checkpoint's snapshot and every one after it
    if ref["min_snapshots_to_keep"] != undelivered:
        raise Failed(f"{HOLD_REF} keeps min_snapshots_to_keep {ref['min_snapshots_to_keep']}, want {undelivered} "
                     f"(the checkpoint {checkpoint['held']} to the head {head})")

    phase("failing sink")
    # 3. expiry, after the oracle read every snapshot.
    before = {n: r.main_rows(n) for n in TABLES}
    heads = {n: r.refs(n)["main"]["snapshot_id"] for n in TABLES}
    for name in TABLES:
        try:
            sql(spark, f"CALL {CATALOG}.system.expire_snapshots(table => '{NS}.{name}', older_than => now(), retain_last => 1)")
        except Exception as err:  # a Spark that wants a literal timestamp
            lines.append(f"  note: older_than => now() refused ({str(err).splitlines()[0][:200]}); a literal instead")
            ts = (datetime.datetime.now(datetime.timezone.utc) + datetime.timedelta(seconds=1)).strftime("%Y-%m-%d %H:%M:%S.%f")
            sql(spark, f"CALL {CATALOG}.system.expire_snapshots(table => '{NS}.{name}', older_than => TIMESTAMP '{ts}', retain_last => 1)")
    kept = {n: r.snapshot_ids(n) for n in TABLES}
    held_ids = [sid for sid, _, _ in r.lives["held"]]
    want_kept = set(held_ids[len(BEFORE) - 1:])
    if kept["held"] != want_kept:
        raise Failed(f"expire_snapshots left db.held with snapshots {sorted(kept['held'])}, want the held ones {sorted(want_kept)}")
    if kept["free"] != {heads["free"]}:
        raise Failed(f"expire_snapshots left db.free with {len(kept['free'])} snapshots, want its head alone: "
                     "the case without hold would prove nothing")
    for name in TABLES:
        if r.main_rows(name) != before[name] or r.refs(name)["main"]["snapshot_id"] != heads[name]:
            raise Failed(f"Spark's read of {NS}.{name} (main) changed across the expiry")
    lines.append(f"retention: expire_snapshots(older_than => now(), retain_last => 1): db.held kept {len(kept['held'])} "
                 f"snapshots (its checkpoint's to the head, held by branch {HOLD_REF}), db.free kept {len(kept['free'])}; "
                 f"Spark's reads of main unchanged ({len(before['held'])} rows each)")

    phase("expire")
    # 4. the sink is back: the held commits are delivered, the free table stops.
    r.file_sink()
    r.start()
    r.caught_up(["held"])
    r.wait("db.free stopped", lambda: '"msg":"table stopped","table":"db.free"' in open(r.log).read())
    r.commit(AFTER, ["held"])
    r.caught_up(["held"])
    code = r.stop()
    stopped = [json.loads(ln) for ln in open(r.log) if '"msg":"table stopped","table":"db.free"' in ln][-1]
    got = r.delivered()

    ok = True
    ex, n, ev, problems = r.exact("held", got["held"])
    good = ex == n and not problems
    ok &= good
    lines.append(f"retention: case hold (db.held, hold: true, sink failed, expired, restarted): {ex}/{n} snapshots exact, "
                 f"{ev} events{'' if good else ' NOT EXACT'}")
    lines += ["    " + p for p in problems[:20]]

    # Only the commits delivered before the expiry may be in the file.
    r.lives["free"] = r.lives["free"][:len(BEFORE)]
    ex, n, ev, problems = r.exact("free", got["free"])
    extra = sorted(set(got["free"]) - {sid for sid, _, _ in r.lives["free"]})
    err_text = stopped.get("err", "")
    clear = "expired" in err_text and "icecdc reset" in err_text
    good = ex == n and not problems and clear and code != 0
    ok &= good
    lines += ["    " + p for p in problems[:20]]
    lines.append(f"retention: case no hold (db.free, hold: false, same commits, expired): {ex}/{n} snapshots exact "
                 f"before the expiry, {ev} events, {len(extra)} after it; stopped{'' if good else ' NOT AS WANTED'}, "
                 f"daemon exit {code}: {err_text[:240]}")
    if not clear:
        lines.append("    the stop does not say the history expired and what to run")

    phase("restart")
    # 5. reset removes the hold.
    p = subprocess.run([r.icecdc, "reset", "-c", r.cfg, "--table", f"{NS}.held"], capture_output=True, text=True, timeout=120)
    names = sorted(r.refs("held"))
    good = p.returncode == 0 and names == ["main"] and HOLD_REF in p.stdout
    ok &= good
    lines.append(f"retention: icecdc reset --table {NS}.held: exit {p.returncode}, refs now {names}"
                 f"{'' if good else ' NOT AS WANTED: ' + (p.stdout + p.stderr).strip()[-300:]}")
    phase("reset")
    lines.append("  phases: " + ", ".join(phases))
    return ok


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--icecdc", required=True)
    ap.add_argument("--work", required=True)
    ap.add_argument("--ivy", required=True)
    a = ap.parse_args()
    import spark_session
    os.makedirs(a.work, exist_ok=True)
    spark, secs = spark_session.start(os.path.join(a.work, "unused.db"), os.path.join(a.work, "unused-wh"), a.ivy)
    print(f"timing: spark session start {secs:.1f}s", flush=True)
    t0 = time.monotonic()
    ok, lines = run(spark, a.icecdc, os.path.join(a.work, "retention"))
    print("\n".join(lines))
    print(f"timing: retention-hold {time.monotonic() - t0:.1f}s")
    spark.stop()
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
