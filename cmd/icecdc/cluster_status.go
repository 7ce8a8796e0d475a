package main

import (
	"context"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/icecdc/icecdc/cdc"
	"github.com/icecdc/icecdc/cluster"
	"github.com/icecdc/icecdc/sinks/kafka"
)

// clusterStatusTable is `icecdc status` in cluster mode: each table's
// owner (the member whose assignment holds it now), its checkpoint from
// the checkpoint topic, the head and the lag.
func clusterStatusTable(ctx context.Context, cfg *Config, out io.Writer) error {
	kc := cfg.Cluster.Kafka
	opts, err := kc.ClientOpts()
	if err != nil {
		return fmt.Errorf("status: %w", err)
	}
	cl, err := kgo.NewClient(opts...)
	if err != nil {
		return fmt.Errorf("status: kafka client: %w", err)
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	type last struct {
		cp    cdc.Checkpoint
		owner string
		gen   int32
		at    time.Time
	}
	byTable := map[string]last{}
	prefix := cfg.Name + "/"
	err = kafka.ReadCheckpoints(ctx, kc, func(cr kafka.CheckpointRecord) {
		name, ok := strings.CutPrefix(cr.Key, prefix)
		if !ok {
			return
		}
		if cr.Deleted {
			delete(byTable, name)
			return
		}
		byTable[name] = last{cr.Checkpoint, cr.Owner, cr.Generation, cr.Time}
	})
	if err != nil {
		return fmt.Errorf("status: %w", err)
	}
	specs, closeAll, err := buildTables(ctx, cfg, nil)
	if err != nil {
		return err
	}
	defer closeAll()
	names := make([]string, len(specs))
	for i, sp := range specs {
		names[i] = sp.Name
	}
	owners, err := cluster.Owners(ctx, kadm.NewClient(cl), cfg.Cluster, names)
	if err != nil {
		return fmt.Errorf("status: %w", err)
	}
	w := tabwriter.NewWriter(out, 2, 4, 2, ' ', 0)
	fmt.Fprintln(w, "TABLE\tOWNER\tCHECKPOINT SEQ\tSNAPSHOT\tPOSITION\tHEAD SEQ\tSNAPSHOTS BEHIND\tSECONDS BEHIND\tLAST WRITER\tSAVED")
	for _, sp := range specs {
		owner := owners[sp.Name]
		if owner == "" {
			owner = "-"
		}
		if _, err := sp.Source.Refresh(ctx); err != nil {
			fmt.Fprintf(w, "%s\t%s\tunavailable: %s\n", sp.Name, owner, oneLine(err.Error()))
			continue
		}
		head, hasHead := sp.Source.Head()
		l, ok := byTable[sp.Name]
		cp := l.cp
		pos, saved, writer := "-", "-", "-"
		if ok {
			pos = "done"
			if cp.Initial {
				pos = fmt.Sprintf("initial read, row %d", cp.Next)
			} else if !cp.Done {
				pos = fmt.Sprintf("event %d", cp.Next)
			}
			saved = l.at.UTC().Format(time.RFC3339)
			if l.owner != "" {
				writer = fmt.Sprintf("%s@%d", l.owner, l.gen)
			}
		}
		behind, secs := 0, 0.0
		if hasHead {
			snaps, err := sp.Source.Snapshots(ctx, cp.Seq, 0)
			if err != nil {
				fmt.Fprintf(w, "%s\t%s\t%d\t%d\t%s\t%d\tbroken: %s\n", sp.Name, owner, cp.Seq, cp.SnapshotID, pos, head.SequenceNumber, oneLine(err.Error()))
				continue
			}
			behind = len(snaps)
			if !cp.Done && ok {
				behind++
			}
			if len(snaps) > 0 {
				secs = time.Since(time.UnixMilli(snaps[0].TimestampMs)).Seconds()
			}
		}
		fmt.Fprintf(w, "%s\t%s\t%d\t%d\t%s\t%d\t%d\t%.0f\t%s\t%s\n", sp.Name, owner, cp.Seq, cp.SnapshotID, pos, head.SequenceNumber, behind, secs, writer, saved)
	}
	return w.Flush()
}
