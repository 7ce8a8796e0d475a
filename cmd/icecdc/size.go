package main

import (
	"fmt"
	"math"

	"github.com/dustin/go-humanize"
	"go.yaml.in/yaml/v3"

	"github.com/icecdc/icecdc/source"
)

// byteSize is a size in bytes, written as a number of bytes or with a
// unit: 512MiB, 1GiB (powers of 1024), 500MB (powers of 1000).
type byteSize int64

func parseByteSize(s string) (byteSize, error) {
	n, err := humanize.ParseBytes(s)
	if err != nil || n > math.MaxInt64 {
		// No setting name here: the config check adds the key and its
		// line, a flag error the flag's name.
		return 0, fmt.Errorf("%q is not a size: want bytes, or a number with a unit such as 512MiB or 1GiB", s)
	}
	return byteSize(n), nil
}

func (b *byteSize) UnmarshalYAML(n *yaml.Node) error {
	v, err := parseByteSize(n.Value)
	if err != nil {
		return err
	}
	*b = v
	return nil
}

// Set, String and Type make it a flag.
func (b *byteSize) Set(s string) error {
	v, err := parseByteSize(s)
	if err != nil {
		return err
	}
	*b = v
	return nil
}

func (b *byteSize) String() string {
	if *b == 0 {
		return humanize.IBytes(source.DefaultMaxMemory)
	}
	return humanize.IBytes(uint64(*b))
}

func (b *byteSize) Type() string { return "size" }
