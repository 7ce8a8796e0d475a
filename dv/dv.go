package dv

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"math"

	"github.com/RoaringBitmap/roaring/v2/roaring64"
)

// Sentinel errors returned, wrapped with the numbers that show the problem,
// by Decode, DecodeBitmap, ReadAt and Encode. Test for them with errors.Is.
var (
	// ErrLength reports a blob whose size disagrees with its length field, a
	// blob too short to hold the framing, or a size outside what Iceberg
	// can write.
	ErrLength = errors.New("dv: bad length")
	// ErrMagic reports a blob without the deletion-vector-v1 magic D1 D3 39 64.
	ErrMagic = errors.New("dv: bad magic")
	// ErrCRC reports a blob whose CRC-32 does not match its magic and bitmap.
	ErrCRC = errors.New("dv: crc mismatch")
	// ErrCardinality reports a vector holding a different number of positions
	// than the manifest recorded for it.
	ErrCardinality = errors.New("dv: cardinality mismatch")
	// ErrPosition reports a position at or beyond the data file's record count.
	ErrPosition = errors.New("dv: position out of range")
	// ErrKeyRange reports a bitmap bucket key (the high 32 bits of a
	// position) that Iceberg Java refuses: above math.MaxInt32-1.
	ErrKeyRange = errors.New("dv: bitmap key out of range")
	// ErrBitmap reports a malformed portable Roaring bitmap payload.
	ErrBitmap = errors.New("dv: malformed bitmap")
)

const (
	lengthSize = 4
	magicSize  = 4
	crcSize    = 4
	// minBlobSize is the framing alone; a real blob also holds at least the
	// 8-byte bucket count of an empty bitmap, which DecodeBitmap checks.
	minBlobSize = lengthSize + magicSize + crcSize
	// maxBlobSize is Iceberg Java's limit (it serializes into one byte
	// array). A larger size can only come from corrupt metadata, and
	// refusing it keeps ReadAt from allocating whatever a manifest claims.
	maxBlobSize = math.MaxInt32
)

var magic = []byte{0xD1, 0xD3, 0x39, 0x64}

// Decode validates one deletion-vector-v1 blob and returns its positions.
// It checks, in order: the length field against len(blob), the magic, the
// CRC, the bitmap encoding and key range, the cardinality and the positions.
// expectedCardinality < 0 means the cardinality is not known; recordCount < 0
// means the data file's record count is unknown, otherwise every position must
// be below it. The result shares no memory with blob.
func Decode(blob []byte, expectedCardinality, recordCount int64) (*roaring64.Bitmap, error) {
	if len(blob) < minBlobSize {
		return nil, fmt.Errorf("%w: blob holds %d bytes, need at least %d", ErrLength, len(blob), minBlobSize)
	}
	// The framing checks name no byte of the blob: a range of any file can
	// be handed in as a vector, and its content must not reach error text.
	length := uint64(binary.BigEndian.Uint32(blob))
	if want := length + lengthSize + crcSize; want != uint64(len(blob)) {
		return nil, fmt.Errorf("%w: length field does not match a blob of %d bytes", ErrLength, len(blob))
	}
	body := blob[lengthSize : len(blob)-crcSize] // magic + bitmap, what the CRC covers
	if !bytes.Equal(body[:magicSize], magic) {
		return nil, fmt.Errorf("%w: want % x", ErrMagic, magic)
	}
	stored := binary.BigEndian.Uint32(blob[len(blob)-crcSize:])
	if computed := crc32.ChecksumIEEE(body); computed != stored {
		return nil, ErrCRC
	}
	b, err := DecodeBitmap(body[magicSize:])
	if err != nil {
		return nil, err
	}
	if expectedCardinality >= 0 {
		if got := b.GetCardinality(); got != uint64(expectedCardinality) {
			return nil, fmt.Errorf("%w: bitmap holds %d, manifest says %d", ErrCardinality, got, expectedCardinality)
		}
	}
	if recordCount >= 0 && !b.IsEmpty() {
		if maxPos := b.Maximum(); maxPos >= uint64(recordCount) {
			return nil, fmt.Errorf("%w: %d >= record count %d", ErrPosition, maxPos, recordCount)
		}
	}
	return b, nil
}

