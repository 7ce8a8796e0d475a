package shape

import (
	"bufio"
	"encoding/json"
	"os"
	"strings"
	"testing"

	"github.com/apache/iceberg-go"

	"github.com/icecdc/icecdc/cdc"
	"github.com/icecdc/icecdc/values"
)

// maskVector is a line of testdata/debezium-masks.jsonl: what Debezium's
// own MaskStrings and TruncateColumn (debezium-connector-common
// 3.6.0.Final, run by interop/maven/masks/MaskVectors.java) made of input.
type maskVector struct {
	Option string  `json:"option"`
	Input  *string `json:"input"`
	Repeat int     `json:"repeat"`
	Output *string `json:"output"`
}

// TestMasksEqualDebeziums holds icecdc's masks, hashes and truncation to
// Debezium's output for the same values, byte for byte.
func TestMasksEqualDebeziums(t *testing.T) {
	f, err := os.Open("testdata/debezium-masks.jsonl")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	sc := iceberg.NewSchema(0, iceberg.NestedField{ID: 1, Name: "c", Type: iceberg.PrimitiveTypes.String})
	sc1 := bufio.NewScanner(f)
	sc1.Buffer(nil, 1<<20)
	n := 0
	for sc1.Scan() {
		var v maskVector
		if err := json.Unmarshal(sc1.Bytes(), &v); err != nil {
			t.Fatal(err)
		}
		sh, err := Parse(map[string]string{v.Option: `ns\.t\.c`})
		if err != nil {
			t.Fatalf("%s: %v", v.Option, err)
		}
		s, err := sh.ForTable("ns.t", sc, nil, nil)
		if err != nil {
			t.Fatal(err)
		}
		var in any
		if v.Input != nil {
			in = strings.Repeat(*v.Input, max(v.Repeat, 1))
		}
		c := &cdc.Commit{Table: cdc.TableInfo{Schema: sc}}
		_, evs, err := s.Apply(c, []cdc.Event{{Op: cdc.OpCreate, After: values.Row{in}}})
		if err != nil {
			t.Fatal(err)
		}
		got := evs[0].After[0]
		switch {
		case v.Output == nil && got != nil:
			t.Errorf("%s of %q: got %q, Debezium wrote null", v.Option, short(v.Input), got)
		case v.Output != nil && got != *v.Output:
			t.Errorf("%s of %q: got %v, Debezium wrote %q", v.Option, short(v.Input), got, *v.Output)
		}
		n++
	}
	if err := sc1.Err(); err != nil {
		t.Fatal(err)
	}
	if n < 100 {
		t.Fatalf("only %d vectors read", n)
	}
}

func short(s *string) string {
	if s == nil {
		return "<null>"
	}
	return *s
}

func TestParseRefuses(t *testing.T) {
	for opts, want := range map[[2]string]string{
		{"column.mask.hash.SHA-256.with.salt.", "ns.t.c"}:       "column.mask.hash.SHA-256.with.salt.…: empty salt",
		{"column.mask.hash.SHA-999.with.salt.pepper", "ns.t.c"}: `column.mask.hash.SHA-999.with.salt.…: unknown hash algorithm "SHA-999"`,
		{"column.mask.with.0.chars", "ns.t.c"}:                  "column.mask.with.0.chars: the number of characters must be 1 to 65536",
		{"column.mask.with.3.chars", ""}:                        "column.mask.with.3.chars: empty list of columns",
		{"column.truncate.to.3.chars", "ns.t.(c"}:               `column.truncate.to.3.chars: pattern "ns.t.(c": missing closing )`,
		{"column.mask.frobnicate", "x"}:                         "column.mask.frobnicate: unknown option",
		{"skipped.operations", "d,x"}:                           `skipped.operations: "x": want`,
		{"skipped.operations", "none,d"}:                        "skipped.operations: 'none' cannot be listed with other operations",
	} {
		_, err := Parse(map[string]string{opts[0]: opts[1]})
		if err == nil || !strings.HasPrefix(err.Error(), want) || strings.Contains(err.Error(), "\n") {
			t.Errorf("%s: %s: got %v, want one line starting %q", opts[0], opts[1], err, want)
		}
		if err != nil && strings.Contains(err.Error(), "pepper") {
			t.Errorf("the error repeats the salt: %v", err)
		}
	}
	if _, err := Parse(map[string]string{"column.include.list": "a.b.c", "column.exclude.list": "a.b.d"}); err == nil {
		t.Error("include and exclude lists together: no error")
	}
}
