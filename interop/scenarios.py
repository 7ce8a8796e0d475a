"""The tables Spark writes: each scenario is a list of SQL steps.

In SQL, {t} is the table (catalog.namespace.name), {cat} the catalog and
{ident} namespace.name (for CALL). A step is (label, statements); a
statement given as a tuple is a list of alternatives: the first one Spark
accepts runs, and the ones it refused are reported. An alternative may be
a function (spark, scenario) that does the step through Iceberg's Java API
and returns what it did.
"""

from dataclasses import dataclass, field, replace

from spark_session import MOR_V3

NS = "interop"


@dataclass
class Scenario:
    name: str
    columns: str
    steps: list
    props: dict = field(default_factory=lambda: dict(MOR_V3))
    partitioned_by: str = ""
    catalog: str = "local"
    namespace: str = NS
    table_name: str = ""  # default: the scenario's name
    # What the oracle reads of each snapshot besides the lineage columns:
    # a variant column is read as to_json(v), the text its events must hold.
    select: str = "*"
    # The Iceberg version testdata/java's generator writes it with.
    iceberg: str = "1.11.0"
    # Spark settings for its session (the generator starts one per set).
    spark_conf: dict = field(default_factory=dict)

    @property
    def ident(self):
        return f"{self.namespace}.{self.table_name or self.name.replace('-', '_')}"

    @property
    def table(self):
        return f"{self.catalog}.{self.ident}"


def _values(rows):
    return ", ".join("(" + ", ".join(_lit(v) for v in r) + ")" for r in rows)


def _lit(v):
    if isinstance(v, str):
        return "'" + v.replace("'", "''") + "'"
    return repr(v)


def order(i, customer, status="new", amount=10.0):
    return (i, customer, status, float(amount))


def bookshop(name="bookshop", catalog="local"):
    return Scenario(
        name=name,
        catalog=catalog,
        columns="order_id bigint, customer string, status string, amount double",
        steps=[
            ("insert orders 1-5", [f"INSERT INTO {{t}} VALUES {_values([order(1, 'ada', amount=12.5), order(2, 'bob', amount=30), order(3, 'cy', amount=7.25), order(4, 'dee', amount=19.99), order(5, 'eve', amount=42)])}"]),
            ("delete order 2", ["DELETE FROM {t} WHERE order_id = 2"]),
            ("update order 1", ["UPDATE {t} SET status = 'shipped' WHERE order_id = 1"]),
            ("insert order 6, re-insert order 2", [f"INSERT INTO {{t}} VALUES {_values([order(6, 'fay', amount=5), order(2, 'bob', amount=31)])}"]),
            ("update orders 3 and 4", ["UPDATE {t} SET status = 'paid', amount = amount + 1 WHERE order_id IN (3, 4)"]),
            ("delete order 1 (a row an update rewrote)", ["DELETE FROM {t} WHERE order_id = 1"]),
            ("update order 3 again", ["UPDATE {t} SET status = 'shipped' WHERE order_id = 3"]),
            ("delete orders 5 and 6", ["DELETE FROM {t} WHERE order_id IN (5, 6)"]),
            ("insert orders 7 and 8", [f"INSERT INTO {{t}} VALUES {_values([order(7, 'gil', amount=3), order(8, 'hal', amount=8)])}"]),
        ],
    )


def merge():
    src1 = "(1, 'a', 0, 'del'), (2, 'b2', 20, 'upd'), (3, 'c2', 30, 'upd'), (7, 'g', 70, 'ins'), (8, 'h', 80, 'ins')"
    src2 = "(2, 'b3', 21, 'upd'), (7, 'g', 0, 'del'), (4, 'd2', 40, 'upd'), (9, 'i', 90, 'ins')"
    merge_sql = (
        "MERGE INTO {{t}} t USING (SELECT * FROM VALUES {src} AS s(id, name, qty, op)) s ON t.id = s.id "
        "WHEN MATCHED AND s.op = 'del' THEN DELETE "
        "WHEN MATCHED THEN UPDATE SET t.name = s.name, t.qty = s.qty, t.note = 'merged' "
        "WHEN NOT MATCHED THEN INSERT (id, name, qty, note) VALUES (s.id, s.name, s.qty, 'merged')"
    )
    return Scenario(
        name="merge",
        columns="id bigint, name string, qty int, note string",
        steps=[
            ("insert 1-6", ["INSERT INTO {t} VALUES " + ", ".join(f"({i}, '{c}', {i}, 'orig')" for i, c in zip(range(1, 7), "abcdef"))]),
            ("MERGE: delete 1, update 2 3, insert 7 8", [merge_sql.format(src=src1)]),
            ("MERGE: update 2 again, delete 7, update 4, insert 9, not matched by source delete 6",
             [(merge_sql.format(src=src2) + " WHEN NOT MATCHED BY SOURCE AND t.id = 6 THEN DELETE",
               merge_sql.format(src=src2))]),
        ],
    )


