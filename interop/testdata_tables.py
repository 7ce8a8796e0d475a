"""The small tables stored under testdata/java/ (issue #13), one per quirk.

Each is a scenarios.Scenario (columns, table properties, SQL steps, as the
interop stage runs them) with a `quirk` line saying what it pins. The
generator (generate_testdata.py) has Spark 4.1 + Iceberg 1.11 (or the
`iceberg` version a table names) write them,
computes the events Spark's own reads imply and stores both; testdata/java/
README.md lists them. Keep them tiny: a few rows, a handful of commits.

Steps that need a snapshot id (rollback, cherry-pick) are functions
(spark, scenario) that do the step and return the SQL they ran.
"""

from scenarios import Scenario
from spark_session import MOR_V3


def _snapshot_where(spark, sc, cond):
    rows = spark.sql(f"SELECT snapshot_id FROM {sc.table}.snapshots WHERE {cond} ORDER BY committed_at").collect()
    if len(rows) != 1:
        raise RuntimeError(f"{sc.name}: {len(rows)} snapshots where {cond}")
    return rows[0][0]


def _call(spark, stmt):
    spark.sql(stmt).collect()
    return stmt


def compaction():
    return Scenario(
        name="compaction",
        columns="id bigint, name string, v int",
        steps=[
            ("insert 1-3", ["INSERT INTO {t} VALUES (1, 'a', 10), (2, 'b', 20), (3, 'c', 30)"]),
            ("insert 4-6", ["INSERT INTO {t} VALUES (4, 'd', 40), (5, 'e', 50), (6, 'f', 60)"]),
            ("delete 2", ["DELETE FROM {t} WHERE id = 2"]),
            ("update 5", ["UPDATE {t} SET v = v + 1 WHERE id = 5"]),
            ("rewrite_data_files (compaction)",
             ["CALL {cat}.system.rewrite_data_files(table => '{ident}', options => map('rewrite-all', 'true'))"]),
            ("delete 4 inside the compacted file", ["DELETE FROM {t} WHERE id = 4"]),
            ("update 5 again and 6 inside the compacted file", ["UPDATE {t} SET v = v + 1 WHERE id IN (5, 6)"]),
        ],
    )


def mor_update():
    return Scenario(
        name="mor-update",
        columns="id bigint, name string, v int",
        steps=[
            ("insert 1-4", ["INSERT INTO {t} VALUES (1, 'a', 1), (2, 'b', 2), (3, 'c', 3), (4, 'd', 4)"]),
            ("update 1 and 2", ["UPDATE {t} SET v = v * 10 WHERE id IN (1, 2)"]),
            ("update 2 again (a row the first update wrote)", ["UPDATE {t} SET name = 'B' WHERE id = 2"]),
            ("delete 1 (stored _row_id) and 4", ["DELETE FROM {t} WHERE id IN (1, 4)"]),
            ("insert 5", ["INSERT INTO {t} VALUES (5, 'e', 5)"]),
        ],
    )


def existing_first_row_id():
    """Manifests merged on every commit (min-count-to-merge 2) and filtered
    by whole-file deletes: Java writes the entries it carries over as
    EXISTING with an explicit first_row_id (ADDED ones inherit theirs)."""
    props = dict(MOR_V3)
    props["commit.manifest.min-count-to-merge"] = "2"
    return Scenario(
        name="existing-first-row-id",
        columns="id bigint, name string, v int",
        props=props,
        steps=[
            ("insert 1-2 (two files)", ["INSERT INTO {t} VALUES (1, 'a', 1), (2, 'b', 2)"]),
            ("insert 3-4 (manifests merged)", ["INSERT INTO {t} VALUES (3, 'c', 3), (4, 'd', 4)"]),
            ("insert 5-6 (manifests merged)", ["INSERT INTO {t} VALUES (5, 'e', 5), (6, 'f', 6)"]),
            ("delete 1 (a whole file: the manifest is filtered)", ["DELETE FROM {t} WHERE id = 1"]),
            ("update 5 (a vector on a file with an explicit first_row_id)", ["UPDATE {t} SET v = 50 WHERE id = 5"]),
            ("delete 3 (a whole file)", ["DELETE FROM {t} WHERE id = 3"]),
            ("insert 7", ["INSERT INTO {t} VALUES (7, 'g', 7)"]),
        ],
    )


