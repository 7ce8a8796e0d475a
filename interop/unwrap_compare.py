"""The unwrap part's check (interop/parts/unwrap.sh): what Debezium's
ExtractNewRecordState made of icecdc's envelope topic, as the record-file
sink wrote it, against icecdc's flattened topic of the same events, as kcat
read it: record by record, key and value as JSON documents (a tombstone only
equals a tombstone), headers in order and byte for byte."""

import argparse
import json
import os
import sys
import time
import urllib.request

STARTS = ("earliest", "initial")


def icecdc_records(path):
    out = []
    with open(path) as f:
        for line in f:
            if not line.strip():
                continue
            r = json.loads(line)
            hs = r.get("headers") or []
            pairs = [[hs[i], hs[i + 1]] for i in range(0, len(hs), 2)]
            out.append({"key": r.get("key"), "value": r.get("payload"), "headers": pairs})
    return out


def smt_records(path, topic):
    out = []
    if not os.path.exists(path):
        return out
    with open(path) as f:
        for line in f:
            if line.endswith("\n"):
                r = json.loads(line)
                if r["topic"] == topic:
                    out.append({"key": r["key"], "value": r["value"], "headers": r["headers"]})
    return out


def doc(s):
    if s is None:
        return None
    try:
        return ("json", json.loads(s))
    except ValueError:
        return ("text", s)


def diff(got, want):
    if doc(got["key"]) != doc(want["key"]):
        return "key %s, Debezium's %s" % (got["key"], want["key"])
    if (got["value"] is None) != (want["value"] is None) or doc(got["value"]) != doc(want["value"]):
        return "value %.400s, Debezium's %.400s" % (got["value"], want["value"])
    if got["headers"] != want["headers"]:
        return "headers %s, Debezium's %s" % (got["headers"], want["headers"])
    return ""


def get(url):
    return json.loads(urllib.request.urlopen(url, timeout=30).read().decode())


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--dir", required=True)
    ap.add_argument("--modes", required=True)
    ap.add_argument("--connect", required=True)
    a = ap.parse_args()
    modes = a.modes.split()
    plugins = [p for p in get(a.connect + "/connector-plugins?connectorsOnly=false")
               if p["class"] == "io.debezium.transforms.ExtractNewRecordState"]
    print("unwrap: the worker has ExtractNewRecordState %s" % ", ".join(sorted(p.get("version", "?") for p in plugins)))
    ok = True
    for mode in modes:
        smt = os.path.join(a.dir, "smt-%s.jsonl" % mode)
        ours = {s: icecdc_records(os.path.join(a.dir, "icecdc-%s-%s.json" % (mode, s))) for s in STARTS}
        topics = {s: "unwrap-envelope-%s.orders" % s for s in STARTS}
        deadline = time.time() + 120
        while time.time() < deadline:
            if all(len(smt_records(smt, topics[s])) >= len(ours[s]) for s in STARTS):
                break
            status = get(a.connect + "/connectors/unwrap-%s/status" % mode)
            failed = [t for t in status.get("tasks", []) if t.get("state") == "FAILED"]
            if failed:
                print("unwrap: delete.tombstone.handling.mode=%s: the connector's task FAILED: %s"
                      % (mode, failed[0].get("trace", "")[:600]))
                ok = False
                break
            time.sleep(0.5)
        time.sleep(2)  # a record past icecdc's count would arrive by now
        line, bad = [], ""
        for s in STARTS:
            theirs = smt_records(smt, topics[s])
            line.append("%s %d" % (s, len(ours[s])))
            if len(theirs) != len(ours[s]) and not bad:
                bad = "%s: icecdc wrote %d records, Debezium's SMT %d" % (s, len(ours[s]), len(theirs))
            for i, (g, w) in enumerate(zip(ours[s], theirs)):
                d = diff(g, w)
                if d and not bad:
                    bad = "%s record %d: %s" % (s, i, d)
        n = sum(len(ours[s]) for s in STARTS)
        if bad:
            ok = False
            print("unwrap: delete.tombstone.handling.mode=%s: %d records (%s): NOT equal to Debezium's ExtractNewRecordState: %s"
                  % (mode, n, ", ".join(line), bad))
        else:
            print("unwrap: delete.tombstone.handling.mode=%s: %d records (%s): equal to Debezium's ExtractNewRecordState, record by record (key, value, headers)"
                  % (mode, n, ", ".join(line)))
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
