"""aws-sinks: `icecdc run` into moto's SQS, SNS and Kinesis, read back with boto3.

The demo table (`icecdc demo --dir`) grows by commits while a daemon per
destination follows it from earliest: an SQS standard queue, an SQS FIFO
queue, an SNS FIFO topic (read through an SQS FIFO queue subscribed with
raw delivery) and a Kinesis stream of two shards. Each daemon is SIGKILLed
once its first events arrived, more commits are made while it is down, and
it is started again from its state file; then moto stops answering for a
minute (SIGSTOP) while the table takes two commits, which the daemons must
deliver once it answers again; at the end each replays the
table from the start (`icecdc reset --all`, `run --once`). Then every event `icecdc changes`
prints must be there (lost = 0), no other event, each key's events in
commit order (first deliveries; not on the standard queue, which promises
no order), and on the FIFO destinations no duplicate (the restart and the
replay are within the 5-minute deduplication window), while elsewhere the
replay delivered every event again (at least once). One line per destination:
events, kills, lost, duplicated, order.
"""
import argparse
import json
import os
import signal
import subprocess
import sys
import time

import boto3

REGION, KEY, SECRET = "us-east-1", "AKIAICECDCTEST000001", "icecdc-moto-secret"
COMMITS = ["insert", "update", "merge", "delete", "insert", "update"]


def clients(endpoint):
    kw = dict(endpoint_url=endpoint, region_name=REGION, aws_access_key_id=KEY, aws_secret_access_key=SECRET)
    return boto3.client("sqs", **kw), boto3.client("sns", **kw), boto3.client("kinesis", **kw)


def demo(a, *extra):
    subprocess.run([a.icecdc, "demo", "--dir", a.demo, *extra], check=True, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)


def expected(a):
    out = subprocess.run([a.icecdc, "changes", "--catalog-uri", "file:" + a.demo + "/catalog.db", "--warehouse",
                          "file://" + a.demo + "/warehouse", "--table", "bookshop.orders", "--with-key"],
                         check=True, capture_output=True, text=True).stdout
    evs = []
    for line in out.splitlines():
        key, value = line.split("\t", 1)
        e = json.loads(value)
        s = e["source"]
        evs.append((f'{s["table_uuid"]}:{s["sequence_number"]}:{s["row_id"]}:{e["op"]}', key))
    return evs


def config(a, mode, sink):
    path = os.path.join(a.work, mode + ".yaml")
    conn = f'region: {REGION}, endpoint: "{a.endpoint}", access_key_id: {KEY}, secret_access_key: {SECRET}'
    with open(path, "w") as fh:
        fh.write(f"""name: aws-{mode}
catalog: {{type: sql, uri: "file:{a.demo}/catalog.db", warehouse: "file://{a.demo}/warehouse"}}
tables: [{{name: bookshop.orders, start: earliest}}]
poll: {{interval: 200ms, max_interval: 1s}}
allowed_locations: ["file://{a.demo}/warehouse"]
sink: {{type: {sink[0]}, {sink[0]}: {{{sink[1]}: "{sink[2]}", {conn}}}}}
state: {{path: "{a.work}/{mode}.db"}}
""")
    return path


class Queue:
    """Receives an SQS queue (deleting what it received), once at the end:
    moto forgets a deleted FIFO message's deduplication id, where SQS keeps
    it for 5 minutes, so the queue is only counted until the replay."""

    def __init__(self, sqs, url):
        self.sqs, self.url, self.got = sqs, url, []

    def count(self):
        at = self.sqs.get_queue_attributes(QueueUrl=self.url, AttributeNames=[
            "ApproximateNumberOfMessages", "ApproximateNumberOfMessagesNotVisible"])["Attributes"]
        return int(at["ApproximateNumberOfMessages"]) + int(at["ApproximateNumberOfMessagesNotVisible"])

    def read(self):
        while True:
            r = self.sqs.receive_message(QueueUrl=self.url, MaxNumberOfMessages=10, VisibilityTimeout=600,
                                         MessageAttributeNames=["All"], AttributeNames=["All"])
            ms = r.get("Messages", [])
            if not ms:
                return self.got
            for m in ms:
                at = m.get("MessageAttributes", {})
                group = m.get("Attributes", {}).get("MessageGroupId", "")
                self.got.append((at["id"]["StringValue"], group))
            self.sqs.delete_message_batch(QueueUrl=self.url, Entries=[
                {"Id": str(i), "ReceiptHandle": m["ReceiptHandle"]} for i, m in enumerate(ms)])


