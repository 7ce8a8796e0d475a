package badinput

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/table"

	"github.com/icecdc/icecdc/internal/scenario"
)

// Base is a small real v3 table written by iceberg-go, and where its
// objects are. Every path is a local absolute path (no file:// scheme).
type Base struct {
	Dir       string
	Metadata  string // the current metadata.json
	Table     *table.Table
	Snapshots []Snap // main's ancestry, oldest first
	// Outside is another table of the same warehouse, outside this
	// table's location, whose rows hold Secret: a path that escapes the
	// table and is followed shows up as Secret in the output.
	Outside Snap
}

// Secret is the customer of every row of the outside table.
const Secret = "TOP-SECRET-0b5e1c"

// Snap is one snapshot of the base table and the objects it wrote.
type Snap struct {
	ID, ParentID, Seq int64
	Op                string
	ManifestList      string
	// Manifests are the manifests this snapshot wrote (added_snapshot_id).
	Manifests []Manifest
}

// Manifest is one manifest file and its entries as stored.
type Manifest struct {
	Path    string
	Content int // 0 data, 1 deletes
	Entries []Entry
}

// Entry is one manifest entry, as stored (inheritable fields may be null).
type Entry struct {
	Status     int // 0 existing, 1 added, 2 deleted
	Content    int // 0 data, 1 position deletes / deletion vector, 2 equality deletes
	Path       string
	Format     string
	Referenced string // referenced_data_file of a deletion vector
	Records    int64  // record_count
	Size       int64  // file_size_in_bytes
}

// Story is what the base table's commits do, one line per snapshot.
var Story = []string{
	"append orders 1-5",
	"merge-on-read delete of order 2 (deletion vector)",
	"update order 1 to shipped (position delta: vector + file storing _row_id)",
	"compaction (replace)",
	"equality delete of order 4",
	"merge-on-read delete of order 3 inside the compacted file",
	"append orders 6-7",
}

// BuildBase writes the base table under dir with iceberg-go through the
// scenario package and reads back where its objects are.
func BuildBase(ctx context.Context, dir string) (*Base, error) {
	env, err := scenario.NewEnv(ctx, dir)
	if err != nil {
		return nil, err
	}
	defer env.Close()
	tbl, err := env.CreateTable(ctx, table.Identifier{"bookshop", "orders"}, scenario.OrdersSchema(), nil, 3, nil)
	if err != nil {
		return nil, err
	}
	id := func(v int64) iceberg.BooleanExpression { return iceberg.EqualTo(iceberg.Reference("order_id"), v) }
	o := scenario.Order
	steps := []func(context.Context, *table.Table) (*table.Table, error){
		func(ctx context.Context, t *table.Table) (*table.Table, error) {
			return scenario.Append(ctx, t, []map[string]any{
				o(1, "ada", "new", 12.5), o(2, "bob", "new", 30), o(3, "cy", "new", 7.25),
				o(4, "dee", "new", 19.99), o(5, "eve", "new", 42),
			})
		},
		func(ctx context.Context, t *table.Table) (*table.Table, error) { return scenario.Delete(ctx, t, id(2)) },
		func(ctx context.Context, t *table.Table) (*table.Table, error) {
			return scenario.Update(ctx, t, id(1), func(r map[string]any) map[string]any { r["status"] = "shipped"; return r })
		},
		scenario.Compact,
		func(ctx context.Context, t *table.Table) (*table.Table, error) {
			return scenario.EqualityDelete(ctx, t, []string{"order_id"}, []map[string]any{{"order_id": int64(4)}})
		},
		func(ctx context.Context, t *table.Table) (*table.Table, error) { return scenario.Delete(ctx, t, id(3)) },
		func(ctx context.Context, t *table.Table) (*table.Table, error) {
			return scenario.Append(ctx, t, []map[string]any{o(6, "fay", "new", 5), o(7, "gus", "paid", 61.5)})
		},
	}
	for i, step := range steps {
		if tbl, err = step(ctx, tbl); err != nil {
			return nil, fmt.Errorf("base table: %s: %w", Story[i], err)
		}
	}
	b := &Base{Dir: env.Dir, Metadata: LocalPath(tbl.MetadataLocation()), Table: tbl}
	snaps, err := inventory(b.Metadata)
	if err != nil {
		return nil, err
	}
	if len(snaps) != len(Story) {
		return nil, fmt.Errorf("base table has %d snapshots, want %d", len(snaps), len(Story))
	}
	b.Snapshots = snaps

	loot, err := env.CreateTable(ctx, table.Identifier{"loot", "stash"}, scenario.OrdersSchema(), nil, 3, nil)
	if err != nil {
		return nil, err
	}
	if loot, err = scenario.Append(ctx, loot, []map[string]any{o(1, Secret, Secret, 1), o(2, Secret, Secret, 2)}); err != nil {
		return nil, fmt.Errorf("outside table: %w", err)
	}
	out, err := inventory(LocalPath(loot.MetadataLocation()))
	if err != nil {
		return nil, err
	}
	b.Outside = out[0]
	return b, nil
}

