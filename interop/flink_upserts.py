"""Flink writes upserts: format-v3 Iceberg tables with identifier fields in
upsert mode ('write.upsert.enabled'), the way Flink CDC pipelines write
them: every insert or update is an equality delete of its key plus the new
row, a delete is an equality delete, and a key written twice within one
commit gets a position delete (a deletion vector in v3) of its first row.

Runs under PyFlink (its own venv: apache-flink pins a pyarrow the Spark
side cannot use) with the Iceberg Flink runtime, Hadoop's client and the
SQLite driver in pyflink/lib (run.sh puts them there):

  python flink_upserts.py write --catalog-db DB --warehouse DIR

creates the tables in a JDBC catalog named "flink" on the SQLite file DB
(the catalog Spark reads them through; see run_scenarios.py) and runs one
streaming job per step on a local mini-cluster, checkpointing every second;
each job's final checkpoint is one commit to each table it touches. It
prints one line per job and, on failure, Flink's own error.

The steps are data (STEPS) so that the oracle side (run_scenarios.py)
knows the tables' names and keys without importing PyFlink.
"""

import argparse
import sys
import time

NAMESPACE = "interop_flink"

# table name -> (columns as Flink DDL, key columns, partition column or None)
TABLES = {
    "upsert_single": ("id BIGINT NOT NULL, name STRING, qty INT", ["id"], None),
    "upsert_multi": ("region STRING NOT NULL, id BIGINT NOT NULL, name STRING, amount DOUBLE",
                     ["region", "id"], "region"),
}

# A change: (kind, row) with kind +I (insert), +U (upsert: the row replaces
# the one with its key), -D (delete by key). -U is not needed in upsert mode
# and Flink's Iceberg sink ignores it there.
I, U, D = "+I", "+U", "-D"

# Each step is one job, hence one commit per table it writes.
STEPS = [
    ("insert 6 keys", {
        "upsert_single": [(I, (i, f"n{i}", i)) for i in range(1, 7)],
        "upsert_multi": [(I, (r, i, f"{r}{i}", float(i))) for r in ("eu", "us") for i in range(1, 4)],
    }),
    ("upsert 2 keys, insert a new key, delete a key", {
        "upsert_single": [(U, (2, "n2b", 20)), (U, (3, "n3b", 30)), (I, (7, "n7", 7)), (D, (4, "n4", 4))],
        "upsert_multi": [(U, ("eu", 2, "eu2b", 20.0)), (U, ("us", 2, "us2b", 21.0)), (I, ("us", 7, "us7", 7.0)),
                         (D, ("eu", 3, "eu3", 3.0))],
    }),
    ("insert a key and upsert it in the same commit, upsert a key again, delete a key", {
        "upsert_single": [(I, (8, "n8", 8)), (U, (8, "n8b", 80)), (U, (2, "n2c", 200)), (D, (5, "n5", 5))],
        "upsert_multi": [(I, ("eu", 8, "eu8", 8.0)), (U, ("eu", 8, "eu8b", 80.0)), (U, ("eu", 2, "eu2c", 200.0)),
                         (D, ("us", 1, "us1", 1.0))],
    }),
    ("re-insert a deleted key, upsert a key, delete keys", {
        "upsert_single": [(I, (4, "n4b", 40)), (U, (1, "n1b", 10)), (D, (7, "n7", 7)), (D, (8, "n8b", 80))],
        "upsert_multi": [(I, ("eu", 3, "eu3b", 30.0)), (U, ("us", 3, "us3b", 31.0)), (D, ("us", 7, "us7", 7.0))],
    }),
    ("upsert a key twice, insert a key and delete it, delete a key and insert it again, all in one commit", {
        "upsert_single": [(U, (6, "n6b", 60)), (U, (6, "n6c", None)), (I, (9, "n9", 9)), (D, (9, "n9", 9)),
                          (D, (3, "n3b", 30)), (I, (3, "n3c", 33))],
        "upsert_multi": [(U, ("us", 2, "us2c", 22.0)), (U, ("us", 2, None, 23.0)), (I, ("eu", 9, "eu9", 9.0)),
                         (D, ("eu", 9, "eu9", 9.0)), (D, ("eu", 1, "eu1", 1.0)), (I, ("eu", 1, "eu1b", 10.0))],
    }),
]