// ReadAt reads the blob of size bytes at offset from r with one ReadAt call
// and decodes it as Decode does. offset and size are the manifest's
// content_offset and content_size_in_bytes. When the cardinality and the
// record count are known, a cardinality above the record count and a size
// above MaxSize are refused before anything is read, so a corrupt manifest
// cannot make it allocate more than the vector can need. Errors wrap the
// cause (a read error or one of the sentinels); the caller adds the file
// name and checks the range against the file's size.
func ReadAt(r io.ReaderAt, offset, size, expectedCardinality, recordCount int64) (*roaring64.Bitmap, error) {
	if offset < 0 {
		return nil, fmt.Errorf("dv: negative offset %d", offset)
	}
	if size < minBlobSize || size > maxBlobSize {
		return nil, fmt.Errorf("%w: size %d outside [%d, %d]", ErrLength, size, minBlobSize, maxBlobSize)
	}
	if expectedCardinality >= 0 && recordCount >= 0 {
		if expectedCardinality > recordCount {
			return nil, fmt.Errorf("%w: manifest says %d positions in a data file of %d rows", ErrCardinality, expectedCardinality, recordCount)
		}
		if most := MaxSize(expectedCardinality, recordCount); size > most {
			return nil, fmt.Errorf("%w: size %d above %d, the most %d positions below %d can take", ErrLength, size, most, expectedCardinality, recordCount)
		}
	}
	buf := make([]byte, size)
	n, err := r.ReadAt(buf, offset)
	if n < len(buf) {
		if err == nil {
			err = io.ErrUnexpectedEOF
		}
		return nil, fmt.Errorf("dv: read %d bytes at offset %d: got %d: %w", size, offset, n, err)
	}
	// A full read may come with io.EOF at the end of the source: not an error.
	return Decode(buf, expectedCardinality, recordCount)
}

// MaxSize returns the most bytes a deletion-vector-v1 blob holding
// cardinality positions below recordCount can take in any valid portable
// Roaring layout: the framing, per 32-bit bucket its key and header, per
// 2^16-position container its header and offset, and at most 4 bytes per
// position (a run container of one-position runs; an array takes 2, and a
// bitmap container is only used above 4096 positions, where 8 KiB is less
// than 2 per position). Every bucket below recordCount counts, not only as
// many as there are positions: Iceberg Java writes an empty bucket for each
// key below the highest. It is capped at the largest blob Iceberg writes.
func MaxSize(cardinality, recordCount int64) int64 {
	if cardinality < 0 || recordCount < 0 {
		return maxBlobSize
	}
	containers := min(cardinality, recordCount>>16+1)
	buckets := recordCount>>32 + 1
	if cardinality > maxBlobSize || containers > maxBlobSize/16 || buckets > maxBlobSize/16 {
		return maxBlobSize
	}
	size := minBlobSize + 8 + 16*buckets + 16*containers + 4*cardinality
	return min(size, maxBlobSize)
}

// Encode builds a deletion-vector-v1 blob from b, run-optimising a copy of it
// first as Iceberg Java does, so b itself is left untouched. A nil b encodes
// an empty vector. The bytes are Java's but where Java writes an empty
// bucket for a key below the highest: Encode leaves those out, as the
// portable format allows and Java's reader accepts, so that a position at a
// high key does not cost 12 bytes per key below it. It is meant for tests
// and tools; icecdc never writes vectors into tables.
func Encode(b *roaring64.Bitmap) ([]byte, error) {
	if b == nil {
		b = roaring64.New()
	}
	c := b.Clone()
	c.RunOptimize()
	if !c.IsEmpty() {
		if key := c.Maximum() >> 32; key > maxKey {
			return nil, fmt.Errorf("%w: %d > %d", ErrKeyRange, key, maxKey)
		}
	}
	total := lengthSize + magicSize + c.GetPortableSerializedSizeInBytes() + crcSize
	if total > maxBlobSize {
		return nil, fmt.Errorf("%w: blob would hold %d bytes, max %d", ErrLength, total, maxBlobSize)
	}
	buf := bytes.NewBuffer(make([]byte, 0, total))
	buf.Write(binary.BigEndian.AppendUint32(nil, uint32(total-lengthSize-crcSize)))
	buf.Write(magic)
	if _, err := c.WritePortableTo(buf); err != nil {
		return nil, fmt.Errorf("dv: encode bitmap: %w", err)
	}
	out := buf.Bytes()
	return binary.BigEndian.AppendUint32(out, crc32.ChecksumIEEE(out[lengthSize:])), nil
}
