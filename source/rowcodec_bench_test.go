//go:build unix

package source

import (
	"fmt"
	"syscall"
	"testing"
	"time"

	"github.com/icecdc/icecdc/values"
)

// BenchmarkDecodeRow decodes spilled row images, the before images of a
// streamed commit's updates read back one value at a time: a narrow row
// of scalars as most tables have, and sampleRow, which has every type.
// On a shared machine cpu-ns/row, the process's CPU time, is the steadier
// measure.
func BenchmarkDecodeRow(b *testing.B) {
	scalars := func(i int) values.Row {
		return values.Row{int64(i), fmt.Sprint("name ", i), float64(i) / 7, values.TimestampTZ(i) << 20, i%2 == 0, nil,
			values.Decimal{Unscaled: "1999", Scale: 2}, values.Date(i % 20000), int32(i % 1000)}
	}
	for _, c := range []struct {
		name string
		row  func(int) values.Row
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
			cpu0 := processCPU(b)
			for range b.N {
				for _, rec := range images {
					d := rowDecoder{b: rec}
					if _, err := d.row(); err != nil {
						b.Fatal(err)
					}
				}
			}
			cpu := processCPU(b) - cpu0
			b.ReportMetric(float64(n)*float64(b.N)/b.Elapsed().Seconds(), "rows/s")
			b.ReportMetric(float64(cpu.Nanoseconds())/float64(n)/float64(b.N), "cpu-ns/row")
		})
	}
}

// processCPU is the user+system CPU time the process has used so far.
func processCPU(b *testing.B) time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		b.Fatal(err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