def rewrite_manifests():
    """rewrite_manifests over entries with inherited and explicit first_row_id."""
    return Scenario(
        name="rewrite-manifests",
        columns="id bigint, name string, v int",
        steps=[
            ("insert 1-2 (two files)", ["INSERT INTO {t} VALUES (1, 'a', 1), (2, 'b', 2)"]),
            ("insert 3-4 (two files)", ["INSERT INTO {t} VALUES (3, 'c', 3), (4, 'd', 4)"]),
            ("insert 5-6 (two files)", ["INSERT INTO {t} VALUES (5, 'e', 5), (6, 'f', 6)"]),
            ("delete 1 (a whole file: 2's entry becomes EXISTING with an explicit first_row_id)",
             ["DELETE FROM {t} WHERE id = 1"]),
            ("rewrite_manifests", ["CALL {cat}.system.rewrite_manifests(table => '{ident}')"]),
            ("delete 3 (a whole file)", ["DELETE FROM {t} WHERE id = 3"]),
            ("update 5", ["UPDATE {t} SET v = 50 WHERE id = 5"]),
        ],
    )


def rewrite_manifests_112():
    """The same history written by Iceberg 1.12, whose rewrite_manifests
    keeps each EXISTING entry's first_row_id."""
    sc = rewrite_manifests()
    sc.name, sc.iceberg = "rewrite-manifests-1.12", "1.12.0"
    sc.table_name = "rewrite_manifests_112"
    return sc


def upgrade():
    v2 = dict(MOR_V3)
    v2["format-version"] = "2"
    return Scenario(
        name="upgrade",
        columns="id bigint, name string, v int",
        props=v2,
        steps=[
            ("v2: insert 1-3", ["INSERT INTO {t} VALUES (1, 'a', 1), (2, 'b', 2), (3, 'c', 3)"]),
            ("v2: insert 4-6", ["INSERT INTO {t} VALUES (4, 'd', 4), (5, 'e', 5), (6, 'f', 6)"]),
            ("v2: position deletes for 2 and 5", ["DELETE FROM {t} WHERE id IN (2, 5)"]),
            ("upgrade to format-version 3", ["ALTER TABLE {t} SET TBLPROPERTIES ('format-version' = '3')"]),
            ("v3: insert 7", ["INSERT INTO {t} VALUES (7, 'g', 7)"]),
            ("v3: delete 3 (next to 2's v2 position delete)", ["DELETE FROM {t} WHERE id = 3"]),
            ("v3: update 6 (next to 5's v2 position delete)", ["UPDATE {t} SET v = 60 WHERE id = 6"]),
        ],
    )


def _one_file(rows):
    """INSERT of rows written as one data file (local[2] would write two)."""
    return ("INSERT INTO {t} SELECT /*+ REPARTITION(1) */ * FROM VALUES " + rows + " AS s(id, name, v)")


def puffin_per_commit():
    return Scenario(
        name="puffin-per-commit",
        columns="id bigint, name string, v int",
        steps=[
            ("insert 1-3 (one file)", [_one_file("(1, 'a', 1), (2, 'b', 2), (3, 'c', 3)")]),
            ("insert 4-6 (one file)", [_one_file("(4, 'd', 4), (5, 'e', 5), (6, 'f', 6)")]),
            ("insert 7-9 (one file)", [_one_file("(7, 'g', 7), (8, 'h', 8), (9, 'i', 9)")]),
            ("delete 1, 4, 7 (three vectors, one Puffin file)", ["DELETE FROM {t} WHERE id IN (1, 4, 7)"]),
            ("delete 2, 5 (two vectors replacing two, one Puffin file)", ["DELETE FROM {t} WHERE id IN (2, 5)"]),
            ("update 9", ["UPDATE {t} SET v = 90 WHERE id = 9"]),
        ],
    )


