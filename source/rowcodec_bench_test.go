package source

import (
	"fmt"
	"testing"

	"github.com/icecdc/icecdc/cdc"
)

// BenchmarkDecodeRow decodes spilled row images, the before images of a
// streamed commit's updates read back one value at a time: a narrow row
// of scalars as most tables have, and sampleRow, which has every type.
func BenchmarkDecodeRow(b *testing.B) {
	scalars := func(i int) cdc.Row {
		return cdc.Row{int64(i), fmt.Sprint("name ", i), float64(i) / 7, cdc.TimestampTZ(i) << 20, i%2 == 0, nil,
			cdc.Decimal{Unscaled: "1999", Scale: 2}, cdc.Date(i % 20000), int32(i % 1000)}
	}
	for _, c := range []struct {
		name string
		row  func(int) cdc.Row
	}{{"scalars", scalars}, {"sample", sampleRow}} {
		b.Run(c.name, func(b *testing.B) {
			const n = 256
			var images [][]byte
			for i := range n {
				rec, err := appendRow(nil, c.row(i))
				if err != nil {
					b.Fatal(err)
				}
				images = append(images, rec)
			}
			b.ReportAllocs()
			b.ResetTimer()
			for range b.N {
				for _, rec := range images {
					d := rowDecoder{b: rec}
					if _, err := d.row(); err != nil {
						b.Fatal(err)
					}
				}
			}
			b.ReportMetric(float64(n)*float64(b.N)/b.Elapsed().Seconds(), "rows/s")
		})
	}
}