class Stream:
    """Reads a Kinesis stream shard by shard; ids from the values."""

    def __init__(self, kin, name):
        self.kin, self.name, self.got, self.iters = kin, name, [], {}
        for sh in kin.list_shards(StreamName=name)["Shards"]:
            self.iters[sh["ShardId"]] = kin.get_shard_iterator(StreamName=name, ShardId=sh["ShardId"],
                                                               ShardIteratorType="TRIM_HORIZON")["ShardIterator"]

    def count(self):
        return len(self.read())

    def read(self):
        for sh, it in list(self.iters.items()):
            while it:
                r = self.kin.get_records(ShardIterator=it)
                for rec in r["Records"]:
                    e = json.loads(rec["Data"])
                    s = e["source"]
                    self.got.append((f'{s["table_uuid"]}:{s["sequence_number"]}:{s["row_id"]}:{e["op"]}', rec["PartitionKey"]))
                it = r.get("NextShardIterator")
                if not r["Records"]:
                    break
            self.iters[sh] = it
        return self.got


def destinations(a, sqs, sns, kin):
    out = {}
    u = sqs.create_queue(QueueName="aws-e2e-std")["QueueUrl"]
    out["sqs"] = (("sqs", "queue", "aws-e2e-std"), Queue(sqs, u), False, False)
    u = sqs.create_queue(QueueName="aws-e2e-fifo.fifo", Attributes={"FifoQueue": "true"})["QueueUrl"]
    out["sqs-fifo"] = (("sqs", "queue", u), Queue(sqs, u), True, True)
    topic = sns.create_topic(Name="aws-e2e-topic.fifo", Attributes={"FifoTopic": "true"})["TopicArn"]
    u = sqs.create_queue(QueueName="aws-e2e-sub.fifo", Attributes={"FifoQueue": "true"})["QueueUrl"]
    arn = sqs.get_queue_attributes(QueueUrl=u, AttributeNames=["QueueArn"])["Attributes"]["QueueArn"]
    sns.subscribe(TopicArn=topic, Protocol="sqs", Endpoint=arn, Attributes={"RawMessageDelivery": "true"})
    out["sns-fifo"] = (("sns", "topic_arn", topic), Queue(sqs, u), True, True)
    kin.create_stream(StreamName="aws-e2e-stream", ShardCount=2)
    out["kinesis"] = (("kinesis", "stream", "aws-e2e-stream"), None, False, True)
    return out


def start(a, mode, cfg):
    log = open(os.path.join(a.work, mode + ".log"), "ab")
    return subprocess.Popen([a.icecdc, "run", "-c", cfg], stdout=log, stderr=subprocess.STDOUT)