def partitioned():
    eu = [(1, "eu", 10.0), (2, "eu", 40.0), (3, "eu", 20.0), (4, "eu", 50.0)]
    us = [(5, "us", 15.0), (6, "us", 45.0), (7, "us", 25.0), (8, "us", 60.0)]
    return Scenario(
        name="partitioned",
        columns="id bigint, region string, amount double",
        partitioned_by="region",
        steps=[
            ("insert 4 rows in eu, 4 in us", [f"INSERT INTO {{t}} VALUES {_values(eu + us)}"]),
            ("delete amount > 30 (one row set in each of two files)", ["DELETE FROM {t} WHERE amount > 30"]),
            ("update 1 (eu) and 5 (us)", ["UPDATE {t} SET amount = amount * 2 WHERE id IN (1, 5)"]),
            ("delete the whole us partition", ["DELETE FROM {t} WHERE region = 'us'"]),
            ("insert 9 (us) and 10 (eu)", [f"INSERT INTO {{t}} VALUES {_values([(9, 'us', 9.0), (10, 'eu', 10.5)])}"]),
        ],
    )


def compaction():
    def ins(a, b):
        return "INSERT INTO {t} VALUES " + ", ".join(f"({i}, 'n{i}', {i * 10})" for i in range(a, b + 1))

    return Scenario(
        name="compaction",
        columns="id bigint, name string, v int",
        steps=[
            ("insert 1-3", [ins(1, 3)]),
            ("insert 4-6", [ins(4, 6)]),
            ("insert 7-9", [ins(7, 9)]),
            ("delete 2", ["DELETE FROM {t} WHERE id = 2"]),
            ("update 5", ["UPDATE {t} SET v = v + 1 WHERE id = 5"]),
            ("rewrite_data_files (compaction)",
             ["CALL {cat}.system.rewrite_data_files(table => '{ident}', options => map('rewrite-all', 'true'))"]),
            ("delete 4 inside the compacted file", ["DELETE FROM {t} WHERE id = 4"]),
            ("update 8 inside the compacted file", ["UPDATE {t} SET name = 'eight' WHERE id = 8"]),
            ("update 5 again (updated, then compacted)", ["UPDATE {t} SET v = v + 1 WHERE id = 5"]),
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
            ("copy-on-write delete 2 (a row an update rewrote)", ["DELETE FROM {t} WHERE id = 2"]),
        ],
    )


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
            ("v3: update 4", ["UPDATE {t} SET v = 40 WHERE id = 4"]),
            ("v3: update 1, delete 6 (next to 5's v2 position delete)", ["MERGE INTO {t} t USING (SELECT * FROM VALUES (1, 10), (6, -1) AS s(id, v)) s ON t.id = s.id "
                                           "WHEN MATCHED AND s.v < 0 THEN DELETE WHEN MATCHED THEN UPDATE SET t.v = s.v"]),
        ],
    )


def add_column_with_default(spark, sc):
    """ADD COLUMN tier DEFAULT 'basic' through Iceberg Java's API (UpdateSchema
    with a default Literal), for when Spark SQL refuses DEFAULT."""
    jvm = spark._jvm
    cat = spark._jsparkSession.sessionState().catalogManager().catalog(sc.catalog).icebergCatalog()
    tbl = cat.loadTable(jvm.org.apache.iceberg.catalog.TableIdentifier.parse(sc.ident))
    string = jvm.org.apache.iceberg.types.Types.StringType.get()
    default = jvm.org.apache.iceberg.expressions.Literal.of("basic")
    tbl.updateSchema().addColumn("tier", string, "customer tier", default).commit()
    spark.sql(f"REFRESH TABLE {sc.table}")
    return "Iceberg Java API: table.updateSchema().addColumn(\"tier\", StringType, doc, Literal.of(\"basic\")).commit()"


def column_default():
    return Scenario(
        name="defaults",
        columns="id bigint, name string",
        steps=[
            ("insert 1-3", ["INSERT INTO {t} VALUES (1, 'a'), (2, 'b'), (3, 'c')"]),
            ("add column tier DEFAULT 'basic'",
             [("ALTER TABLE {t} ADD COLUMN tier string DEFAULT 'basic'", add_column_with_default)]),
            ("update name of 1 (first commit with the new column)", ["UPDATE {t} SET name = 'A' WHERE id = 1"]),
            ("insert 4 without tier", ["INSERT INTO {t} (id, name) VALUES (4, 'd')"]),
            ("update tier of 2 (old file) and name of 4", ["UPDATE {t} SET tier = CASE WHEN id = 2 THEN 'gold' ELSE tier END, name = upper(name) WHERE id IN (2, 4)"]),
            ("delete 3 (old file, tier from initial-default)", ["DELETE FROM {t} WHERE id = 3"]),
        ],
    )


