package iceberg

import (
	"context"
	"fmt"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/apache/iceberg-go"

	"github.com/icecdc/icecdc/cdc"
	"github.com/icecdc/icecdc/internal/scenario"
	"github.com/icecdc/icecdc/state"
	"github.com/icecdc/icecdc/values"
)

// TestChangelog: a history of inserts, updates and deletes becomes the
// changelog view's rows, an update two of them, in a table the sink
// created (format version 2, partitioned by the commit's day), whose
// current snapshot holds the last checkpoint.
func TestChangelog(t *testing.T) {
	r := newRig(t)
	history(r.src, 5)
	s, err := New(r.config())
	if err != nil {
		t.Fatal(err)
	}
	if err := r.run(s, 3, true); err != nil {
		t.Fatal(err)
	}
	got, tbl := readTarget(t, r.env, "audit.orders_changes")
	want := expected(t, r.src)
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("target rows:\n got %v\nwant %v", got, want)
	}
	if v := tbl.Metadata().Version(); v != 2 {
		t.Errorf("format version %d, want 2", v)
	}
	spec := tbl.Spec()
	if spec.NumFields() != 1 || spec.Field(0).Transform.String() != "day" {
		t.Errorf("partition spec %v, want day(_commit_timestamp)", spec)
	}
	for _, m := range metaFields {
		f, ok := tbl.Schema().FindFieldByName(m.Name)
		if !ok || !f.Type.Equals(m.Type) {
			t.Errorf("column %s: %v, want %s", m.Name, f, m.Type)
		}
	}
	cp, found, err := lastCheckpoint(tbl, CheckpointKey("p", ordersInfo()))
	if err != nil || !found {
		t.Fatalf("checkpoint in the target: %v %v", found, err)
	}
	head, _ := r.src.Head()
	if !cp.Done || cp.Seq != head.SequenceNumber || cp.TableUUID != ordersInfo().UUID {
		t.Errorf("checkpoint %s, want the head %d done", cp, head.SequenceNumber)
	}
	// The interval is an hour: past the first, commits came from the
	// byte bound (none here) and Close, not one per batch.
	if n := len(tbl.Metadata().Snapshots()); n > 3 {
		t.Errorf("%d snapshots for one run: want the first commit and the one of Close", n)
	}
}

// TestCrashBetweenFilesAndCommit: a process that dies after writing a
// commit's data files and before the catalog took them, with its state
// file ahead of the target (rows buffered, acknowledged to the pipeline),
// leaves orphan files only; the next run restores the position from the
// target and every event lands exactly once.
func TestCrashBetweenFilesAndCommit(t *testing.T) {
	r := newRig(t)
	history(r.src, 8)
	cfg := r.config()
	cfg.CommitBytes = 3000 // a commit every few batches
	s1, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	commits, dead := 0, false
	s1.beforeCommit = func(*target) error {
		commits++
		if commits >= 3 {
			dead = true
		}
		if dead {
			return errCrash
		}
		return nil
	}
	if err := r.run(s1, 3, false); err == nil || !strings.Contains(err.Error(), errCrash.Error()) {
		t.Fatalf("first run: %v, want the crash", err)
	}
	// The state file is ahead of the target: that is what a crash leaves.
	store, err := state.Open(r.state, state.Options{})
	if err != nil {
		t.Fatal(err)
	}
	stored, _, err := store.Load(context.Background(), "p", "shop.orders")
	store.Close()
	if err != nil {
		t.Fatal(err)
	}
	_, tbl := readTarget(t, r.env, "audit.orders_changes")
	inTarget, found, err := lastCheckpoint(tbl, CheckpointKey("p", ordersInfo()))
	if err != nil || !found {
		t.Fatalf("target checkpoint: %v %v", found, err)
	}
	if !inTarget.Before(stored) {
		t.Fatalf("the state file (%s) is not ahead of the target (%s): the crash tests nothing", stored, inTarget)
	}

	s2, err := New(r.config())
	if err != nil {
		t.Fatal(err)
	}
	if err := r.run(s2, 3, true); err != nil {
		t.Fatal(err)
	}
	got, _ := readTarget(t, r.env, "audit.orders_changes")
	if want := expected(t, r.src); !reflect.DeepEqual(got, want) {
		t.Fatalf("after the restart:\n got %v\nwant %v", got, want)
	}
}

