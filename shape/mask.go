package shape

import (
	"crypto/md5"
	"crypto/sha1"
	"crypto/sha256"
	"crypto/sha3"
	"crypto/sha512"
	"encoding/binary"
	"encoding/hex"
	"fmt"
	"hash"
	"strings"
	"unicode/utf16"
	"unicode/utf8"
)

// HashVersion is how a hashed value becomes bytes, as Debezium's
// column.mask.hash (V1) and column.mask.hash.v2 (V2) options differ.
type HashVersion uint8

const (
	// HashV1 hashes the value as Java's ObjectOutputStream serializes a
	// String: the stream header, TC_STRING (or TC_LONGSTRING) and the
	// length, then the text in Java's modified UTF-8. Debezium's first
	// hashing strategy writes the value that way, so a hash icecdc writes
	// equals the one Debezium wrote only with these bytes.
	HashV1 HashVersion = 1
	// HashV2 hashes the value's text in UTF-8 (Java's String.getBytes
	// with the UTF-8 default charset).
	HashV2 HashVersion = 2
)

// hashAlgorithms are the Java MessageDigest names Debezium's option takes
// (MessageDigest.getInstance matches them regardless of case, and the SUN
// provider's aliases too). MD2 has no implementation here and is refused.
var hashAlgorithms = map[string]func() hash.Hash{
	"MD5":         md5.New,
	"SHA-1":       sha1.New,
	"SHA":         sha1.New,
	"SHA1":        sha1.New,
	"SHA-224":     sha256.New224,
	"SHA224":      sha256.New224,
	"SHA-256":     sha256.New,
	"SHA256":      sha256.New,
	"SHA-384":     sha512.New384,
	"SHA384":      sha512.New384,
	"SHA-512":     sha512.New,
	"SHA512":      sha512.New,
	"SHA-512/224": sha512.New512_224,
	"SHA512/224":  sha512.New512_224,
	"SHA-512/256": sha512.New512_256,
	"SHA512/256":  sha512.New512_256,
	"SHA3-224":    func() hash.Hash { return sha3.New224() },
	"SHA3-256":    func() hash.Hash { return sha3.New256() },
	"SHA3-384":    func() hash.Hash { return sha3.New384() },
	"SHA3-512":    func() hash.Hash { return sha3.New512() },
}

// HashAlgorithmNames lists the accepted algorithm names, for errors.
const HashAlgorithmNames = "MD5, SHA-1, SHA-224, SHA-256, SHA-384, SHA-512, SHA-512/224, SHA-512/256, SHA3-224, SHA3-256, SHA3-384, SHA3-512"

// Hasher computes Debezium's masking hash of string values: the digest of
// the salt's UTF-8 bytes followed by the value's bytes (see HashVersion),
// as lowercase hex.
type Hasher struct {
	newHash func() hash.Hash
	salt    []byte
	version HashVersion
}

// NewHasher returns the hasher of a Java MessageDigest algorithm name.
func NewHasher(algorithm, salt string, v HashVersion) (*Hasher, error) {
	h, ok := hashAlgorithms[strings.ToUpper(algorithm)]
	if !ok {
		return nil, fmt.Errorf("unknown hash algorithm %q (want one of %s)", algorithm, HashAlgorithmNames)
	}
	if salt == "" {
		return nil, fmt.Errorf("empty salt")
	}
	return &Hasher{newHash: h, salt: []byte(salt), version: v}, nil
}

// Hash returns the hex digest of s.
func (h *Hasher) Hash(s string) string {
	d := h.newHash()
	d.Write(h.salt)
	if h.version == HashV1 {
		d.Write(javaSerializedString(s))
	} else {
		d.Write([]byte(s))
	}
	return hex.EncodeToString(d.Sum(nil))
}

// javaSerializedString is the byte stream Java's ObjectOutputStream writes
// for one String object. No library here writes Java's serialization
// format; a String needs only its header, tag and modified UTF-8.
func javaSerializedString(s string) []byte {
	m := modifiedUTF8(s)
	out := make([]byte, 0, len(m)+13)
	out = append(out, 0xAC, 0xED, 0x00, 0x05) // STREAM_MAGIC, STREAM_VERSION
	if len(m) <= 0xFFFF {
		out = append(out, 0x74) // TC_STRING
		out = binary.BigEndian.AppendUint16(out, uint16(len(m)))
	} else {
		out = append(out, 0x7C) // TC_LONGSTRING
		out = binary.BigEndian.AppendUint64(out, uint64(len(m)))
	}
	return append(out, m...)
}

// modifiedUTF8 is Java's modified UTF-8 of s: NUL as two bytes, and a
// character outside the BMP as its two UTF-16 surrogates of three bytes
// each.
func modifiedUTF8(s string) []byte {
	out := make([]byte, 0, len(s)+8)
	for _, r := range s {
		switch {
		case r == 0:
			out = append(out, 0xC0, 0x80)
		case r > 0xFFFF:
			hi, lo := utf16.EncodeRune(r)
			out = appendThreeBytes(out, hi)
			out = appendThreeBytes(out, lo)
		default:
			out = utf8.AppendRune(out, r)
		}
	}
	return out
}

func appendThreeBytes(out []byte, c rune) []byte {
	return append(out, byte(0xE0|(c>>12)&0x0F), byte(0x80|(c>>6)&0x3F), byte(0x80|c&0x3F))
}

// truncateUTF16 cuts s to at most n UTF-16 code units, as Java's
// String.substring(0, n) counts them (Debezium's column.truncate). Where
// the cut would split a surrogate pair, the pair is left out: Go strings
// hold no lone surrogate.
func truncateUTF16(s string, n int) string {
	units := 0
	for i, r := range s {
		w := 1
		if r > 0xFFFF {
			w = 2
		}
		if units+w > n {
			return s[:i]
		}
		units += w
	}
	return s
}
