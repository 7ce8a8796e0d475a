package source_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/apache/iceberg-go/table"

	"github.com/icecdc/icecdc/internal/scenario"
	"github.com/icecdc/icecdc/source"
)

// Tests of where a table's files may be read from and what may be read
// there: the metadata location allows no other read, symbolic links are
// confined, and a file that is not a regular file is refused at once.

// restServing is a REST catalog serving one table, shop.orders, with the
// metadata inline and metadataLoc as its metadata location.
func restServing(t *testing.T, metadata []byte, metadataLoc string) string {
	t.Helper()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		switch r.URL.Path {
		case "/v1/config":
			io.WriteString(w, `{"defaults":{},"overrides":{}}`)
		case "/v1/namespaces/shop/tables/orders":
			json.NewEncoder(w).Encode(map[string]any{"metadata-location": metadataLoc, "metadata": json.RawMessage(metadata)})
		default:
			http.NotFound(w, r)
		}
	}))
	t.Cleanup(srv.Close)
	return srv.URL
}

func copyFile(t *testing.T, from, to string) {
	t.Helper()
	b, err := os.ReadFile(from)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(to, b, 0o644); err != nil {
		t.Fatal(err)
	}
}

// TestMetadataLocationAllowsNoOtherRead: the file named as the metadata
// location may be read as the metadata and as nothing else.
func TestMetadataLocationAllowsNoOtherRead(t *testing.T) {
	f := appended(t)
	snapID := fmt.Sprint(f.tbl.CurrentSnapshot().SnapshotID)
	loc := f.tbl.Metadata().Location()
	// A REST catalog's metadata comes inline: its metadata location is a
	// name only. Naming a copy of the manifest list outside the table as
	// both read that copy, exit 0, with the events.
	t.Run("rest, the manifest list's copy as both", func(t *testing.T) {
		outside := filepath.Join(t.TempDir(), "snap.avro")
		copyFile(t, strings.TrimPrefix(f.tbl.CurrentSnapshot().ManifestList, "file://"), outside)
		meta, err := os.ReadFile(f.hostileMetadata(withManifestList("file://" + outside)))
		if err != nil {
			t.Fatal(err)
		}
		uri := restServing(t, meta, "file://"+outside)
		for _, allowed := range [][]string{nil, {loc}} {
			src, err := source.Open(f.ctx, source.Options{CatalogType: "rest", CatalogURI: uri, Table: "shop.orders", AllowedLocations: allowed})
			if err != nil {
				t.Fatal(err)
			}
			_, err = run(t, src, false)
			wantRefused(t, err, 0, "manifest list file://"+outside+" of snapshot "+snapID+": outside the allowed locations")
			src.Close()
		}
	})
	// A metadata file outside the allowed locations is read (the user
	// named it), but not again as its own manifest list.
	t.Run("metadata file naming itself", func(t *testing.T) {
		outside := filepath.Join(t.TempDir(), "v9.metadata.json")
		copyFile(t, f.hostileMetadata(withManifestList("file://"+outside)), outside)
		_, err := run(t, f.openMetadata(outside, []string{loc}), false)
		wantRefused(t, err, 0, "manifest list file://"+outside+" of snapshot "+snapID+": outside the allowed locations (allowed_locations "+loc+")")
	})
	// Whether an outside file exists must not show: the refusal comes
	// before the file system is asked.
	t.Run("existence is not told", func(t *testing.T) {
		dir := t.TempDir()
		exists := secret(t, dir)
		var msgs []string
		for _, p := range []string{exists, filepath.Join(dir, "absent")} {
			meta, err := os.ReadFile(f.hostileMetadata(withManifestList(p)))
			if err != nil {
				t.Fatal(err)
			}
			src, err := source.Open(f.ctx, source.Options{CatalogType: "rest", CatalogURI: restServing(t, meta, p), Table: "shop.orders"})
			if err != nil {
				t.Fatal(err)
			}
			_, err = run(t, src, false)
			wantRefused(t, err, 0, "manifest list "+p+" of snapshot "+snapID+": outside the allowed locations")
			wantNoContent(t, err)
			msgs = append(msgs, strings.ReplaceAll(err.Error(), p, "PATH"))
			src.Close()
		}
		if msgs[0] != msgs[1] {
			t.Fatalf("an existing and a missing file are refused differently:\n%s\n%s", msgs[0], msgs[1])
		}
	})
}