// TestConcurrentWriter: another writer commits to the target between the
// sink's load of it and its commit; the sink's commit is retried on the
// new head, the other writer's rows stay, the sink's land once.
func TestConcurrentWriter(t *testing.T) {
	r := newRig(t)
	history(r.src, 4)
	cfg := r.config()
	cfg.CommitBytes = 1000
	s, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	other := 0
	s.beforeCommit = func(tg *target) error {
		if other > 0 || tg.commits == 0 {
			return nil
		}
		other++
		ctx := context.Background()
		tbl, err := r.env.LoadTable(ctx, tg.tbl.Identifier())
		if err != nil {
			return err
		}
		_, err = scenario.Append(ctx, tbl, []map[string]any{{"id": int64(999), "status": "foreign",
			ColChangeType: Insert, ColChangeOrdinal: int64(0), ColCommitSnapshot: int64(0), ColSequenceNumber: int64(0),
			ColRowID: int64(999), ColEventID: "other-writer", ColCommitTimestamp: time.UnixMilli(0).UTC()}})
		return err
	}
	if err := r.run(s, 3, true); err != nil {
		t.Fatal(err)
	}
	if other != 1 {
		t.Fatalf("the other writer committed %d times", other)
	}
	if n := s.retried.Load(); n != 1 {
		t.Errorf("the sink retried %d commits, want 1 (on the other writer's head)", n)
	}
	got, tbl := readTarget(t, r.env, "audit.orders_changes")
	want := append(expected(t, r.src), changeRow{EventID: "other-writer", ChangeType: Insert, ID: 999, Status: "foreign", RowID: 999})
	sortRows(want)
	if !reflect.DeepEqual(got, want) {
		for _, sn := range tbl.Metadata().Snapshots() {
			t.Logf("snapshot %d parent %v seq %d %v", sn.SnapshotID, sn.ParentSnapshotID, sn.SequenceNumber, sn.Summary)
		}
		t.Fatalf("target rows:\n got %v\nwant %v", got, want)
	}
	cp, found, err := lastCheckpoint(tbl, CheckpointKey("p", ordersInfo()))
	head, _ := r.src.Head()
	if err != nil || !found || cp.Seq != head.SequenceNumber || !cp.Done {
		t.Fatalf("checkpoint %s (%v, %v), want the head", cp, found, err)
	}
	// Another writer's commit after the sink's last: a restart walks past
	// it to the sink's checkpoint.
	if _, err := scenario.Append(context.Background(), tbl, []map[string]any{{"id": int64(1000), "status": "foreign",
		ColChangeType: Insert, ColChangeOrdinal: int64(0), ColCommitSnapshot: int64(0), ColSequenceNumber: int64(0),
		ColRowID: int64(1000), ColEventID: "other-writer-2", ColCommitTimestamp: time.UnixMilli(0).UTC()}}); err != nil {
		t.Fatal(err)
	}
	s2, err := New(r.config())
	if err != nil {
		t.Fatal(err)
	}
	defer s2.Close(context.Background())
	restored, found, err := s2.Restore(context.Background(), "p", ordersInfo())
	if err != nil || !found || restored.Seq != head.SequenceNumber || !restored.Done {
		t.Fatalf("restored %s (%v, %v), want the head", restored, found, err)
	}
}

