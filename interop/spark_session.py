"""The Spark session the scenarios write with: Spark 4.1 + Iceberg 1.11, or
the Iceberg version ICECDC_ICEBERG_VERSION names (1.12.0: what users run next;
testdata/java's variant tables are written with it).

Iceberg catalogs:
  local  JDBC catalog on a SQLite file (what icecdc's sql catalog reads:
         iceberg-go's catalog/sql, table iceberg_tables, catalog_name 'local')
  rest   the Iceberg REST catalog server started by run.sh (when it runs)
  s3, rests3, glue
         tables on the S3 server run.sh starts (moto), written through
         iceberg-aws's S3FileIO (see stores.py; when it runs)
  flink  JDBC catalog on another SQLite file: the tables Flink writes in
         upsert mode (flink_upserts.py), read here as the oracle
"""

import os
import time

ICEBERG_VERSION = os.environ.get("ICECDC_ICEBERG_VERSION") or "1.11.0"
ICEBERG_RUNTIME = f"org.apache.iceberg:iceberg-spark-runtime-4.1_2.13:{ICEBERG_VERSION}"
SQLITE_JDBC = "org.xerial:sqlite-jdbc:3.50.3.0"
AWS_BUNDLE = f"org.apache.iceberg:iceberg-aws-bundle:{ICEBERG_VERSION}"  # the AWS SDK S3FileIO and GlueCatalog use

# Every v3 scenario table is merge-on-read unless it says otherwise.
MOR_V3 = {
    "format-version": "3",
    "write.delete.mode": "merge-on-read",
    "write.update.mode": "merge-on-read",
    "write.merge.mode": "merge-on-read",
}


def start(catalog_db, warehouse, ivy_dir, rest_uri=None, s3_endpoint=None, s3_catalog_db=None, rest_s3_uri=None,
          flink_catalog_db=None, flink_warehouse=None, conf=None):
    """Start a local Spark session; returns (spark, seconds it took)."""
    from pyspark.sql import SparkSession

    t0 = time.monotonic()
    packages = [ICEBERG_RUNTIME, SQLITE_JDBC] + ([AWS_BUNDLE] if s3_endpoint else [])
    b = (
        SparkSession.builder.master("local[2]")
        .appName("icecdc-interop")
        .config("spark.jars.packages", ",".join(packages))
        .config("spark.jars.ivy", ivy_dir)
        .config("spark.driver.memory", "2g")
        .config("spark.ui.enabled", "false")
        .config("spark.ui.showConsoleProgress", "false")
        .config("spark.sql.shuffle.partitions", "2")
        .config("spark.sql.session.timeZone", "UTC")
        .config("spark.sql.extensions",
                "org.apache.iceberg.spark.extensions.IcebergSparkSessionExtensions")
        .config("spark.sql.catalog.local", "org.apache.iceberg.spark.SparkCatalog")
        .config("spark.sql.catalog.local.type", "jdbc")
        .config("spark.sql.catalog.local.uri", f"jdbc:sqlite:{catalog_db}")
        .config("spark.sql.catalog.local.warehouse", f"file:{warehouse}")
    )
    if rest_uri:
        b = (
            b.config("spark.sql.catalog.rest", "org.apache.iceberg.spark.SparkCatalog")
            .config("spark.sql.catalog.rest.type", "rest")
            .config("spark.sql.catalog.rest.uri", rest_uri)
        )
    if flink_catalog_db:
        b = (
            b.config("spark.sql.catalog.flink", "org.apache.iceberg.spark.SparkCatalog")
            .config("spark.sql.catalog.flink.type", "jdbc")
            .config("spark.sql.catalog.flink.uri", f"jdbc:sqlite:{flink_catalog_db}")
            .config("spark.sql.catalog.flink.warehouse", f"file:{flink_warehouse}")
        )
    if s3_endpoint:
        import stores
        for k, v in stores.spark_conf(s3_endpoint, s3_catalog_db, rest_s3_uri).items():
            b = b.config(k, v)
        b = b.config("spark.driver.extraJavaOptions", stores.java_options())
    for k, v in (conf or {}).items():
        b = b.config(k, v)
    os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")
    spark = b.getOrCreate()
    spark.sparkContext.setLogLevel("ERROR")
    return spark, time.monotonic() - t0


def tblproperties(props):
    return ", ".join(f"'{k}'='{v}'" for k, v in props.items())
