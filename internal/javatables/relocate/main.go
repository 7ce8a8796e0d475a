// Command relocate copies an Iceberg table, rewriting its location in the
// metadata, manifest lists, manifests, Puffin footers and position-delete
// files (internal/javatables.Relocate). interop/generate_testdata.sh uses it
// to store the tables Spark writes under testdata/java/ with the
// placeholder location; it prints what it wrote as JSON.
//
//	relocate -metadata DIR/metadata/v3.metadata.json -from file:/DIR -to file:/ICECDC_TESTDATA -out testdata/java/NAME
package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"strings"

	"github.com/icecdc/icecdc/internal/javatables"
)

func main() {
	metadata := flag.String("metadata", "", "local path of the table's current metadata.json")
	from := flag.String("from", "", "the table location the metadata names (file:/...)")
	src := flag.String("src", "", "local directory of -from (default: its path)")
	to := flag.String("to", javatables.Placeholder, "the new table location")
	out := flag.String("out", "", "directory to write the relocated table to (must not exist)")
	flag.Parse()
	if *metadata == "" || *from == "" || *out == "" {
		flag.Usage()
		os.Exit(2)
	}
	if *src == "" {
		*src = strings.TrimPrefix(strings.TrimPrefix(*from, "file://"), "file:")
	}
	if _, err := os.Stat(*out); err == nil {
		fmt.Fprintf(os.Stderr, "relocate: %s exists\n", *out)
		os.Exit(1)
	}
	res, err := javatables.Relocate(context.Background(), javatables.Relocation{
		Metadata: *metadata, SrcDir: *src, From: *from, To: *to, OutDir: *out})
	if err != nil {
		os.RemoveAll(*out)
		fmt.Fprintln(os.Stderr, "relocate:", err)
		os.Exit(1)
	}
	b, _ := json.Marshal(res)
	fmt.Println(string(b))
}
