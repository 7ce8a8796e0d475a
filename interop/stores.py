"""Object storage and Glue for the interop stage (issue 8): one moto server.

run.sh starts `python -m moto.server` on loopback; it serves S3 and the Glue
API on one port. Three catalogs keep their tables on it, in the bucket
`warehouse` (the bucket docker-compose.yml creates):

  s3     the JDBC catalog (SQLite file) with its warehouse on s3://warehouse/jdbc
  rests3 the Iceberg REST catalog server with its warehouse on
         s3://warehouse/rest; it vends the S3 keys in loadTable's config
         (include-credentials), so readers get only the endpoint
  glue   Glue (moto) with its warehouse on s3://warehouse/glue

Every reader gets the endpoint and keys as catalog properties; the
environment carries no AWS variable to icecdc (see clean_env), so a read
that works proves the properties (or the REST catalog's vended keys) are
used.
"""

import os

BUCKET = "warehouse"
REGION = "us-east-1"
ACCESS_KEY = "icecdc-interop"
SECRET_KEY = "icecdc-interop-secret"
S3_CATALOGS = ("s3", "rests3", "glue")

# What iceberg-aws's S3FileIO needs (Spark, the REST catalog server).
S3FILEIO = "org.apache.iceberg.aws.s3.S3FileIO"


def java_s3_props(endpoint, keys=True):
    p = {
        "io-impl": S3FILEIO,
        "s3.endpoint": endpoint,
        "s3.path-style-access": "true",
        "client.region": REGION,
    }
    if keys:
        p["s3.access-key-id"] = ACCESS_KEY
        p["s3.secret-access-key"] = SECRET_KEY
    return p


WAREHOUSE_DIRS = {"s3": "jdbc", "rests3": "rest", "glue": "glue"}


def warehouse(catalog):
    return f"s3://{BUCKET}/{WAREHOUSE_DIRS[catalog]}"


def s3_props(endpoint, keys=True):
    """S3 file IO properties as iceberg-go and PyIceberg name them."""
    p = {"s3.endpoint": endpoint, "s3.region": REGION, "s3.path-style-access": "true"}
    if keys:
        p["s3.access-key-id"] = ACCESS_KEY
        p["s3.secret-access-key"] = SECRET_KEY
    return p


def glue_props(endpoint):
    """Glue client properties as iceberg-go and PyIceberg name them."""
    return {
        "glue.endpoint": endpoint,
        "glue.region": REGION,
        "glue.access-key-id": ACCESS_KEY,
        "glue.secret-access-key": SECRET_KEY,
    }


def spark_conf(endpoint, s3_catalog_db, rest_s3_uri):
    """Spark settings for the s3, rests3 and glue catalogs."""
    conf = {}

    def catalog(name, props):
        conf[f"spark.sql.catalog.{name}"] = "org.apache.iceberg.spark.SparkCatalog"
        for k, v in props.items():
            conf[f"spark.sql.catalog.{name}.{k}"] = v

    catalog("s3", {"type": "jdbc", "uri": f"jdbc:sqlite:{s3_catalog_db}", "jdbc.schema-version": "V1", "warehouse": warehouse("s3"),
                   **java_s3_props(endpoint)})
    if rest_s3_uri:
        catalog("rests3", {"type": "rest", "uri": rest_s3_uri, **java_s3_props(endpoint)})
    # Glue's client takes its keys from the AWS SDK's default chain: the
    # driver's system properties aws.accessKeyId/aws.secretAccessKey (see
    # java_options), not the environment icecdc would inherit.
    catalog("glue", {"type": "glue", "warehouse": warehouse("glue"), "glue.endpoint": endpoint,
                     **java_s3_props(endpoint)})
    return conf


def java_options():
    return f"-Daws.accessKeyId={ACCESS_KEY} -Daws.secretAccessKey={SECRET_KEY} -Daws.region={REGION}"


def icecdc_args(catalog, ident, endpoint, s3_catalog_db=None, rest_s3_uri=None):
    """`icecdc changes` flags for a table of an S3 catalog."""
    if catalog == "s3":
        args = ["--catalog-type", "sql", "--catalog-name", "s3", "--catalog-uri", f"file:{s3_catalog_db}",
                "--warehouse", warehouse("s3")]
        props = s3_props(endpoint)
    elif catalog == "rests3":
        args = ["--catalog-type", "rest", "--catalog-uri", rest_s3_uri]
        props = s3_props(endpoint, keys=False)  # the keys are vended by the catalog
    elif catalog == "glue":
        args = ["--catalog-type", "glue", "--warehouse", warehouse("glue")]
        props = {**glue_props(endpoint), **s3_props(endpoint)}
    else:
        raise ValueError(f"not an S3 catalog: {catalog}")
    for k, v in props.items():
        args += ["--catalog-prop", f"{k}={v}"]
    return args + ["--table", ident]


def pyiceberg_catalog(catalog, endpoint, s3_catalog_db=None, rest_s3_uri=None):
    if catalog == "s3":
        from pyiceberg.catalog.sql import SqlCatalog
        return SqlCatalog("s3", uri=f"sqlite:///{s3_catalog_db}", warehouse=warehouse("s3"), **s3_props(endpoint))
    if catalog == "rests3":
        from pyiceberg.catalog.rest import RestCatalog
        return RestCatalog("rests3", uri=rest_s3_uri, **s3_props(endpoint, keys=False))
    if catalog == "glue":
        from pyiceberg.catalog.glue import GlueCatalog
        return GlueCatalog("glue", **glue_props(endpoint), **s3_props(endpoint))
    raise ValueError(f"not an S3 catalog: {catalog}")


def clean_env():
    """The environment without AWS settings: icecdc must get everything
    from catalog properties or the REST catalog."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("AWS_")}
    env["AWS_EC2_METADATA_DISABLED"] = "true"  # no instance-metadata probe on loopback-only machines
    return env


def create_bucket(endpoint):
    import boto3
    s3 = boto3.client("s3", endpoint_url=endpoint, region_name=REGION,
                      aws_access_key_id=ACCESS_KEY, aws_secret_access_key=SECRET_KEY)
    s3.create_bucket(Bucket=BUCKET)


def rest_server_env(endpoint):
    """The environment of the REST catalog server whose warehouse is on S3
    (RESTCatalogServer reads CATALOG_* as catalog properties: __ is -, _ is .).
    docker-compose.yml's rest service is set up the same way."""
    props = {"warehouse": warehouse("rests3"), **java_s3_props(endpoint), "include-credentials": "true"}
    return [f"CATALOG_{k.replace('-', '__').replace('.', '_').upper()}={v}" for k, v in props.items()]


if __name__ == "__main__":
    import sys
    if len(sys.argv) == 3 and sys.argv[1] == "create-bucket":
        create_bucket(sys.argv[2])
        print(f"bucket s3://{BUCKET} created at {sys.argv[2]}")
    elif len(sys.argv) == 3 and sys.argv[1] == "rest-server-env":
        print("\n".join(rest_server_env(sys.argv[2])))
    else:
        print("usage: stores.py create-bucket ENDPOINT | rest-server-env ENDPOINT", file=sys.stderr)
        sys.exit(2)