// LoadBase finds the base table BuildBase wrote under warehouse (its
// newest metadata.json), without the iceberg-go table handle.
func LoadBase(warehouse string) (*Base, error) {
	files, err := filepath.Glob(filepath.Join(warehouse, "bookshop.db", "orders", "metadata", "*.metadata.json"))
	if err != nil || len(files) == 0 {
		return nil, fmt.Errorf("no base table under %s", warehouse)
	}
	slices.Sort(files)
	b := &Base{Dir: filepath.Dir(warehouse), Metadata: files[len(files)-1]}
	if b.Snapshots, err = inventory(b.Metadata); err != nil {
		return nil, err
	}
	loot, _ := filepath.Glob(filepath.Join(warehouse, "loot.db", "stash", "metadata", "*.metadata.json"))
	if len(loot) > 0 {
		slices.Sort(loot)
		out, err := inventory(loot[len(loot)-1])
		if err != nil {
			return nil, err
		}
		b.Outside = out[0]
	}
	return b, nil
}

// LocalPath strips the file:// scheme.
func LocalPath(loc string) string {
	return strings.TrimPrefix(strings.TrimPrefix(loc, "file://"), "file:")
}

// inventory reads the metadata, manifest lists and manifests as stored.
func inventory(metadata string) ([]Snap, error) {
	raw, err := os.ReadFile(metadata)
	if err != nil {
		return nil, err
	}
	var md struct {
		Snapshots []struct {
			ID           int64             `json:"snapshot-id"`
			Parent       int64             `json:"parent-snapshot-id"`
			Seq          int64             `json:"sequence-number"`
			ManifestList string            `json:"manifest-list"`
			Summary      map[string]string `json:"summary"`
		} `json:"snapshots"`
	}
	if err := json.Unmarshal(raw, &md); err != nil {
		return nil, fmt.Errorf("metadata %s: %w", metadata, err)
	}
	var snaps []Snap
	for _, s := range md.Snapshots {
		sn := Snap{ID: s.ID, ParentID: s.Parent, Seq: s.Seq, Op: s.Summary["operation"], ManifestList: LocalPath(s.ManifestList)}
		list, err := ReadAvro(sn.ManifestList)
		if err != nil {
			return nil, err
		}
		for _, r := range list.Records {
			if r["added_snapshot_id"] != s.ID {
				continue
			}
			m := Manifest{Path: LocalPath(r["manifest_path"].(string)), Content: asInt(r["content"])}
			mf, err := ReadAvro(m.Path)
			if err != nil {
				return nil, err
			}
			for _, e := range mf.Records {
				df := e["data_file"].(map[string]any)
				en := Entry{Status: asInt(e["status"]), Content: asInt(df["content"]),
					Path: LocalPath(df["file_path"].(string)), Format: fmt.Sprint(df["file_format"])}
				en.Records, _ = df["record_count"].(int64)
				en.Size, _ = df["file_size_in_bytes"].(int64)
				if ref, ok := df["referenced_data_file"].(string); ok {
					en.Referenced = LocalPath(ref)
				}
				m.Entries = append(m.Entries, en)
			}
			sn.Manifests = append(sn.Manifests, m)
		}
		snaps = append(snaps, sn)
	}
	return snaps, nil
}

// Find returns the first entry written by snapshot k whose content is
// content (0 data, 1 deletion vector, 2 equality deletes) and status added,
// with the manifest holding it.
func (b *Base) Find(k, content int) (Manifest, Entry, bool) {
	for _, m := range b.Snapshots[k].Manifests {
		for _, e := range m.Entries {
			if e.Content == content && e.Status == 1 {
				return m, e, true
			}
		}
	}
	return Manifest{}, Entry{}, false
}

func asInt(v any) int {
	switch n := v.(type) {
	case int32:
		return int(n)
	case int64:
		return int(n)
	case int:
		return n
	}
	return -1
}
