"""Runs `icecdc changes` on a table and groups its events by snapshot."""

import json
import subprocess
from collections import OrderedDict


def catalog_args(catalog, ident, catalog_db=None, warehouse=None, rest_uri=None):
    if catalog == "rest":
        return ["--catalog-type", "rest", "--catalog-uri", rest_uri, "--table", ident]
    return ["--catalog-type", "sql", "--catalog-name", catalog, "--catalog-uri", f"file:{catalog_db}",
            "--warehouse", f"file://{warehouse}", "--table", ident]


def changes(binary, args, timeout=300, env=None):
    """Returns (OrderedDict snapshot_id -> [event], error or None, stderr)."""
    cmd = [binary, "changes"] + args
    try:
        p = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, env=env)
    except subprocess.TimeoutExpired:
        return OrderedDict(), f"timed out after {timeout}s: {' '.join(cmd)}", ""
    by_snap = OrderedDict()
    bad = None
    for n, line in enumerate(p.stdout.splitlines(), 1):
        if not line.strip():
            continue
        try:
            ev = json.loads(line)
        except json.JSONDecodeError as err:
            bad = bad or f"stdout line {n} is not JSON ({err}): {line[:200]}"
            continue
        by_snap.setdefault(ev.get("source", {}).get("snapshot_id"), []).append(ev)
    err = None
    if p.returncode != 0:
        err = f"exit {p.returncode}: {' '.join(cmd)}: {p.stderr.strip()[-2000:]}"
    elif bad:
        err = bad
    return by_snap, err, p.stderr