def wait_for(pred, secs, what):
    end = time.time() + secs
    while time.time() < end:
        if pred():
            return True
        time.sleep(0.3)
    print(f"aws-sinks: timed out after {secs}s waiting for {what}", file=sys.stderr)
    return False


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--icecdc", required=True)
    ap.add_argument("--endpoint", required=True, help="moto server, http://127.0.0.1:PORT")
    ap.add_argument("--work", required=True)
    ap.add_argument("--outage", type=int, default=60, help="seconds moto is stopped (SIGSTOP) once the restarted daemons delivered; 0: none")
    ap.add_argument("--moto-pid", type=int, default=0, help="moto's process, the part's own (required with --outage)")
    a = ap.parse_args()
    if a.outage > 0 and not a.moto_pid:
        ap.error("--outage needs --moto-pid")
    os.makedirs(a.work, exist_ok=True)
    a.demo = os.path.join(a.work, "demo")
    t0 = time.time()
    sqs, sns, kin = clients(a.endpoint)
    demo(a)
    dests = destinations(a, sqs, sns, kin)
    readers = {m: (d[1] if d[1] else Stream(kin, "aws-e2e-stream")) for m, d in dests.items()}
    procs = {m: start(a, m, config(a, m, d[0])) for m, d in dests.items()}
    ok = True
    # 1. SIGKILL each daemon once its first events arrived.
    for m in dests:
        ok &= wait_for(lambda: readers[m].count() > 0, 60, f"{m}'s first events")
        procs[m].send_signal(signal.SIGKILL)
        procs[m].wait()
    # 2. Commits while they are down, then again while they run.
    for c in COMMITS[:3]:
        demo(a, "--commit", c)
    procs = {m: start(a, m, config(a, m, dests[m][0])) for m in dests}
    for c in COMMITS[3:]:
        demo(a, "--commit", c)
    want = expected(a)
    ids = {i for i, _ in want}
    for m in dests:
        wait_for(lambda: readers[m].count() >= len(ids), 90, f"{m}'s events")
    # 2b. The server stops answering for a.outage seconds (SIGSTOP of
    #     moto: connections stay open, nothing comes back) while the table
    #     takes two commits; the daemons keep running and deliver them once
    #     it answers again.
    recovered = None
    if a.outage > 0:
        os.kill(a.moto_pid, signal.SIGSTOP)
        try:
            for c in ("insert", "update"):
                demo(a, "--commit", c)
            end = time.time() + a.outage
            while time.time() < end:
                for m, p in procs.items():
                    if p.poll() is not None:
                        print(f"aws-sinks: {m}: icecdc run exited {p.returncode} while the server was stopped (log {a.work}/{m}.log)")
                        ok = False
                if not ok:
                    break
                time.sleep(0.5)
        finally:
            os.kill(a.moto_pid, signal.SIGCONT)
        t1 = time.time()
        want = expected(a)
        ids = {i for i, _ in want}
        for m in dests:
            ok &= wait_for(lambda: readers[m].count() >= len(ids), 180, f"{m}'s events after the outage")
        recovered = time.time() - t1
    for p in procs.values():
        p.send_signal(signal.SIGTERM)
    for p in procs.values():
        p.wait(timeout=30)
    # 3. A replay from the start (`icecdc reset --all`, `run --once`),
    #    within the FIFO destinations' 5-minute deduplication window.
    for m, d in dests.items():
        cfg = config(a, m, d[0])
        subprocess.run([a.icecdc, "reset", "-c", cfg, "--all"], check=True, capture_output=True)
        r = subprocess.run([a.icecdc, "run", "-c", cfg, "--once"], capture_output=True, text=True, timeout=120)
        if r.returncode != 0:
            print(f"aws-sinks: {m}: the replay's run --once exited {r.returncode}: {r.stderr[-500:]}", file=sys.stderr)
            ok = False
    # 4. Compare.
    pos = {i: n for n, (i, _) in enumerate(want)}
    for m, d in dests.items():
        fifo, ordered = d[2], d[3]
        got = readers[m].read()
        seen, dup, extra, order_bad = set(), 0, 0, 0
        last = {}
        for i, group in got:
            if i not in pos:
                extra += 1
                continue
            if i in seen:
                dup += 1
                continue
            seen.add(i)
            key = group or "-"
            if key in last and last[key] > pos[i]:
                order_bad += 1
            last[key] = pos[i]
        lost = len(ids - seen)
        # FIFO: the replay added nothing; elsewhere it delivered every
        # event again (at least once), which shows the replay took place.
        bad = lost or extra or (fifo and dup) or (not fifo and dup < len(want)) or (ordered and order_bad)
        order = f"{order_bad} out of order" if ordered else f"no order promised ({order_bad} out of order)"
        out = f", server stopped {a.outage}s (all delivered {recovered:.1f}s after it answered again)" if recovered is not None else ""
        print(f"aws-sinks: {m}: {len(want)} events, 1 kill{out}, 1 replay, lost {lost}, extra {extra}, duplicated {dup}"
              f"{' (exactly once promised)' if fifo else ''}, order: {order} {'FAILED' if bad else 'ok'}")
        ok &= not bad
    print(f"aws-sinks: e2e {'ok' if ok else 'FAILED'} in {time.time() - t0:.1f}s")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