def merge_partitioned():
    return Scenario(
        name="merge-partitioned",
        columns="id bigint, region string, v int",
        partitioned_by="region",
        steps=[
            ("insert 1-3 in eu, 4-6 in us",
             ["INSERT INTO {t} VALUES (1, 'eu', 1), (2, 'eu', 2), (3, 'eu', 3), (4, 'us', 4), (5, 'us', 5), (6, 'us', 6)"]),
            ("MERGE: delete 1, update 4, move 2 from eu to us, insert 7 (eu) and 8 (us)",
             ["MERGE INTO {t} t USING (SELECT * FROM VALUES (1, 'eu', 0, 'del'), (4, 'us', 40, 'upd'), (2, 'us', 2, 'upd'), "
              "(7, 'eu', 7, 'ins'), (8, 'us', 8, 'ins') AS s(id, region, v, op)) s ON t.id = s.id "
              "WHEN MATCHED AND s.op = 'del' THEN DELETE "
              "WHEN MATCHED THEN UPDATE SET t.region = s.region, t.v = s.v "
              "WHEN NOT MATCHED THEN INSERT (id, region, v) VALUES (s.id, s.region, s.v)"]),
            ("MERGE: update 2 (moved) and 3, delete 8",
             ["MERGE INTO {t} t USING (SELECT * FROM VALUES (2, 20), (3, 30), (8, -1) AS s(id, v)) s ON t.id = s.id "
              "WHEN MATCHED AND s.v < 0 THEN DELETE WHEN MATCHED THEN UPDATE SET t.v = s.v"]),
        ],
    )


def copy_on_write():
    cow = {
        "format-version": "3",
        "write.delete.mode": "copy-on-write",
        "write.update.mode": "copy-on-write",
        "write.merge.mode": "copy-on-write",
    }
    return Scenario(
        name="cow",
        columns="id bigint, name string, v int",
        props=cow,
        steps=[
            ("insert 1-4", ["INSERT INTO {t} VALUES (1, 'a', 1), (2, 'b', 2), (3, 'c', 3), (4, 'd', 4)"]),
            ("copy-on-write update 2", ["UPDATE {t} SET v = 20 WHERE id = 2"]),
            ("copy-on-write delete 3", ["DELETE FROM {t} WHERE id = 3"]),
            ("copy-on-write MERGE: update 1, insert 5",
             ["MERGE INTO {t} t USING (SELECT * FROM VALUES (1, 'a2', 10), (5, 'e', 5) AS s(id, name, v)) s ON t.id = s.id "
              "WHEN MATCHED THEN UPDATE SET t.name = s.name, t.v = s.v WHEN NOT MATCHED THEN INSERT *"]),
        ],
    )


def rename_drop():
    return Scenario(
        name="rename-drop",
        columns="id bigint, name string, v int, note string",
        steps=[
            ("insert 1-3", ["INSERT INTO {t} VALUES (1, 'a', 1, 'x'), (2, 'b', 2, 'y'), (3, 'c', 3, 'z')"]),
            ("rename name to label", ["ALTER TABLE {t} RENAME COLUMN name TO label"]),
            ("update label of 1 (first commit under the new name)", ["UPDATE {t} SET label = 'A' WHERE id = 1"]),
            ("drop column note", ["ALTER TABLE {t} DROP COLUMN note"]),
            ("delete 2 (before image without note)", ["DELETE FROM {t} WHERE id = 2"]),
            ("update v of 3", ["UPDATE {t} SET v = 30 WHERE id = 3"]),
        ],
    )


def rollback_to_first(spark, sc):
    first = _snapshot_where(spark, sc, "parent_id IS NULL")
    return _call(spark, f"CALL {sc.catalog}.system.rollback_to_snapshot('{sc.ident}', {first})")


def rollback():
    return Scenario(
        name="rollback",
        columns="id bigint, name string, v int",
        steps=[
            ("insert 1-3", ["INSERT INTO {t} VALUES (1, 'a', 1), (2, 'b', 2), (3, 'c', 3)"]),
            ("update 2 (rolled back)", ["UPDATE {t} SET v = 20 WHERE id = 2"]),
            ("delete 3 (rolled back)", ["DELETE FROM {t} WHERE id = 3"]),
            ("rollback_to_snapshot (the first)", [rollback_to_first]),
            ("insert 4", ["INSERT INTO {t} VALUES (4, 'd', 4)"]),
            ("update 2 and delete 1 on the new main",
             ["MERGE INTO {t} t USING (SELECT * FROM VALUES (1, -1), (2, 200) AS s(id, v)) s ON t.id = s.id "
              "WHEN MATCHED AND s.v < 0 THEN DELETE WHEN MATCHED THEN UPDATE SET t.v = s.v"]),
        ],
    )


