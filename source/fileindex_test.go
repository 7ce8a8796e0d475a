package source_test

import (
	"context"
	"fmt"
	"path/filepath"
	"reflect"
	"testing"

	"github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/table"

	"github.com/icecdc/icecdc/internal/scenario"
	"github.com/icecdc/icecdc/source"
)

// memIndex is an IndexStore in memory; a staged change is stored at once.
type memIndex struct {
	uuid string
	recs map[string][]byte
}

func (m *memIndex) LoadFileIndex(uuid string) (map[string][]byte, error) {
	if uuid != m.uuid {
		return nil, nil
	}
	return m.recs, nil
}

func (m *memIndex) StageFileIndex(uuid string, put map[string][]byte, drop []string, reset bool) {
	if reset || uuid != m.uuid {
		m.uuid, m.recs = uuid, map[string][]byte{}
	}
	for _, d := range drop {
		delete(m.recs, d)
	}
	for k, v := range put {
		m.recs[k] = v
	}
}

// A data file found through a stored index gives the same events as a
// search of every manifest, and so does a damaged or foreign index (which
// is rebuilt, never trusted).
func TestStoredFileIndex(t *testing.T) {
	ctx := context.Background()
	env, err := scenario.NewEnv(ctx, filepath.Join(t.TempDir(), "lake"))
	if err != nil {
		t.Fatal(err)
	}
	defer env.Close()
	tbl, err := env.CreateTable(ctx, table.Identifier{"shop", "orders"}, scenario.OrdersSchema(), nil, 3, nil)
	if err != nil {
		t.Fatal(err)
	}
	for i := int64(0); i < 4; i++ {
		if tbl, err = scenario.Append(ctx, tbl, orders(i*10+1, i*10+10)); err != nil {
			t.Fatal(err)
		}
	}
	if tbl, err = scenario.AppendAndDelete(ctx, tbl, orders(41, 42), iceberg.LessThanEqual(iceberg.Reference("order_id"), int64(3))); err != nil {
		t.Fatal(err)
	}
	events := func(store source.IndexStore) string {
		t.Helper()
		src, err := source.Open(ctx, source.Options{MetadataPath: tbl.MetadataLocation(), FileIndex: store})
		if err != nil {
			t.Fatal(err)
		}
		defer src.Close()
		head, _ := src.Head()
		c, err := src.Commit(ctx, head)
		if err != nil {
			t.Fatal(err)
		}
		out := ""
		for _, e := range c.Events {
			if err := e.MaterializeRows(); err != nil {
				t.Fatal(err)
			}
			out += fmt.Sprintf("%c %d %v %v\n", e.Op, e.RowID, e.Before, e.After)
		}
		return out
	}
	want := events(nil)
	if want == "" {
		t.Fatal("the commit has no events")
	}
	store := &memIndex{}
	if got := events(store); got != want {
		t.Fatalf("first run with a store:\n%s\nwant:\n%s", got, want)
	}
	if len(store.recs) != 5 {
		t.Fatalf("stored %d manifests, want the 5 of the head", len(store.recs))
	}
	stored := map[string][]byte{}
	for k, v := range store.recs {
		stored[k] = append([]byte(nil), v...)
	}
	if got := events(store); got != want {
		t.Fatalf("restart with the stored index:\n%s\nwant:\n%s", got, want)
	}
	if !reflect.DeepEqual(store.recs, stored) {
		t.Fatal("a restart that found everything in the index rewrote it")
	}
	damage := map[string]func([]byte){
		"flipped byte":  func(b []byte) { b[len(b)/2] ^= 0xff },
		"other version": func(b []byte) { b[0] = 99 },
		"truncated":     func(b []byte) { clear(b) },
	}
	for name, f := range damage {
		t.Run(name, func(t *testing.T) {
			bad := &memIndex{uuid: store.uuid, recs: map[string][]byte{}}
			for k, v := range stored {
				v = append([]byte(nil), v...)
				f(v)
				bad.recs[k] = v
			}
			if got := events(bad); got != want {
				t.Fatalf("with a damaged index:\n%s\nwant:\n%s", got, want)
			}
			if !reflect.DeepEqual(bad.recs, stored) {
				t.Fatal("the damaged index was not rebuilt")
			}
		})
	}
}
