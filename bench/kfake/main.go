// Command kfake runs an in-memory Kafka cluster (franz-go's kfake) in its
// own process until it is interrupted, for bench/run.sh to time
// `icecdc run --once` into Kafka without a broker installed. With
// -registry it serves an in-memory schema registry too (franz-go's
// srfake), for format debezium-avro; with -stats it writes the records and
// bytes (keys and values) of topic bench to a file when interrupted, for
// the bytes per record.
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/sr/srfake"
)

func main() {
	port := flag.Int("port", 0, "the broker's port on 127.0.0.1 (0: any free one)")
	withRegistry := flag.Bool("registry", false, "serve a schema registry too; its URL is the second line printed")
	stats := flag.String("stats", "", "when interrupted, write \"<records> <bytes>\" of topic bench to this file")
	flag.Parse()
	c, err := kfake.NewCluster(kfake.NumBrokers(1), kfake.Ports(*port), kfake.SeedTopics(1, "bench"))
	if err != nil {
		fmt.Fprintln(os.Stderr, "kfake:", err)
		os.Exit(1)
	}
	defer c.Close()
	fmt.Println(c.ListenAddrs()[0])
	if *withRegistry {
		reg := srfake.New()
		defer reg.Close()
		fmt.Println(reg.URL())
	}
	sig := make(chan os.Signal, 1)
	signal.Notify(sig, os.Interrupt, syscall.SIGTERM)
	<-sig
	if *stats != "" {
		if err := writeStats(c.ListenAddrs(), *stats); err != nil {
			fmt.Fprintln(os.Stderr, "kfake: stats:", err)
			os.Exit(1)
		}
	}
}

// writeStats reads topic bench to its end and writes its record count and
// the bytes of its keys and values.
func writeStats(brokers []string, path string) error {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	cl, err := kgo.NewClient(kgo.SeedBrokers(brokers...), kgo.ConsumeTopics("bench"), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	if err != nil {
		return err
	}
	defer cl.Close()
	ends, err := kadm.NewClient(cl).ListEndOffsets(ctx, "bench")
	if err != nil {
		return err
	}
	left := map[int32]int64{}
	ends.Each(func(o kadm.ListedOffset) {
		if o.Offset > 0 {
			left[o.Partition] = o.Offset
		}
	})
	var records, bytes int64
	for len(left) > 0 {
		fs := cl.PollFetches(ctx)
		if err := fs.Err(); err != nil {
			return err
		}
		fs.EachRecord(func(r *kgo.Record) {
			records++
			bytes += int64(len(r.Key) + len(r.Value))
			if end, ok := left[r.Partition]; ok && r.Offset+1 >= end {
				delete(left, r.Partition)
			}
		})
	}
	return os.WriteFile(path, fmt.Appendf(nil, "%d %d\n", records, bytes), 0o644)
}