def _wap(wap_id, stmt):
    def step(spark, sc):
        spark.conf.set("spark.wap.id", wap_id)
        try:
            spark.sql(stmt.format(t=sc.table)).collect()
        finally:
            spark.conf.unset("spark.wap.id")
        return f"SET spark.wap.id = {wap_id}; {stmt.format(t=sc.table)}"
    step.__name__ = f"wap_{wap_id}"
    return step


def _cherrypick(wap_id):
    def step(spark, sc):
        sid = _snapshot_where(spark, sc, f"summary['wap.id'] = '{wap_id}'")
        return _call(spark, f"CALL {sc.catalog}.system.cherrypick_snapshot('{sc.ident}', {sid})")
    step.__name__ = f"cherrypick_{wap_id}"
    return step


def wap_cherrypick():
    props = dict(MOR_V3)
    props["write.wap.enabled"] = "true"
    return Scenario(
        name="wap-cherrypick",
        columns="id bigint, name string, v int",
        props=props,
        steps=[
            ("insert 1-3", ["INSERT INTO {t} VALUES (1, 'a', 1), (2, 'b', 2), (3, 'c', 3)"]),
            ("WAP w1: staged insert 4-5", [_wap("w1", "INSERT INTO {t} VALUES (4, 'd', 4), (5, 'e', 5)")]),
            ("insert 6 on main", ["INSERT INTO {t} VALUES (6, 'f', 6)"]),
            ("cherrypick_snapshot w1 (a new snapshot on main)", [_cherrypick("w1")]),
            ("WAP w2: staged delete 2 on main's head", [_wap("w2", "DELETE FROM {t} WHERE id = 2")]),
            ("cherrypick_snapshot w2 (fast-forward)", [_cherrypick("w2")]),
            ("update 4 (a cherry-picked row)", ["UPDATE {t} SET v = 40 WHERE id = 4"]),
        ],
    )


QUIRKS = {
    "rewrite-manifests-1.12": "rewrite_manifests (Iceberg 1.12) keeps every EXISTING entry's first_row_id: unchanged "
                              "rows keep their row ids at the replace snapshot, which has no events",
    "geo": "geometry and geography (Iceberg 1.12 generic writers): WKB points, lines, polygons and nulls under "
           "srid:3857, OGC:CRS84 (geography's default) and a non-EPSG CRS (ESRI:102008); a delete by vector",
    "timestamp-ns": "timestamp_ns and timestamptz_ns (Iceberg 1.12 generic writers): values needing nine digits, "
                    "before 1970 and at int64's ends; an update storing _row_id",
    "defaults": "initial-default and write-default (Iceberg 1.12 UpdateSchema): a top-level column and a struct field "
                "added with defaults after rows were written and one deleted by a vector; an old row updated after",
    "variant": "VARIANT (Iceberg 1.12): every value Spark makes, unshredded (metadata and value binaries); "
               "expected values are Spark's to_json(v)",
    "variant-shredded": "VARIANT with Iceberg 1.12's shredding (write.parquet.shred-variants): the files hold "
                        "typed_value columns beside value; expected values are Spark's to_json(v)",
    "compaction": "rewrite_data_files: the compacted file's entry carries the starting snapshot's data "
                  "sequence number (not the commit's) and stores _row_id and lusn; deletes and updates follow inside it",
    "mor-update": "merge-on-read UPDATE: the new data file stores _row_id and an all-null "
                  "_last_updated_sequence_number column (inherited from the entry's sequence number)",
    "existing-first-row-id": "manifests rewritten (merged on append, filtered by whole-file deletes) with an explicit "
                             "first_row_id on EXISTING entries; vectors and deletes then target those files",
    "rewrite-manifests": "rewrite_manifests (Iceberg 1.11) writes every EXISTING entry with a null first_row_id into a "
                         "manifest with a new first_row_id range: unchanged rows get new row ids at a replace snapshot "
                         "(Spark and iceberg-go read them so; no event stream satisfies docs/contract.md there)",
    "upgrade": "a v2 table with position-delete files upgraded to v3: the first deletion vector of each "
               "data file folds in its v2 position deletes, which the commit removes",
    "puffin-per-commit": "one Puffin file per commit holding every vector of the commit (several blobs), "
                         "later vectors replacing earlier ones in another Puffin file",
    "merge-partitioned": "MERGE on a partitioned table: deletes, updates, a row moved to another partition "
                         "(same _row_id in a new file), inserts in both partitions",
    "cow": "copy-on-write UPDATE/DELETE/MERGE: rewritten files carry unchanged rows with stored _row_id "
           "and older lusn (moves, no events)",
    "rename-drop": "RENAME COLUMN then DROP COLUMN: events use each snapshot's schema (new names, "
                   "dropped column absent from before images)",
    "rollback": "rollback_to_snapshot: two snapshots leave main's ancestry and stay in the metadata; "
                "icecdc follows main",
    "wap-cherrypick": "write-audit-publish: a staged append cherry-picked as a new snapshot on main, "
                      "a staged delete cherry-picked by fast-forward; staged snapshots off main are skipped",
}


