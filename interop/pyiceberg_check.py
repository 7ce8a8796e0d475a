"""PyIceberg as a second reader: the live row count of every snapshot."""

import logging


def load_table(catalog, ident, catalog_db=None, warehouse=None, rest_uri=None):
    logging.getLogger("pyiceberg").setLevel(logging.ERROR)
    if catalog == "rest":
        from pyiceberg.catalog.rest import RestCatalog
        cat = RestCatalog("rest", uri=rest_uri)
    else:
        from pyiceberg.catalog.sql import SqlCatalog
        cat = SqlCatalog(catalog, uri=f"sqlite:///{catalog_db}", warehouse=f"file://{warehouse}")
    return cat.load_table(ident)


def row_counts(table, snapshot_ids):
    """{snapshot id: count, or the error text when PyIceberg cannot read it}."""
    out = {}
    for sid in snapshot_ids:
        try:
            out[sid] = table.scan(snapshot_id=sid).to_arrow().num_rows
        except Exception as err:
            out[sid] = f"{type(err).__name__}: {err}"
    return out