// TestSchemaEvolution: a column the source adds is added to the target,
// a widened type widened; earlier rows read it as null.
func TestSchemaEvolution(t *testing.T) {
	r := newRig(t)
	s, err := New(r.config())
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	info := ordersInfo()
	if _, _, err := s.Restore(ctx, "p", info); err != nil {
		t.Fatal(err)
	}
	write := func(info cdc.TableInfo, seq int64, rows ...values.Row) {
		t.Helper()
		c := &cdc.Commit{Table: info, Snapshot: cdc.SnapshotInfo{ID: seq, SequenceNumber: seq, TimestampMs: 1_700_000_000_000}}
		b := &cdc.Batch{Table: info, Snapshot: c.Snapshot, Checkpoint: cdc.Checkpoint{TableUUID: info.UUID, Seq: seq, Done: true}}
		for i, row := range rows {
			e := cdc.Event{Op: cdc.OpCreate, RowID: seq*100 + int64(i), After: row, Index: i}
			v, err := Encoder{}.AppendValue(nil, c, &e, 0)
			if err != nil {
				t.Fatal(err)
			}
			b.Messages = append(b.Messages, cdc.Message{ID: cdc.EventID(info.UUID, seq, e.RowID, e.Op), Op: e.Op, Index: i, Value: v})
		}
		if err := s.Write(ctx, b); err != nil {
			t.Fatal(err)
		}
	}
	write(info, 1, order(1, "new", 100))
	wider := info
	wider.Schema = iceberg.NewSchemaWithIdentifiers(1, []int{1},
		iceberg.NestedField{ID: 1, Name: "id", Type: iceberg.PrimitiveTypes.Int64, Required: true},
		iceberg.NestedField{ID: 2, Name: "status", Type: iceberg.PrimitiveTypes.String},
		iceberg.NestedField{ID: 3, Name: "amount", Type: iceberg.DecimalTypeOf(12, 2)},
		iceberg.NestedField{ID: 4, Name: "note", Type: iceberg.PrimitiveTypes.String})
	write(wider, 2, values.Row{int64(2), "new", values.Decimal{Unscaled: "200", Scale: 2}, "gift"})
	if err := s.Close(ctx); err != nil {
		t.Fatal(err)
	}
	_, tbl := readTarget(t, r.env, "audit.orders_changes")
	f, ok := tbl.Schema().FindFieldByName("note")
	if !ok || !f.Type.Equals(iceberg.PrimitiveTypes.String) {
		t.Fatalf("note: %v %v", f, ok)
	}
	if f, _ := tbl.Schema().FindFieldByName("amount"); !f.Type.Equals(iceberg.DecimalTypeOf(12, 2)) {
		t.Fatalf("amount is %s, want decimal(12, 2)", f.Type)
	}
	// A narrowed type stops the table with one line naming target and column.
	s2, err := New(r.config())
	if err != nil {
		t.Fatal(err)
	}
	defer s2.Close(ctx)
	narrowed := info
	narrowed.Schema = iceberg.NewSchema(2,
		iceberg.NestedField{ID: 1, Name: "id", Type: iceberg.PrimitiveTypes.Int32, Required: true})
	if _, _, err := s2.Restore(ctx, "p", narrowed); err != nil {
		t.Fatal(err)
	}
	c := &cdc.Commit{Table: narrowed, Snapshot: cdc.SnapshotInfo{ID: 3, SequenceNumber: 3}}
	e := cdc.Event{Op: cdc.OpCreate, RowID: 1, After: values.Row{int32(1)}}
	v, _ := Encoder{}.AppendValue(nil, c, &e, 0)
	err = s2.Write(ctx, &cdc.Batch{Table: narrowed, Snapshot: c.Snapshot, Messages: []cdc.Message{{ID: "x", Op: cdc.OpCreate, Value: v}}})
	if err == nil || !cdc.IsPermanent(err) || !strings.Contains(err.Error(), "target audit.orders_changes: column id is long in the target and int in the source") {
		t.Fatalf("narrowed type: %v", err)
	}
}