// TestSymlinkOutOfTable: a symbolic link inside the table to a file
// outside is refused as that file would be, naming where it leads; a link
// that stays inside is followed.
func TestSymlinkOutOfTable(t *testing.T) {
	f := appended(t)
	snapID := fmt.Sprint(f.tbl.CurrentSnapshot().SnapshotID)
	list := f.tbl.CurrentSnapshot().ManifestList
	outside := filepath.Join(t.TempDir(), "snap.avro")
	copyFile(t, strings.TrimPrefix(list, "file://"), outside)
	t.Run("to a file outside", func(t *testing.T) {
		link := filepath.Join(f.tableDir(), "metadata", "link-out.avro")
		if err := os.Symlink(outside, link); err != nil {
			t.Fatal(err)
		}
		_, err := run(t, f.openMetadata(f.hostileMetadata(withManifestList(link)), nil), false)
		wantRefused(t, err, 0, "manifest list "+link+" of snapshot "+snapID+": a symbolic link to "+outside+", outside the allowed locations (table location "+f.tbl.Metadata().Location())
	})
	t.Run("through a linked directory", func(t *testing.T) {
		dir := filepath.Join(f.tableDir(), "linked")
		if err := os.Symlink(filepath.Dir(outside), dir); err != nil {
			t.Fatal(err)
		}
		via := filepath.Join(dir, filepath.Base(outside))
		_, err := run(t, f.openMetadata(f.hostileMetadata(withManifestList(via)), nil), false)
		wantRefused(t, err, 0, "manifest list "+via+" of snapshot "+snapID+": a symbolic link to "+outside+", outside the allowed locations")
	})
	t.Run("inside", func(t *testing.T) {
		link := filepath.Join(f.tableDir(), "metadata", "link-in.avro")
		if err := os.Symlink(strings.TrimPrefix(list, "file://"), link); err != nil {
			t.Fatal(err)
		}
		if _, err := run(t, f.openMetadata(f.hostileMetadata(withManifestList(link)), nil), false); err != nil {
			t.Fatal(err)
		}
	})
	t.Run("allowed where it leads", func(t *testing.T) {
		link := filepath.Join(f.tableDir(), "metadata", "link-allowed.avro")
		if err := os.Symlink(outside, link); err != nil {
			t.Fatal(err)
		}
		meta := f.hostileMetadata(withManifestList(link))
		if _, err := run(t, f.openMetadata(meta, []string{f.tbl.Metadata().Location(), filepath.Dir(outside)}), false); err != nil {
			t.Fatal(err)
		}
	})
}

// hangGuard fails the test if fn has not returned after a generous time:
// it detects a hang, it measures nothing.
func hangGuard(t *testing.T, what string, fn func() error) error {
	t.Helper()
	done := make(chan error, 1)
	go func() { done <- fn() }()
	select {
	case err := <-done:
		return err
	case <-time.After(20 * time.Second):
		t.Fatalf("%s blocked", what)
		return nil
	}
}

