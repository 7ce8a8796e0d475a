package main

// TEMPORARY (issue 8 part 3, until the object-store IO and catalogs are
// linked in properly on main): the S3 file IO and the Glue catalog, so that
// the interop stage's S3 and Glue scenarios can run. Drop this file when
// main links them.
import (
	_ "github.com/apache/iceberg-go/catalog/glue"
	_ "github.com/apache/iceberg-go/io/gocloud/s3"
)
