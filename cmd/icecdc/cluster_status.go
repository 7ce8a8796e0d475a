package main

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/icecdc/icecdc/cluster"
	"github.com/icecdc/icecdc/sinks/kafka"
)

// clusterStatuses is `icecdc status` in cluster mode: each table's owner
// (the member whose assignment holds it now), its checkpoint from the
// checkpoint topic with its last writer, the head and the lag.
func clusterStatuses(ctx context.Context, cfg *Config) ([]tableStatus, error) {
	kc := cfg.Cluster.Kafka
	opts, err := kc.ClientOpts()
	if err != nil {
		return nil, fmt.Errorf("status: %w", err)
	}
	cl, err := kgo.NewClient(opts...)
	if err != nil {
		return nil, fmt.Errorf("status: kafka client: %w", err)
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	byTable := map[string]tableStatus{}
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
		cp := cr.Checkpoint
		r := tableStatus{Table: name, Checkpoint: &cp, SavedAt: cr.Time.UTC()}
		if cr.Owner != "" {
			r.LastWriter = fmt.Sprintf("%s@%d", cr.Owner, cr.Generation)
		}
		byTable[name] = r
	})
	if err != nil {
		return nil, fmt.Errorf("status: %w", err)
	}
	specs, closeAll, err := buildTables(ctx, cfg, nil)
	if err != nil {
		return nil, err
	}
	defer closeAll()
	names := make([]string, len(specs))
	for i, sp := range specs {
		names[i] = sp.Name
	}
	owners, err := cluster.Owners(ctx, kadm.NewClient(cl), cfg.Cluster, names)
	if err != nil {
		return nil, fmt.Errorf("status: %w", err)
	}
	rows := make([]tableStatus, 0, len(specs))
	for _, sp := range specs {
		r := byTable[sp.Name]
		r.Table, r.Owner = sp.Name, owners[sp.Name]
		measure(ctx, &r, sp.Source)
		rows = append(rows, r)
	}
	return rows, nil
}