# Every variant value Spark 4.1 can make: parse_json's objects, arrays,
# strings, integers (one past 2^63: a decimal), decimals, doubles, booleans,
# the JSON null and SQL NULL; and cast(... as variant) of the types JSON lacks
# (date, timestamp, timestamp_ntz, binary, float, double, decimal), and an
# object holding some of them (to_variant_object).
_VARIANT_ROWS = [
    "(1, parse_json('{\"a\": 1, \"b\": [1, 2, {\"c\": null}], \"s\": \"x\"}'), 'object')",
    "(2, parse_json('[1, \"two\", 3.5, true, null, {\"k\": []}]'), 'array')",
    r"""(3, parse_json('"caf\\u00e9 \\"q\\" tab\\tend"'), 'string')""",  # JSON escapes, SQL-escaped
    "(4, parse_json('-9223372036854775808'), 'long min')",
    "(5, parse_json('18446744073709551616'), 'big integer')",
    "(6, parse_json('1.2500'), 'decimal')",
    "(7, parse_json('-0.000000000000000000000000000000000001'), 'decimal 38')",
    "(8, parse_json('1.5e300'), 'double')",
    "(9, parse_json('true'), 'boolean')",
    "(10, parse_json('null'), 'json null')",
    "(11, NULL, 'sql null')",
]
_VARIANT_CASTS = [
    "(12, cast(date'1969-07-20' as variant), 'date')",
    "(13, cast(timestamp'2024-02-29 23:59:59.123456' as variant), 'timestamp')",
    "(14, cast(timestamp_ntz'1900-01-01 00:00:00.000001' as variant), 'timestamp_ntz')",
    "(15, cast(X'00ff10' as variant), 'binary')",
    "(16, cast(cast(0.1 as float) as variant), 'float')",
    "(17, cast(cast(0.1 as double) as variant), 'double cast')",
    "(18, cast(cast(-12.345 as decimal(10, 3)) as variant), 'decimal cast')",
    "(19, to_variant_object(named_struct('d', date'2000-01-01', 'ts', timestamp'2000-01-01 00:00:00', 'b', X'01', 'n', 7)), 'object of casts')",
]


def _braces(text):
    """text with its JSON braces kept through the steps' str.format."""
    return text.replace("{", "{{").replace("}", "}}")