// TestForeignTarget: a target that exists without the sink's columns
// stops the table with one line naming it; nothing is written to it.
func TestForeignTarget(t *testing.T) {
	r := newRig(t)
	ctx := context.Background()
	if err := r.env.Catalog.CreateNamespace(ctx, []string{"audit"}, nil); err != nil {
		t.Fatal(err)
	}
	foreign, err := r.env.CreateTable(ctx, []string{"audit", "orders_changes"}, ordersInfo().Schema, nil, 2, nil)
	if err != nil {
		t.Fatal(err)
	}
	history(r.src, 2)
	s, err := New(r.config())
	if err != nil {
		t.Fatal(err)
	}
	err = r.run(s, 3, true)
	if err == nil || !strings.Contains(err.Error(), "iceberg sink: target audit.orders_changes: column _change_type: missing: the table was not made by the iceberg sink") {
		t.Fatalf("foreign target: %v", err)
	}
	after, err := r.env.LoadTable(ctx, foreign.Identifier())
	if err != nil {
		t.Fatal(err)
	}
	if after.CurrentSnapshot() != nil {
		t.Errorf("the foreign table got snapshot %d", after.CurrentSnapshot().SnapshotID)
	}
}

// TestTargetOutsideAllowedLocations: a target whose location is outside
// allowed_locations is not written: one line names it.
func TestTargetOutsideAllowedLocations(t *testing.T) {
	r := newRig(t)
	history(r.src, 1)
	cfg := r.config()
	cfg.PipelineCatalog.AllowedLocations = []string{filepath.Join(r.env.Dir, "elsewhere")}
	s, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	err = r.run(s, 3, true)
	if err == nil || !strings.Contains(err.Error(), "iceberg sink: target audit.orders_changes: location ") ||
		!strings.HasSuffix(err.Error(), ": outside allowed_locations") {
		t.Fatalf("target outside: %v", err)
	}
	if rows, _ := readTarget(t, r.env, "audit.orders_changes"); len(rows) != 0 {
		t.Errorf("%d rows written outside allowed_locations", len(rows))
	}
}

// TestPairedUpdateRowIDs: an update paired from a delete and an insert of
// one key (a writer that minted a new row id) is two rows whose
// _source_row_id are the row id the row had (UPDATE_BEFORE) and the new
// one (UPDATE_AFTER): each row id's rows are its history, so the head
// rebuilt by _source_row_id drops the old row as a delete would.
func TestPairedUpdateRowIDs(t *testing.T) {
	r := newRig(t)
	r.src.Append(cdc.Event{Op: cdc.OpCreate, RowID: 1, After: order(1, "new", 100)},
		cdc.Event{Op: cdc.OpCreate, RowID: 2, After: order(2, "new", 200)})
	r.src.Append(cdc.Event{Op: cdc.OpUpdate, RowID: 7, Before: order(1, "new", 100), After: order(1, "paid", 100),
		Source: "deletion-vector", PairedRowID: 1},
		cdc.Event{Op: cdc.OpUpdate, RowID: 2, Before: order(2, "new", 200), After: order(2, "paid", 200)})
	s, err := New(r.config())
	if err != nil {
		t.Fatal(err)
	}
	if err := r.run(s, 3, true); err != nil {
		t.Fatal(err)
	}
	got, _ := readTarget(t, r.env, "audit.orders_changes")
	if want := expected(t, r.src); !reflect.DeepEqual(got, want) {
		t.Fatalf("target rows:\n got %v\nwant %v", got, want)
	}
	ids := map[string]int64{}
	for _, row := range got {
		if row.Seq == 2 {
			ids[fmt.Sprintf("%d %s", row.ID, row.ChangeType)] = row.RowID
		}
	}
	want := map[string]int64{"1 UPDATE_BEFORE": 1, "1 UPDATE_AFTER": 7, "2 UPDATE_BEFORE": 2, "2 UPDATE_AFTER": 2}
	if !reflect.DeepEqual(ids, want) {
		t.Errorf("_source_row_id of the updates' rows: %v, want %v", ids, want)
	}
}