def catalog_ddl(catalog_db, warehouse):
    return (
        "CREATE CATALOG flink WITH ("
        "'type'='iceberg', 'catalog-impl'='org.apache.iceberg.jdbc.JdbcCatalog', "
        f"'uri'='jdbc:sqlite:{catalog_db}', 'warehouse'='file:{warehouse}', "
        "'jdbc.schema-version'='V1')"
    )


def table_ddl(name):
    cols, key, part = TABLES[name]
    partition = f" PARTITIONED BY ({part})" if part else ""
    return (
        f"CREATE TABLE flink.{NAMESPACE}.{name} ({cols}, PRIMARY KEY ({', '.join(key)}) NOT ENFORCED){partition} "
        "WITH ('format-version'='3', 'write.upsert.enabled'='true', 'write.format.default'='parquet')"
    )


def write(args):
    from pyflink.common import Row, RowKind
    from pyflink.common.typeinfo import Types
    from pyflink.datastream import StreamExecutionEnvironment
    from pyflink.table import DataTypes, Schema, StreamTableEnvironment
    from pyflink.table.changelog_mode import ChangelogMode

    kinds = {I: RowKind.INSERT, U: RowKind.UPDATE_AFTER, D: RowKind.DELETE}
    env = StreamExecutionEnvironment.get_execution_environment()
    env.set_parallelism(1)
    env.enable_checkpointing(1000)
    tenv = StreamTableEnvironment.create(env)
    # Each job starts with empty state: the upsert materializer the planner
    # puts before a keyed sink would drop a delete of a key it has not seen
    # in this job. The Iceberg sink's upsert mode does what it would.
    tenv.get_config().set("table.exec.sink.upsert-materialize", "NONE")
    tenv.execute_sql(catalog_ddl(args.catalog_db, args.warehouse)).wait()
    tenv.execute_sql(f"CREATE DATABASE IF NOT EXISTS flink.{NAMESPACE}").wait()
    for name in TABLES:
        tenv.execute_sql(f"DROP TABLE IF EXISTS flink.{NAMESPACE}.{name}").wait()
        tenv.execute_sql(table_ddl(name)).wait()

    def flink_type(ddl_type):
        return {"BIGINT": (Types.LONG(), DataTypes.BIGINT()), "STRING": (Types.STRING(), DataTypes.STRING()),
                "INT": (Types.INT(), DataTypes.INT()), "DOUBLE": (Types.DOUBLE(), DataTypes.DOUBLE())}[ddl_type]

    for n, (label, changes) in enumerate(STEPS, 1):
        t0 = time.monotonic()
        stmts = tenv.create_statement_set()
        for name, rows in changes.items():
            cols = [c.split() for c in TABLES[name][0].split(", ")]
            names = [c[0] for c in cols]
            types = [flink_type(c[1]) for c in cols]
            elems = []
            for kind, values in rows:
                r = Row(*values)
                r.set_row_kind(kinds[kind])
                elems.append(r)
            ds = env.from_collection(elems, type_info=Types.ROW_NAMED(names, [t[0] for t in types]))
            schema = Schema.new_builder()
            for cname, t in zip(names, types):
                schema = schema.column(cname, t[1])
            view = tenv.from_changelog_stream(ds, schema.build(), ChangelogMode.all())
            stmts.add_insert(f"flink.{NAMESPACE}.{name}", view)
        stmts.execute().wait()
        print(f"flink: job {n} ({label}): {sum(len(r) for r in changes.values())} changes to "
              f"{', '.join(changes)} in {time.monotonic() - t0:.1f}s", flush=True)
    return 0


def main():
    ap = argparse.ArgumentParser()
    sub = ap.add_subparsers(dest="cmd", required=True)
    w = sub.add_parser("write")
    w.add_argument("--catalog-db", required=True)
    w.add_argument("--warehouse", required=True)
    args = ap.parse_args()
    return write(args)


if __name__ == "__main__":
    sys.exit(main())