def types():
    """Every primitive type Spark writes to Iceberg (tinyint and smallint are
    stored as int): values at the edges of their encodings — negative and
    38-digit decimals, days and instants before 1970, float values a float32
    cannot hold exactly, empty and non-UTF-8 binary, NULLs."""
    cols = ("id bigint, b boolean, i int, s smallint, f float, d double, dec decimal(10, 2), "
            "big decimal(38, 10), dt date, ts timestamp, ntz timestamp_ntz, str string, bin binary")
    row1 = ("(1, true, 2147483647, CAST(-32768 AS SMALLINT), CAST(1.1 AS FLOAT), 0.1, 12345678.91BD, "
            "CAST('-1234567890123456789012345678.0123456789' AS DECIMAL(38, 10)), DATE '1969-07-20', "
            "TIMESTAMP '1969-12-31 23:59:59.999999', TIMESTAMP_NTZ '2024-02-29 13:45:30.123456', 'ada', X'00FF10')")
    row2 = ("(2, false, -2147483648, CAST(7 AS SMALLINT), CAST(-3.4028235E38 AS FLOAT), -1.7976931348623157E308, "
            "-0.01BD, CAST('0.0000000001' AS DECIMAL(38, 10)), DATE '2024-02-29', "
            "TIMESTAMP '2024-02-29 13:45:30.5', TIMESTAMP_NTZ '1900-01-01 00:00:00', 'ünïcødé ✓', X'')")
    row3 = "(3, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL)"
    return Scenario(
        name="types",
        columns=cols,
        steps=[
            ("insert 1-3 (3 all NULL)", [f"INSERT INTO {{t}} VALUES {row1}, {row2}, {row3}"]),
            ("update every column of 3", ["UPDATE {t} SET b = false, i = 42, s = 1, f = 2.5, d = 1e-300, "
                                          "dec = 0.5, big = 1, dt = DATE '2000-01-01', "
                                          "ts = TIMESTAMP '2000-01-01 00:00:00', ntz = TIMESTAMP_NTZ '2000-01-01 00:00:00.000001', "
                                          "str = '', bin = X'DEADBEEF' WHERE id = 3"]),
            ("set 1's values to NULL but the key", ["UPDATE {t} SET f = NULL, dec = NULL, ts = NULL, bin = NULL WHERE id = 1"]),
            ("delete 2, insert 4", ["DELETE FROM {t} WHERE id = 2",
                                    "INSERT INTO {t} VALUES (4, true, 0, CAST(0 AS SMALLINT), CAST(-0.0 AS FLOAT), -0.0, "
                                    "0.00BD, CAST(0 AS DECIMAL(38, 10)), DATE '1970-01-01', TIMESTAMP '1970-01-01 00:00:00', "
                                    "TIMESTAMP_NTZ '1970-01-01 00:00:00', 'x', X'00')"]),
        ],
    )


def bulk():
    """Thousands of events per commit: the kafka e2e test streams this one."""
    return Scenario(
        name="bulk",
        columns="id bigint, name string, v int",
        steps=[
            ("insert 3000 rows", ["INSERT INTO {t} SELECT id, concat('n', id), CAST(id % 97 AS int) FROM range(0, 3000)"]),
            ("update every third row", ["UPDATE {t} SET v = v + 1000 WHERE id % 3 = 0"]),
            ("delete ids 1000-1499 (runs in the vectors)", ["DELETE FROM {t} WHERE id BETWEEN 1000 AND 1499"]),
            ("delete every fifth row", ["DELETE FROM {t} WHERE id % 5 = 1"]),
        ],
    )


# Object storage (issue 8): a representative subset written through S3FileIO
# to the S3 server (moto), each scenario once: a partitioned table and
# compaction in the JDBC catalog ("s3"), the bookshop's deletes and updates
# in the REST catalog ("rests3"), MERGE in Glue ("glue"); see stores.py.
# The REST one is shop.orders, the table the docker-compose config
# (examples/icecdc.compose.yaml, tables shop.*) follows: run.sh runs that
# config against it. Each one costs the stage some 10-20 s; a scenario is
# added here by name.
COMPOSE_TABLE = ("shop", "orders")


def s3_scenarios(with_rest_s3):
    out = [replace(make(), name=make().name + "-s3", catalog="s3") for make in (partitioned, compaction)]
    if with_rest_s3:
        out.append(replace(bookshop(), name="bookshop-rest-s3", catalog="rests3",
                           namespace=COMPOSE_TABLE[0], table_name=COMPOSE_TABLE[1]))
    out.append(replace(merge(), name="merge-glue", catalog="glue"))
    return out


def all_scenarios(with_rest, with_s3=False, with_rest_s3=False):
    out = [bookshop(), merge(), partitioned(), compaction(), copy_on_write(), upgrade(), column_default(), types(), bulk()]
    if with_rest:
        out.append(bookshop(name="bookshop-rest", catalog="rest"))
    if with_s3:
        out += s3_scenarios(with_rest_s3)
    return out
