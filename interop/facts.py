"""What Spark/Iceberg Java actually wrote, read straight from the files.

Per snapshot: the manifest-list first_row_id of each data manifest, the
entries the snapshot itself added or deleted (raw values: a null data
sequence number or first_row_id means "inherited"), whether added Parquet
files store the lineage columns, and the Puffin layout of new vectors.
These are the facts icecdc's assumptions rest on; the report prints them.
"""

import json
import struct

import pyarrow.parquet as pq
from pyiceberg.avro.file import AvroFile
from pyiceberg.io.pyarrow import PyArrowFileIO
from pyiceberg.types import StructType

STATUS = {0: "existing", 1: "+", 2: "-"}
CONTENT = {0: "data", 1: "posdel", 2: "eqdel"}
_io = PyArrowFileIO()


def configure(props):
    """Read through a FileIO with these properties (s3.endpoint, keys, ...):
    the tables may live on the S3 server as well as in local files."""
    global _io
    _io = PyArrowFileIO(props)


def read_json(path):
    with _io.new_input(path).open() as fh:
        return json.loads(fh.read())


def read_avro(path):
    with AvroFile(_io.new_input(path)) as f:
        schema = f.schema
        return [_to_dict(r, schema) for r in f]


def _to_dict(rec, struct_type):
    out = {}
    for i, f in enumerate(struct_type.fields):
        v = rec[i]
        if v is not None and isinstance(f.field_type, StructType):
            v = _to_dict(v, f.field_type)
        out[f.name] = v
    return out


def puffin_blobs(path):
    """The blob list of a Puffin file's footer."""
    inp = _io.new_input(path)
    length = len(inp)
    with inp.open() as fh:
        fh.seek(length - 12)
        size, flags = struct.unpack("<ii", fh.read(8))
        if fh.read(4) != b"PFA1":
            return None
        if flags & 1:
            return "compressed footer"
        fh.seek(length - 12 - size)
        return json.loads(fh.read(size))["blobs"]


def lineage_columns(path):
    """How an added Parquet file stores _row_id and lusn: 'absent' or non-null/total."""
    with _io.new_input(path).open() as fh:
        pf = pq.ParquetFile(fh)
        names = pf.schema_arrow.names
        out = {}
        for col, short in (("_row_id", "_row_id"), ("_last_updated_sequence_number", "lusn")):
            if col not in names:
                out[short] = "absent"
                continue
            arr = pf.read(columns=[col]).column(0)
            vals = [v for v in arr.to_pylist() if v is not None]
            rng = f" [{min(vals)}..{max(vals)}]" if vals else ""
            out[short] = f"{len(vals)}/{len(arr)} set{rng}"
    return out


class Aliases:
    """Short names for long file names: d1, d2 … for data, p1 … for Puffin."""

    def __init__(self):
        self.names = {}

    def __call__(self, path, prefix):
        if path is None:
            return "-"
        if path not in self.names:
            n = sum(1 for k in self.names.values() if k.startswith(prefix)) + 1
            self.names[path] = f"{prefix}{n}"
        return self.names[path]


def snapshot_facts(snap, alias):
    """Lines describing what one snapshot wrote."""
    sid, seq = snap["snapshot-id"], snap.get("sequence-number", 0)
    lines = []
    head = f"{snap.get('summary', {}).get('operation', '?')} seq={seq}"
    if "first-row-id" in snap or "added-rows" in snap:
        head += f" snapshot.first-row-id={snap.get('first-row-id')} added-rows={snap.get('added-rows')}"
    lines.append(head)
    manifests = read_avro(snap["manifest-list"])
    data_m = [m for m in manifests if m["content"] == 0]
    lines.append("  manifest list (data): " + ", ".join(
        f"{'own' if m['added_snapshot_id'] == sid else 'old'} seq={m['sequence_number']} first_row_id={m.get('first_row_id')}"
        for m in data_m))
    puffins = {}
    for m in manifests:
        if m["added_snapshot_id"] != sid:
            continue
        for e in read_avro(m["manifest_path"]):
            if e["status"] == 0 or e["snapshot_id"] not in (None, sid):
                continue
            df = e["data_file"]
            content = CONTENT.get(df["content"], df["content"])
            fmt = str(df["file_format"]).upper()
            raw_seq = e.get("sequence_number")
            dseq = f"dseq={raw_seq}" if raw_seq is not None else f"dseq=inherit({m['sequence_number']})"
            st = STATUS[e["status"]]
            if content == "data":
                name = alias(df["file_path"], "d")
                line = (f"  {st}data {name} rows={df['record_count']} {dseq} "
                        f"first_row_id={df.get('first_row_id')}")
                if e["status"] == 1:
                    try:
                        lc = lineage_columns(df["file_path"])
                        line += f" stored _row_id={lc['_row_id']} lusn={lc['lusn']}"
                    except OSError as err:
                        line += f" (parquet unreadable: {err})"
                lines.append(line)
            elif fmt == "PUFFIN":
                p = alias(df["file_path"], "p")
                ref = alias(df.get("referenced_data_file"), "d")
                lines.append(f"  {st}dv {p}@{df.get('content_offset')}+{df.get('content_size_in_bytes')} "
                             f"-> {ref} card={df['record_count']} {dseq}")
                if e["status"] == 1:
                    puffins[df["file_path"]] = p
            else:
                name = alias(df["file_path"], "x")
                ref = df.get("referenced_data_file")
                lines.append(f"  {st}{content} {fmt.lower()} {name} rows={df['record_count']} {dseq} "
                             f"referenced_data_file={alias(ref, 'd') if ref else 'none'}")
    for path, p in puffins.items():
        try:
            blobs = puffin_blobs(path)
        except OSError as err:
            lines.append(f"  puffin {p}: unreadable ({err})")
            continue
        if isinstance(blobs, list):
            refs = [alias(b.get("properties", {}).get("referenced-data-file"), "d") for b in blobs]
            lines.append(f"  puffin {p}: {len(blobs)} blob(s) {[b['type'] for b in blobs][0] if blobs else ''} for {', '.join(refs)}")
        else:
            lines.append(f"  puffin {p}: {blobs}")
    return lines


def table_facts(metadata_path, ancestry):
    """Facts for the snapshots in ancestry (ids, oldest first): {id: [lines]}."""
    meta = read_json(metadata_path)
    snaps = {s["snapshot-id"]: s for s in meta.get("snapshots", [])}
    alias = Aliases()
    out = {}
    for sid in ancestry:
        try:
            out[sid] = snapshot_facts(snaps[sid], alias)
        except Exception as err:  # a fact we cannot read is reported, not fatal
            out[sid] = [f"facts unreadable: {type(err).__name__}: {err}"]
    header = (f"format-version={meta.get('format-version')} next-row-id={meta.get('next-row-id')} "
              f"properties={ {k: v for k, v in meta.get('properties', {}).items() if k.startswith('write.') or k.startswith('format')} }")
    return header, out
