package source

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/apache/iceberg-go/table"

	"github.com/icecdc/icecdc/internal/scenario"
)

func TestFindBadJSON(t *testing.T) {
	tests := []struct{ doc, want string }{
		{"{\n  \"format-version\": 3,\n  \"last-sequence-number\": 1e999,\n  \"x\": 1}", "last-sequence-number at line 3, column 27: 1e999 is not a 64-bit integer"},
		{"{\"snapshots\": [{\"snapshot-id\": 1}, {\"snapshot-id\": 2,\n \"sequence-number\": \"abc\"}]}", `snapshots[1].sequence-number at line 2, column 21: the string "abc" is not an integer`},
		{"{\"a\": {\"b\": [1, 2]},\n \"next-row-id\": 12.5}", "next-row-id at line 2, column 17: 12.5 is not a 64-bit integer"},
		{"{\"refs\": {\"main\": {\"snapshot-id\": 99999999999999999999}}}", "refs.main.snapshot-id at line 1, column 35: 99999999999999999999 is not a 64-bit integer"},
		{"{\"snapshots\": [{\"timestamp-ms\": -,\n \"x\": 1}]}", "snapshots[0].timestamp-ms at line 1, column 33: invalid character ',' in numeric literal"},
		{"{\"format-version\": 3,\n \"last-sequence-number\": 12", "last-sequence-number at line 2, column 28: the file ends there (truncated)"},
		{"{\"snapshots\": [{\"first-row-id\": 1", "snapshots[0].first-row-id at line 1, column 34: the file ends there (truncated)"},
		{"{\"ok\": [1, {\"id\": 3}], \"parent-snapshot-id\": null, \"name\": \"x\"}", ""},
	}
	for _, tc := range tests {
		if got := findBadJSON(strings.NewReader(tc.doc)); got != tc.want {
			t.Errorf("findBadJSON(%q)\n got %q\nwant %q", tc.doc, got, tc.want)
		}
	}
}

// A metadata file with a bad number names the file, the field and its
// place, instead of encoding/json's "unexpected end of JSON input".
func TestOpenMetadataWithBadNumber(t *testing.T) {
	ctx := context.Background()
	env, err := scenario.NewEnv(ctx, t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	defer env.Close()
	tbl, err := env.CreateTable(ctx, table.Identifier{"shop", "orders"}, scenario.OrdersSchema(), nil, 3, nil)
	if err != nil {
		t.Fatal(err)
	}
	for i := int64(1); i <= 2; i++ {
		if tbl, err = scenario.Append(ctx, tbl, []map[string]any{scenario.Order(i, "a", "new", 1)}); err != nil {
			t.Fatal(err)
		}
	}
	raw, err := os.ReadFile(strings.TrimPrefix(tbl.MetadataLocation(), "file://"))
	if err != nil {
		t.Fatal(err)
	}
	doc := string(raw)
	// replace swaps the value of the last occurrence of field.
	replace := func(field, value string) string {
		k := strings.LastIndex(doc, `"`+field+`":`)
		if k < 0 {
			t.Fatalf("no %s in %s", field, doc)
		}
		v := k + len(field) + 3
		for doc[v] == ' ' {
			v++
		}
		end := v
		for end < len(doc) && strings.IndexByte("-0123456789", doc[end]) >= 0 {
			end++
		}
		return doc[:v] + value + doc[end:]
	}
	tests := []struct{ name, doc, want string }{
		{"truncated", doc[:strings.Index(doc, `"last-sequence-number":`)+len(`"last-sequence-number": 1`)], "last-sequence-number at line 1"},
		{"overflow", replace("sequence-number", "1e999"), "snapshots[1].sequence-number at line 1"},
		{"string", replace("first-row-id", `"abc"`), `snapshots[1].first-row-id at line 1`},
		{"fraction", replace("next-row-id", "2.5"), "next-row-id at line 1"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			p := filepath.Join(t.TempDir(), "00003-x.metadata.json")
			if err := os.WriteFile(p, []byte(tc.doc), 0o644); err != nil {
				t.Fatal(err)
			}
			_, err := Open(ctx, Options{MetadataPath: p})
			if err == nil || !strings.Contains(err.Error(), p) || !strings.Contains(err.Error(), tc.want) || strings.Contains(err.Error(), "unexpected end of JSON") {
				t.Fatalf("Open: %v\nwant the file and %q named", err, tc.want)
			}
			if !errors.Is(err, table.ErrInvalidMetadata) {
				t.Errorf("Open: %v does not wrap table.ErrInvalidMetadata", err)
			}
		})
	}
}
