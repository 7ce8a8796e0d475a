package iceberg

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/table"

	"github.com/icecdc/icecdc/cdc"
	"github.com/icecdc/icecdc/cdc/cdctest"
	"github.com/icecdc/icecdc/internal/scenario"
	"github.com/icecdc/icecdc/state"
	"github.com/icecdc/icecdc/values"
)

// ordersInfo is a source table of three columns, id the key.
func ordersInfo() cdc.TableInfo {
	return cdc.TableInfo{Catalog: "lake", Namespace: "shop", Name: "orders", UUID: "00000000-0000-4000-8000-00000000000a",
		Schema: iceberg.NewSchemaWithIdentifiers(0, []int{1},
			iceberg.NestedField{ID: 1, Name: "id", Type: iceberg.PrimitiveTypes.Int64, Required: true},
			iceberg.NestedField{ID: 2, Name: "status", Type: iceberg.PrimitiveTypes.String},
			iceberg.NestedField{ID: 3, Name: "amount", Type: iceberg.DecimalTypeOf(10, 2)}),
		KeyFields: []string{"id"}}
}

func order(id int64, status string, cents int64) values.Row {
	return values.Row{id, status, values.Decimal{Unscaled: fmt.Sprint(cents), Scale: 2}}
}

// history scripts n snapshots: inserts, then updates and deletes of
// earlier rows, so every op and both images appear.
func history(src *cdctest.Source, n int) {
	live := map[int64]values.Row{}
	next := int64(1)
	for s := range n {
		var evs []cdc.Event
		for range 4 {
			r := order(next, "new", next*100)
			evs = append(evs, cdc.Event{Op: cdc.OpCreate, RowID: next, After: r})
			live[next] = r
			next++
		}
		if s > 0 {
			id := next - 6 // a row of the previous snapshot
			after := order(id, fmt.Sprintf("paid-%d", s), id*100+1)
			evs = append(evs, cdc.Event{Op: cdc.OpUpdate, RowID: id, Before: live[id], After: after})
			live[id] = after
			del := next - 7
			evs = append(evs, cdc.Event{Op: cdc.OpDelete, RowID: del, Before: live[del]})
			delete(live, del)
		}
		src.Append(evs...)
	}
}

// changeRow is one row of a target table, as the tests compare them.
type changeRow struct {
	EventID, ChangeType string
	ID                  int64
	Status              string
	Seq, RowID          int64
}

// expected returns the rows src's history becomes.
func expected(t *testing.T, src *cdctest.Source) []changeRow {
	t.Helper()
	var out []changeRow
	info := src.Info()
	snaps, err := src.Snapshots(context.Background(), 0, 1<<62)
	if err != nil {
		t.Fatal(err)
	}
	for _, si := range snaps {
		c, err := src.Commit(context.Background(), si)
		if err != nil {
			t.Fatal(err)
		}
		for _, e := range c.Events {
			types, images, err := changeRows(e.Op, e.Before, e.After)
			if err != nil {
				t.Fatal(err)
			}
			for k, ct := range types {
				rowID := e.RowID
				if ct == UpdateBefore {
					rowID = beforeRowID(&e)
				}
				out = append(out, changeRow{EventID: cdc.EventID(info.UUID, si.SequenceNumber, e.RowID, e.Op), ChangeType: ct,
					ID: images[k][0].(int64), Status: images[k][1].(string), Seq: si.SequenceNumber, RowID: rowID})
			}
		}
	}
	sortRows(out)
	return out
}

func sortRows(rows []changeRow) {
	sort.Slice(rows, func(i, j int) bool {
		if rows[i].EventID != rows[j].EventID {
			return rows[i].EventID < rows[j].EventID
		}
		return rows[i].ChangeType < rows[j].ChangeType
	})
}

// readTarget scans the target table with iceberg-go.
func readTarget(t *testing.T, env *scenario.Env, name string) ([]changeRow, *table.Table) {
	t.Helper()
	ctx := context.Background()
	ns, tn, _ := splitName(name)
	tbl, err := env.Catalog.LoadTable(ctx, append(append(table.Identifier{}, ns...), tn))
	if err != nil {
		t.Fatal(err)
	}
	if tbl.CurrentSnapshot() == nil {
		return nil, tbl
	}
	scan := tbl.Scan()
	_, recs, err := scan.ToArrowRecords(ctx)
	if err != nil {
		t.Fatal(err)
	}
	var out []changeRow
	for rec, err := range recs {
		if err != nil {
			t.Fatal(err)
		}
		col := func(name string) int {
			idx := rec.Schema().FieldIndices(name)
			if len(idx) != 1 {
				t.Fatalf("target %s: no column %s", name, name)
			}
			return idx[0]
		}
		ev, ct, id, st, seq, rid := rec.Column(col(ColEventID)).(*array.String), rec.Column(col(ColChangeType)).(*array.String),
			rec.Column(col("id")).(*array.Int64), rec.Column(col("status")).(*array.String),
			rec.Column(col(ColSequenceNumber)).(*array.Int64), rec.Column(col(ColRowID)).(*array.Int64)
		for i := range int(rec.NumRows()) {
			out = append(out, changeRow{EventID: ev.Value(i), ChangeType: ct.Value(i), ID: id.Value(i), Status: st.Value(i),
				Seq: seq.Value(i), RowID: rid.Value(i)})
		}
		rec.Release()
	}
	sortRows(out)
	return out, tbl
}

// rig is a source table, a state file and a warehouse with a SQL catalog.
type rig struct {
	t     *testing.T
	env   *scenario.Env
	src   *cdctest.Source
	state string
}

func newRig(t *testing.T) *rig {
	env, err := scenario.NewEnv(context.Background(), t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { env.Close() })
	return &rig{t: t, env: env, src: cdctest.New(ordersInfo()), state: filepath.Join(t.TempDir(), "state.db")}
}

func (r *rig) config() Config {
	return Config{Table: "audit.{table}_changes", Pipeline: "p", CommitInterval: time.Hour,
		Catalog: CatalogConfig{Name: scenario.CatalogName, Type: "sql", URI: r.env.CatalogURI, Warehouse: r.env.Warehouse},
		Logger:  slog.New(slog.DiscardHandler)}
}

// run delivers the source's history once through sink s (closed after,
// unless keep); it returns the pipeline's error.
func (r *rig) run(s *Sink, chunk int, closeSink bool) error {
	r.t.Helper()
	store, err := state.Open(r.state, state.Options{})
	if err != nil {
		r.t.Fatal(err)
	}
	defer store.Close()
	p := &cdc.Pipeline{Name: "p", Tables: []cdc.TableSpec{{Name: "shop.orders", Source: r.src, Start: cdc.Start{Kind: cdc.StartEarliest}}},
		Encoder: Encoder{}, Sink: s, Store: store, Once: true, Poll: time.Millisecond, ChunkSize: chunk,
		RetryInitial: time.Millisecond, RetryMax: time.Millisecond, Log: testLog(r.t)}
	err = p.Run(context.Background())
	if closeSink {
		if cerr := s.Close(context.Background()); cerr != nil {
			r.t.Fatalf("close: %v", cerr)
		}
	}
	return err
}

var errCrash = errors.New("killed between writing the data files and committing them")

// testLog logs to the test's output.
func testLog(t *testing.T) *slog.Logger {
	return slog.New(slog.NewTextHandler(tlogWriter{t}, nil))
}

type tlogWriter struct{ t *testing.T }

func (w tlogWriter) Write(p []byte) (int, error) {
	w.t.Log(strings.TrimSpace(string(p)))
	return len(p), nil
}
