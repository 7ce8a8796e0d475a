package source

import (
	"bytes"
	"encoding/binary"
	"errors"
	"io"
	"sync"

	"github.com/klauspost/compress/flate"
	"github.com/klauspost/compress/zstd"
	"golang.org/x/sync/semaphore"
)

// Finding a data file's manifest entry by its path alone (a deletion
// vector names its data file by path, nothing else) means reading the data
// manifests until one holds it. Decoding every entry costs ~5 µs each, most
// of a fresh `changes` on a table of 100,000 files. An Avro record lies
// whole in one block of its container file and stores a string as its
// UTF-8 bytes, so a manifest whose decompressed blocks do not contain the
// path does not hold the file: the scan below decompresses and searches,
// decoding nothing, and only the manifests it finds the path in are
// decoded. It is written here because twmb/avro's ocf reader (the one
// iceberg-go reads manifests with) hands out records, never the raw
// blocks. Anything it does not understand (another codec, a malformed
// header, a block past the limit) makes it give up, and the caller decodes
// that manifest as before: the scan can skip a manifest, never lose a file.

// errScan is a container the scan does not read; the manifest is decoded.
var errScan = errors.New("manifest scan: not scanned")

// Bounds of one manifest's scan: the file read whole (scanRawLimit) and
// the bytes inflated from it (scanLimit, inflated a block at a time into
// one reused buffer); a manifest past either is decoded instead. The
// scans' downloads run io.concurrency at a time, as every read does (on
// an object store a wave of them costs one round trip), but together hold
// at most scanRawBudget bytes of manifest, whatever io.concurrency is and
// whatever the manifest list claims: each takes its length from scanBytes
// before it reads, so large manifests wait their turn while small ones
// run side by side.
const (
	scanRawLimit  = 16 << 20
	scanLimit     = 64 << 20
	scanRawBudget = 4 * scanRawLimit
)

var scanBytes = semaphore.NewWeighted(scanRawBudget)

var (
	flatePool = sync.Pool{New: func() any { return flate.NewReader(nil) }}
	blockPool = sync.Pool{New: func() any { return new(bytes.Buffer) }}
)

var zstdDecoder = sync.OnceValues(func() (*zstd.Decoder, error) {
	return zstd.NewReader(nil, zstd.WithDecoderConcurrency(1), zstd.WithDecoderMaxMemory(scanLimit))
})

// scanContainer reports whether any of want occurs in the decompressed
// blocks of the Avro object container file data.
func scanContainer(data []byte, want [][]byte) (bool, error) {
	r := avroBytes{b: data}
	if !bytes.HasPrefix(data, []byte("Obj\x01")) {
		return false, errScan
	}
	r.b = r.b[4:]
	codec := "null"
	for {
		n, err := r.long()
		if err != nil {
			return false, err
		}
		if n == 0 {
			break
		}
		if n < 0 {
			if _, err := r.long(); err != nil { // the block's byte size
				return false, err
			}
			n = -n
		}
		for ; n > 0; n-- {
			k, err := r.bytes()
			if err != nil {
				return false, err
			}
			v, err := r.bytes()
			if err != nil {
				return false, err
			}
			if string(k) == "avro.codec" {
				codec = string(v)
			}
		}
	}
	if len(r.b) < 16 {
		return false, errScan
	}
	sync := r.b[:16]
	r.b = r.b[16:]
	var out []byte
	total := 0
	buf := blockPool.Get().(*bytes.Buffer)
	defer blockPool.Put(buf)
	for len(r.b) > 0 {
		if _, err := r.long(); err != nil { // records in the block
			return false, err
		}
		block, err := r.bytes()
		if err != nil {
			return false, err
		}
		if len(r.b) < 16 || !bytes.Equal(r.b[:16], sync) {
			return false, errScan
		}
		r.b = r.b[16:]
		switch codec {
		case "null":
			out = block
		case "deflate":
			fr := flatePool.Get().(io.ReadCloser)
			if err := fr.(flate.Resetter).Reset(bytes.NewReader(block), nil); err != nil {
				return false, errScan
			}
			buf.Reset()
			_, err := buf.ReadFrom(io.LimitReader(fr, int64(scanLimit-total+1)))
			flatePool.Put(fr)
			if err != nil {
				return false, errScan
			}
			out = buf.Bytes()
		case "zstandard":
			d, err := zstdDecoder()
			if err != nil {
				return false, errScan
			}
			if out, err = d.DecodeAll(block, nil); err != nil {
				return false, errScan
			}
		default:
			return false, errScan
		}
		if total += len(out); total > scanLimit {
			return false, errScan
		}
		for _, w := range want {
			if bytes.Contains(out, w) {
				return true, nil
			}
		}
	}
	return false, nil
}

// avroBytes reads Avro's binary encoding of longs and byte strings.
type avroBytes struct{ b []byte }

// long reads an Avro long: a zig-zag varint, as binary.Varint reads it.
func (r *avroBytes) long() (int64, error) {
	v, n := binary.Varint(r.b)
	if n <= 0 {
		return 0, errScan
	}
	r.b = r.b[n:]
	return v, nil
}

func (r *avroBytes) bytes() ([]byte, error) {
	n, err := r.long()
	if err != nil || n < 0 || n > int64(len(r.b)) {
		return nil, errScan
	}
	v := r.b[:n]
	r.b = r.b[n:]
	return v, nil
}
