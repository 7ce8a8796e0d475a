package dv

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"math"

	"github.com/RoaringBitmap/roaring/v2"
	"github.com/RoaringBitmap/roaring/v2/roaring64"
)

// maxKey is the largest bucket key Iceberg Java reads or writes
// (RoaringPositionBitmap.readKey: "Key is too large"): it keeps its buckets in
// an array indexed by key, so positions stop below MaxInt32 << 32.
const maxKey = math.MaxInt32 - 1

// DecodeBitmap decodes a bare 64-bit portable Roaring bitmap (no DV framing)
// that must span all of data. Like Iceberg Java it rejects bucket keys (the
// high 32 bits of a position) above math.MaxInt32-1 with ErrKeyRange, checking
// each key before decoding its bucket; every other defect is ErrBitmap. The
// result shares no memory with data.
func DecodeBitmap(data []byte) (*roaring64.Bitmap, error) {
	size, err := checkBuckets(data)
	if err != nil {
		return nil, err
	}
	if size != len(data) {
		return nil, fmt.Errorf("%w: %d trailing bytes after %d", ErrBitmap, len(data)-size, size)
	}
	// A bytes.Reader (unlike FromUnsafeBytes) makes roaring copy each
	// container, so the bitmap does not pin or alias the caller's buffer.
	b := roaring64.New()
	if _, err := b.ReadPortableFrom(bytes.NewReader(data)); err != nil {
		return nil, fmt.Errorf("%w: %w", ErrBitmap, err)
	}
	// ReadPortableFrom trusts each container's contents (sorted arrays,
	// bitmap cardinalities, disjoint runs); operations on a bitmap that
	// breaks them give wrong answers, and GetCardinality would trust the
	// stored counts.
	if err := b.Validate(); err != nil {
		return nil, fmt.Errorf("%w: %w", ErrBitmap, err)
	}
	return b, nil
}

// checkBuckets walks the bitmap's framing: the bucket count, then each key,
// checked before its 32-bit bitmap is parsed (the order Iceberg Java uses, so
// the same inputs fail the same way), and returns the bytes the bitmap spans.
// Parsing with FromBuffer aliases data instead of copying it, so the walk
// costs little beside the decode that follows.
func checkBuckets(data []byte) (int, error) {
	if len(data) < 8 {
		return 0, fmt.Errorf("%w: %d bytes, need 8 for the bucket count", ErrBitmap, len(data))
	}
	count := binary.LittleEndian.Uint64(data)
	if count > maxKey+1 {
		return 0, fmt.Errorf("%w: bucket count %d above %d", ErrBitmap, count, maxKey+1)
	}
	off := 8
	var prev uint32
	var bucket roaring.Bitmap
	for i := range count {
		if len(data)-off < 4 {
			return 0, fmt.Errorf("%w: bucket %d of %d: key truncated at byte %d", ErrBitmap, i, count, off)
		}
		key := binary.LittleEndian.Uint32(data[off:])
		if key > maxKey {
			return 0, fmt.Errorf("%w: %d > %d in bucket %d", ErrKeyRange, key, maxKey, i)
		}
		if i > 0 && key <= prev {
			return 0, fmt.Errorf("%w: bucket %d: key %d after %d", ErrBitmap, i, key, prev)
		}
		prev = key
		off += 4
		n, err := bucket.FromBuffer(data[off:])
		if err != nil {
			return 0, fmt.Errorf("%w: bucket %d (key %d): %w", ErrBitmap, i, key, err)
		}
		if n <= 0 {
			return 0, fmt.Errorf("%w: bucket %d (key %d) is empty", ErrBitmap, i, key)
		}
		off += int(n)
	}
	return off, nil
}
