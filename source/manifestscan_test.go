package source

import (
	"bytes"
	"errors"
	"testing"

	"github.com/twmb/avro"
	"github.com/twmb/avro/ocf"
)

// TestScanContainer: the byte scan finds a string in any block of a
// container written by twmb/avro's ocf writer, with each codec it reads,
// says so when it is absent, and gives up (errScan, so the manifest is
// decoded) on an unknown codec and on damaged bytes — never a false
// "absent".
func TestScanContainer(t *testing.T) {
	sc := avro.MustParse(`{"type":"record","name":"e","fields":[{"name":"file_path","type":"string"},{"name":"n","type":"long"}]}`)
	type rec struct {
		FilePath string `avro:"file_path"`
		N        int64  `avro:"n"`
	}
	zstdCodec, err := ocf.ZstdCodec(nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	for name, codec := range map[string]ocf.Codec{"null": nil, "deflate": ocf.DeflateCodec(-1), "zstandard": zstdCodec, "snappy": ocf.SnappyCodec()} {
		var b bytes.Buffer
		opts := []ocf.WriterOpt{ocf.WithBlockCount(7)} // several blocks
		if codec != nil {
			opts = append(opts, ocf.WithCodec(codec))
		}
		w, err := ocf.NewWriter(&b, sc, opts...)
		if err != nil {
			t.Fatal(err)
		}
		for i := range 50 {
			if err := w.Encode(rec{FilePath: "s3://b/data/f" + string(rune('A'+i%26)) + string(rune('a'+i/26)) + ".parquet", N: int64(i)}); err != nil {
				t.Fatal(err)
			}
		}
		if err := w.Close(); err != nil {
			t.Fatal(err)
		}
		data := b.Bytes()
		found, err := scanContainer(data, [][]byte{[]byte("nope"), []byte("s3://b/data/fXb.parquet")})
		if name == "snappy" {
			if !errors.Is(err, errScan) {
				t.Fatalf("snappy: %v %v, want errScan", found, err)
			}
			continue
		}
		if err != nil || !found {
			t.Fatalf("%s: the last block's path: %v %v", name, found, err)
		}
		if found, err := scanContainer(data, [][]byte{[]byte("s3://b/data/fZz.parquet")}); err != nil || found {
			t.Fatalf("%s: an absent path: %v %v", name, found, err)
		}
		for _, bad := range [][]byte{data[:len(data)-3], data[:len(data)/2], append([]byte("Obj\x02"), data[4:]...), nil} {
			if found, err := scanContainer(bad, [][]byte{[]byte("s3://b/data/fZz.parquet")}); !errors.Is(err, errScan) && !(found && err == nil) {
				t.Fatalf("%s: damaged container (%d bytes): %v %v", name, len(bad), found, err)
			}
		}
	}
}