// TestNotRegularFile: a manifest list that is a named pipe, a directory or
// a device is refused at once, naming the file and what it is, and so is
// such a metadata file.
func TestNotRegularFile(t *testing.T) {
	f := appended(t)
	snapID := fmt.Sprint(f.tbl.CurrentSnapshot().SnapshotID)
	dir := filepath.Join(f.tableDir(), "metadata")
	fifo := filepath.Join(dir, "fifo.avro")
	if err := syscall.Mkfifo(fifo, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Mkdir(filepath.Join(dir, "dir.avro"), 0o755); err != nil {
		t.Fatal(err)
	}
	sock := filepath.Join(dir, "s.avro")
	ln, err := net.Listen("unix", sock)
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	for _, tc := range []struct {
		list    string
		allowed []string
		kind    string
	}{
		{fifo, nil, "a named pipe (FIFO)"},
		{sock, nil, "a socket"},
		{"file://" + fifo, nil, "a named pipe (FIFO)"},
		{filepath.Join(dir, "dir.avro"), nil, "a directory"},
		{"/dev/zero", []string{f.tbl.Metadata().Location(), "/dev"}, "a character device"},
	} {
		t.Run(tc.list, func(t *testing.T) {
			src := f.openMetadata(f.hostileMetadata(withManifestList(tc.list)), tc.allowed)
			for _, initial := range []bool{false, true} {
				err := hangGuard(t, "reading the manifest list", func() error { _, err := run(t, src, initial); return err })
				wantRefused(t, err, 0, "manifest list "+tc.list+" of snapshot "+snapID+": ", "not a regular file: "+tc.kind)
				if strings.Contains(err.Error(), "\n") {
					t.Fatalf("not one line: %q", err)
				}
			}
		})
	}
	t.Run("metadata file", func(t *testing.T) {
		err := hangGuard(t, "loading the metadata", func() error {
			_, err := source.Open(f.ctx, source.Options{MetadataPath: fifo})
			return err
		})
		if err == nil || !strings.Contains(err.Error(), "load metadata "+fifo+": ") || !strings.Contains(err.Error(), "not a regular file: a named pipe (FIFO)") {
			t.Fatalf("got %v", err)
		}
	})
}

// TestLocalOpenNotFound: a missing local file still reads as missing.
func TestLocalOpenNotFound(t *testing.T) {
	f := appended(t)
	missing := filepath.Join(f.tableDir(), "metadata", "missing.avro")
	_, err := run(t, f.openMetadata(f.hostileMetadata(withManifestList(missing)), nil), false)
	if !errors.Is(err, os.ErrNotExist) || !strings.Contains(err.Error(), "manifest list "+missing) {
		t.Fatalf("got %v, want a missing file named", err)
	}
}

// TestDefaultLocations: with allowed_locations unset, a metadata placing
// the table at a file system root allows nothing there, and the daemon is
// told in one WARN line what the default allows, again when a reload
// changes it.
func TestDefaultLocations(t *testing.T) {
	f := appended(t)
	snapID := fmt.Sprint(f.tbl.CurrentSnapshot().SnapshotID)
	outside := secret(t, t.TempDir())
	for _, root := range []string{"/", "file:///", "file:/"} {
		t.Run("location "+root, func(t *testing.T) {
			meta := f.hostileMetadata(func(m map[string]any) {
				withManifestList(outside)(m)
				m["location"] = root
			})
			_, err := run(t, f.openMetadata(meta, nil), false)
			wantRefused(t, err, 0, "manifest list "+outside+" of snapshot "+snapID+": outside the allowed locations (table location / (a file system root: not allowed unless allowed_locations says so))")
			wantNoContent(t, err)
		})
	}
	t.Run("write.data.path /", func(t *testing.T) {
		meta := f.hostileMetadata(func(m map[string]any) {
			withManifestList(outside)(m)
			m["properties"] = map[string]any{"write.data.path": "/"}
		})
		_, err := run(t, f.openMetadata(meta, nil), false)
		wantRefused(t, err, 0, "manifest list "+outside+" of snapshot "+snapID+": outside the allowed locations", "write.data.path / (a file system root")
	})
	t.Run("warn", func(t *testing.T) {
		var logs bytes.Buffer
		log := slog.New(slog.NewJSONHandler(&logs, nil))
		warns := func() []map[string]any {
			var out []map[string]any
			for _, l := range strings.Split(logs.String(), "\n") {
				var m map[string]any
				if json.Unmarshal([]byte(l), &m) == nil && m["level"] == "WARN" {
					out = append(out, m)
				}
			}
			return out
		}
		o := source.Options{CatalogType: "sql", CatalogURI: f.env.CatalogURI, Warehouse: f.env.Warehouse, Table: "shop.orders", Log: log}
		src, err := source.Open(f.ctx, o)
		if err != nil {
			t.Fatal(err)
		}
		defer src.Close()
		want := "table location " + f.tbl.Metadata().Location() + ", warehouse " + f.env.Warehouse
		if w := warns(); len(w) != 1 || w[0]["table"] != "shop.orders" || w[0]["allowed"] != want ||
			w[0]["msg"] != "allowed_locations unset: the table's files are read from where its metadata and the warehouse say; set allowed_locations to confine them" {
			t.Fatalf("WARN lines %v, want one allowing %q", w, want)
		}
		f.do("append", func(ctx context.Context, tb *table.Table) (*table.Table, error) {
			return scenario.Append(ctx, tb, orders(6, 7))
		})
		if _, err := src.Refresh(f.ctx); err != nil {
			t.Fatal(err)
		}
		if w := warns(); len(w) != 1 {
			t.Fatalf("a reload allowing the same warned again: %v", w)
		}
		o.AllowedLocations = []string{f.tbl.Metadata().Location()}
		logs.Reset()
		configured, err := source.Open(f.ctx, o)
		if err != nil {
			t.Fatal(err)
		}
		defer configured.Close()
		if w := warns(); len(w) != 0 {
			t.Fatalf("allowed_locations set, yet: %v", w)
		}
	})
}

// TestHoldCommitOutlivesItsCaller: a hold commit that reached the catalog
// runs to its end when its caller stops (a daemon shutting down), rather
// than being cut off mid-request: a hive commit cut off after it locked
// the table left the lock in the metastore, and `icecdc reset` could not
// lock the table until the metastore timed the lock out.
func TestHoldCommitOutlivesItsCaller(t *testing.T) {
	f := appended(t)
	meta, err := os.ReadFile(strings.TrimPrefix(f.tbl.MetadataLocation(), "file://"))
	if err != nil {
		t.Fatal(err)
	}
	committing := make(chan struct{})
	cut := make(chan bool, 1)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		switch {
		case r.URL.Path == "/v1/config":
			io.WriteString(w, `{"defaults":{},"overrides":{}}`)
		case r.URL.Path == "/v1/namespaces/shop/tables/orders" && r.Method == http.MethodPost:
			io.Copy(io.Discard, r.Body) // the server sees a client leave only once the body is read
			close(committing)
			select {
			case <-r.Context().Done():
				cut <- true
				return
			case <-time.After(500 * time.Millisecond):
				cut <- false
			}
			json.NewEncoder(w).Encode(map[string]any{"metadata-location": f.tbl.MetadataLocation(), "metadata": json.RawMessage(meta)})
		case r.URL.Path == "/v1/namespaces/shop/tables/orders":
			json.NewEncoder(w).Encode(map[string]any{"metadata-location": f.tbl.MetadataLocation(), "metadata": json.RawMessage(meta)})
		default:
			http.NotFound(w, r)
		}
	}))
	t.Cleanup(srv.Close)
	src, err := source.Open(f.ctx, source.Options{CatalogType: "rest", CatalogURI: srv.URL, Table: "shop.orders", AllowedLocations: []string{f.tbl.Metadata().Location()}})
	if err != nil {
		t.Fatal(err)
	}
	defer src.Close()
	ctx, cancel := context.WithCancel(f.ctx)
	go func() {
		<-committing
		cancel()
	}()
	_, herr := src.Hold(ctx, "icecdc-hold", 0)
	t.Logf("hold: %v", herr)
	select {
	case wasCut := <-cut:
		if wasCut {
			t.Fatal("the hold commit was cut off mid-request when its caller stopped")
		}
	case <-time.After(time.Minute): // a hang guard only
		t.Fatal("the hold commit never reached the catalog")
	}
}
