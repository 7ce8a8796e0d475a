package source_test

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/icecdc/icecdc/cdc"
	"github.com/icecdc/icecdc/internal/replay"
	"github.com/icecdc/icecdc/source"
)

// checkExpiredParents computes every snapshot of the fixture's history
// again from a metadata file in which its parent and everything older was
// expired (as expire_snapshots leaves it: the child still names its
// parent), and wants the same events as with the whole history: the
// parent's deletes are derived from the snapshot's own manifest list. A
// commit that cannot be computed without the parent must say so
// (cdc.ErrHistory), never yield other events. It returns how many
// snapshots were computed without their parent.
func checkExpiredParents(t *testing.T, f *fixture, steps []replay.Step) int {
	t.Helper()
	meta := strings.TrimPrefix(f.tbl.MetadataLocation(), "file://")
	raw, err := os.ReadFile(meta)
	if err != nil {
		t.Fatal(err)
	}
	computed := 0
	for k := 1; k < len(steps); k++ {
		si := steps[k].Snapshot
		path := filepath.Join(filepath.Dir(meta), fmt.Sprintf("expired-before-%d.metadata.json", si.SequenceNumber))
		writeExpiredBefore(t, raw, si.SequenceNumber, path)
		src, err := source.Open(f.ctx, source.Options{MetadataPath: path, MaxHeldRows: f.held, MaxMemory: f.memory})
		if err != nil {
			t.Fatal(err)
		}
		snaps, err := src.Snapshots(f.ctx, si.SequenceNumber-1, 0)
		if err != nil {
			t.Fatalf("snapshot seq %d with its parent expired: %v", si.SequenceNumber, err)
		}
		c, err := src.Commit(f.ctx, snaps[0])
		if err == nil {
			err = c.Materialize(f.ctx)
		}
		if errors.Is(err, cdc.ErrHistory) {
			continue
		}
		if err != nil {
			t.Fatalf("snapshot seq %d (%s) with its parent expired: %v", si.SequenceNumber, si.Operation, err)
		}
		got, err := replay.Encode(c)
		if err != nil {
			t.Fatal(err)
		}
		if !reflect.DeepEqual(got, steps[k].Events) {
			t.Fatalf("snapshot seq %d (%s): with its parent expired the events differ:\n got %v\nwant %v", si.SequenceNumber, si.Operation, got, steps[k].Events)
		}
		computed++
	}
	return computed
}

// writeExpiredBefore writes metadata without the snapshots below seq.
func writeExpiredBefore(t *testing.T, raw []byte, seq int64, path string) {
	t.Helper()
	var m map[string]any
	d := json.NewDecoder(bytes.NewReader(raw))
	d.UseNumber()
	if err := d.Decode(&m); err != nil {
		t.Fatal(err)
	}
	gone := map[string]bool{}
	var kept []any
	for _, s := range m["snapshots"].([]any) {
		s := s.(map[string]any)
		if n, _ := s["sequence-number"].(json.Number).Int64(); n < seq {
			gone[s["snapshot-id"].(json.Number).String()] = true
			continue
		}
		kept = append(kept, s)
	}
	m["snapshots"] = kept
	var log []any
	for _, e := range m["snapshot-log"].([]any) {
		if !gone[e.(map[string]any)["snapshot-id"].(json.Number).String()] {
			log = append(log, e)
		}
	}
	m["snapshot-log"] = log
	out, err := json.Marshal(m)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, out, 0o644); err != nil {
		t.Fatal(err)
	}
}