def _variant(name, shredded):
    props = dict(MOR_V3)
    conf = {}
    if shredded:
        # Iceberg 1.12's own Parquet writer shreds (the session setting, and
        # the table property it reads): the files hold typed_value columns.
        props["write.parquet.shred-variants"] = "true"
        conf["spark.sql.iceberg.shred-variants"] = "true"
        # Iceberg 1.12's vectorized Parquet reader fails on its own shredded
        # files ("Unsupported variant: shredded typed_value primitive", at the
        # MERGE's scan); its row reader reads them.
        props["read.parquet.vectorization.enabled"] = "false"
    return Scenario(
        name=name,
        columns="id bigint, v variant, note string",
        props=props,
        select="id, to_json(v) AS v, note",
        iceberg="1.12.0",
        spark_conf=conf,
        steps=[
            ("insert parse_json values 1-11", ["INSERT INTO {t} VALUES " + _braces(", ".join(_VARIANT_ROWS))]),
            ("insert cast values 12-19", ["INSERT INTO {t} VALUES " + _braces(", ".join(_VARIANT_CASTS))]),
            # One shape per file: the shredding writer infers typed_value
            # columns from it (mixed values above stay in value).
            ("insert 21-23: objects of one shape",
             ["INSERT INTO {t} SELECT /*+ REPARTITION(1) */ * FROM VALUES " + _braces(
                 "(21, parse_json('{\"a\": 1, \"b\": \"x\", \"c\": 1.5}'), 'shape'), "
                 "(22, parse_json('{\"a\": 2, \"b\": \"y\", \"c\": 2.25}'), 'shape'), "
                 "(23, parse_json('{\"a\": 3, \"b\": null, \"c\": 3}'), 'shape partly')") + " AS s(id, v, note)"]),
            ("insert 24-25: dates (a primitive typed_value)",
             ["INSERT INTO {t} SELECT /*+ REPARTITION(1) */ * FROM VALUES "
              "(24, cast(date'2024-01-01' as variant), 'date'), (25, cast(date'1960-12-31' as variant), 'date') AS s(id, v, note)"]),
            ("update v of 1 and 12", ["UPDATE {t} SET v = parse_json('{{\"a\": 2, \"new\": [\"x\"]}}') WHERE id = 1",
                                       "UPDATE {t} SET v = cast(date'1970-01-01' as variant) WHERE id = 12"]),
            ("update note only of 2 (v unchanged)", ["UPDATE {t} SET note = 'array!' WHERE id = 2"]),
            ("delete 4 and 15, 22 (a shredded row)", ["DELETE FROM {t} WHERE id IN (4, 15, 22)"]),
            ("update 21 and 24 (shredded rows)", ["UPDATE {t} SET note = 'touched' WHERE id IN (21, 24)"]),
            ("MERGE: update 5, delete 6, insert 20",
             ["MERGE INTO {t} t USING (SELECT * FROM VALUES (5, 'upd'), (6, 'del'), (20, 'ins') AS s(id, op)) s "
              "ON t.id = s.id WHEN MATCHED AND s.op = 'del' THEN DELETE "
              "WHEN MATCHED THEN UPDATE SET t.v = parse_json('[18446744073709551616, 0.1]') "
              "WHEN NOT MATCHED THEN INSERT (id, v, note) VALUES (s.id, parse_json('{{\"z\": {{\"y\": 1.0}}}}'), 'merged')"]),
        ],
    )


def variant():
    return _variant("variant", False)


def variant_shredded():
    return _variant("variant-shredded", True)


class JavaTable:
    """A table interop/maven/generic/WriteGenericTables.java writes with
    Iceberg Java's generic writers (types Spark SQL cannot write); its steps
    are the commits it makes, oldest first (schema changes make none)."""

    def __init__(self, name, columns, steps):
        self.name, self.columns, self.steps = name, columns, steps
        self.quirk = QUIRKS[name]
        self.iceberg = "1.12.0"


def java_tables():
    return [
        JavaTable("geo", "id long, g geometry(srid:3857), geog geography (OGC:CRS84), other geometry(ESRI:102008), note string", [
            "insert 1-4: points, lines, polygons (one with a hole), nulls",
            "insert 5: extreme coordinates",
            "delete 2 (a vector)",
        ]),
        JavaTable("timestamp-ns", "id long, ts timestamp_ns, tstz timestamptz_ns, note string", [
            "insert 1-4: nine digits, before 1970, 1970-01-01T00:00:00.000000001, the last nanosecond of int64, nulls",
            "update 2 (a vector and the row again with its _row_id stored)",
            "insert 5",
        ]),
        JavaTable("defaults", "id long, name string, s struct<a int>; then d int and s.b string with defaults", [
            "insert 1-3",
            "delete 2 (a vector); then d int (initial-default 42) and s.b string (initial-default 'dflt') added, "
            "and d's write-default changed to 7",
            "insert 4 (d 7, s.b 'dflt') and 5 (nulls)",
            "update name of 3 (written before d and s.b existed: both images hold the defaults)",
            "delete 4 (a vector)",
        ]),
    ]


def all_tables():
    out = [compaction(), mor_update(), existing_first_row_id(), rewrite_manifests(), rewrite_manifests_112(), upgrade(), puffin_per_commit(),
           merge_partitioned(), copy_on_write(), rename_drop(), rollback(), wap_cherrypick(), variant(),
           variant_shredded()]
    for sc in out:
        sc.quirk = QUIRKS[sc.name]
    return out
