package source

import (
	"errors"
	"math"
	"strings"
	"testing"

	"github.com/apache/iceberg-go"
)

func TestAllowedLocations(t *testing.T) {
	for _, tc := range []struct {
		prefix, path string
		allowed      bool
	}{
		{"file:///wh/tbl", "file:///wh/tbl/data/x.parquet", true},
		{"file:///wh/tbl", "file:/wh/tbl/data/x.parquet", true},
		{"file:///wh/tbl", "/wh/tbl/data/x.parquet", true},
		{"file:/wh/tbl", "file:///wh/tbl/data/x.parquet", true},
		{"/wh/tbl/", "file://localhost/wh/tbl/x", true},
		{"file:///wh/tbl", "file:///wh/tbl", true},
		{"file:///wh/tbl", "file:///wh/tbl2/x", false},        // sibling, not inside
		{"file:///wh/tbl", "file:///wh/tbl/../tbl2/x", false}, // climbs out
		{"file:///wh/tbl", "file:///wh/tbl/../../etc/passwd", false},
		{"file:///wh/tbl", "file:///wh/tbl/%2e%2e/%2e%2e/etc/passwd", false}, // the local IO unescapes
		{"file:///wh/tbl", "file:///wh/tbl/a/../b/x", true},
		{"file:///wh/tbl", "file://otherhost/wh/tbl/x", false},
		{"file:///wh/tbl", "file:///etc/passwd", false},
		{"file:///wh/tbl", "s3://wh/tbl/x", false},
		{"s3://bucket/wh/tbl", "s3a://bucket/wh/tbl/x", true},
		{"s3a://bucket/wh/tbl", "s3n://bucket/wh/tbl/x", true},
		{"S3://bucket/wh/tbl", "s3://bucket/wh/tbl/x", true},
		{"s3://bucket/wh/tbl", "s3://other/wh/tbl/x", false},
		{"s3://bucket/wh/tbl", "s3://bucket/wh/tbl2/x", false},
		{"s3://bucket/wh/tbl", "s3://bucket/wh/tbl/../secret", false},
		{"s3://bucket/", "s3://bucket/anything", true},
		{"/", "/etc/passwd", true},
		{"gs://b/t", "gs://b/t/x", true},
	} {
		l := &locations{describe: "test"}
		n, err := normalise(tc.prefix)
		if err != nil {
			t.Fatalf("normalise(%q): %v", tc.prefix, err)
		}
		l.prefixes = []string{n}
		err = l.check(tc.path)
		if got := err == nil; got != tc.allowed {
			t.Errorf("%s under %s: allowed %v, want %v (%v)", tc.path, tc.prefix, got, tc.allowed, err)
		}
		if err != nil && !errors.Is(err, ErrOutsideLocations) {
			t.Errorf("%s: %v is not ErrOutsideLocations", tc.path, err)
		}
	}
}

// fakeFile is a data file with numbers iceberg-go's builder refuses.
type fakeFile struct {
	iceberg.DataFile
	content       iceberg.ManifestEntryContent
	count, size   int64
	firstRowID    *int64
	offset, bytes *int64
}

func (f fakeFile) ContentType() iceberg.ManifestEntryContent { return f.content }
func (f fakeFile) FilePath() string                          { return "s3://b/t/f" }
func (f fakeFile) FileFormat() iceberg.FileFormat            { return iceberg.PuffinFile }
func (f fakeFile) Count() int64                              { return f.count }
func (f fakeFile) FileSizeBytes() int64                      { return f.size }
func (f fakeFile) FirstRowID() *int64                        { return f.firstRowID }
func (f fakeFile) ContentOffset() *int64                     { return f.offset }
func (f fakeFile) ContentSizeInBytes() *int64                { return f.bytes }
func (f fakeFile) ReferencedDataFile() *string               { return nil }

func TestCheckEntry(t *testing.T) {
	v := func(x int64) *int64 { return &x }
	data, dv := iceberg.EntryContentData, iceberg.EntryContentPosDeletes
	for _, tc := range []struct {
		f    fakeFile
		next int64
		want string // "" for no error
	}{
		{fakeFile{content: data, count: 5, size: 100, firstRowID: v(0)}, 5, ""},
		{fakeFile{content: data, count: 5, size: 100}, 0, ""}, // no lineage: nothing to bound
		{fakeFile{content: data, count: -1, size: 100}, 5, "negative record_count -1"},
		{fakeFile{content: data, count: 5, size: -100}, 5, "negative file_size_in_bytes -100"},
		{fakeFile{content: data, count: 5, size: 100, firstRowID: v(-1)}, 5, "negative first_row_id -1"},
		{fakeFile{content: data, count: 5, size: 100, firstRowID: v(math.MaxInt64 - 4)}, -1, "overflows"},
		{fakeFile{content: data, count: 5, size: 100, firstRowID: v(math.MaxInt64 - 5)}, -1, ""},
		{fakeFile{content: data, count: 5, size: 100, firstRowID: v(1)}, 5, "passes the table's next-row-id 5"},
		{fakeFile{content: dv, count: 1, size: 100, offset: v(-4), bytes: v(40)}, -1, "deletion vector file s3://b/t/f: negative content_offset -4"},
		{fakeFile{content: dv, count: 1, size: 100, offset: v(4), bytes: v(-40)}, -1, "negative content_size_in_bytes -40"},
		{fakeFile{content: dv, count: -1, size: 100, offset: v(4), bytes: v(40)}, -1, "negative record_count"},
	} {
		sid, seq := int64(1), int64(1)
		err := checkEntry(iceberg.NewManifestEntry(iceberg.EntryStatusADDED, &sid, &seq, nil, tc.f), tc.next)
		switch {
		case tc.want == "" && err != nil:
			t.Errorf("%+v: %v", tc.f, err)
		case tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)):
			t.Errorf("%+v: got %v, want %q", tc.f, err, tc.want)
		}
	}
}
