package badinput

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/icecdc/icecdc/source"
)

// restAnswers is what the fuzzed REST catalog answers: /v1/config and
// the table's loadTable bodies, as the current input says.
type restAnswers struct {
	mu           sync.Mutex
	config, load []byte
}

func (a *restAnswers) set(config, load []byte) {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.config, a.load = config, load
}

func (a *restAnswers) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	a.mu.Lock()
	config, load := a.config, a.load
	a.mu.Unlock()
	w.Header().Set("Content-Type", "application/json")
	switch {
	case strings.HasSuffix(r.URL.Path, "/v1/config"):
		w.Write(config)
	case strings.HasSuffix(r.URL.Path, "/namespaces/bookshop/tables/orders"):
		w.Write(load)
	default:
		w.WriteHeader(http.StatusNotFound)
		io.WriteString(w, `{"error": {"message": "no such path", "type": "NoSuchTableException", "code": 404}}`)
	}
}

// restMaxAnswer is the bound of a catalog answer in the fuzzed runs.
const restMaxAnswer = 4 << 20

// FuzzRESTCatalog reads the base table through a REST catalog whose
// /v1/config and loadTable answers are fuzzed (the metadata sent inline,
// the config a table's file IO is made with, vended credentials,
// storage-credentials), the way `icecdc changes --catalog-type rest`
// does, in process, with the table's own location as the only allowed
// one. It checks what FuzzTableMetadata checks: no panic, no hang, at
// most fuzzBudget allocated, an error of one line naming the object at
// fault (the table, the catalog's URL, a file or key of the metadata, a
// config key), no row of the table outside the allowed location in the
// output (its files would have been read), and no wrong event.
func FuzzRESTCatalog(f *testing.F) {
	ft := fuzzTableFor(f)
	answers := &restAnswers{}
	srv := httptest.NewServer(answers)
	f.Cleanup(srv.Close)
	config := []byte(`{"defaults": {}, "overrides": {}}`)
	load := func(metaLoc string, meta []byte, cfg map[string]string, extra map[string]any) []byte {
		body := map[string]any{"metadata-location": metaLoc, "metadata": json.RawMessage(meta), "config": cfg}
		for k, v := range extra {
			body[k] = v
		}
		b, _ := json.Marshal(body)
		return b
	}
	good := load(ft.base.Metadata, ft.metaRaw, map[string]string{}, nil)
	f.Add(config, good)
	f.Add([]byte(`{"defaults": {"s3.endpoint": "http://127.0.0.1:1", "warehouse": "/"}, "overrides": {"prefix": "p", "uri": "`+srv.URL+`"}, "endpoints": ["GET /v1/{prefix}/namespaces/{namespace}/tables/{table}"]}`), good)
	f.Add(config, load(ft.base.Metadata, ft.metaRaw, map[string]string{
		"s3.endpoint": "http://127.0.0.1:1", "s3.access-key-id": "AKIAICECDCFUZZ000001", "s3.secret-access-key": "fuzz-secret",
		"s3.session-token": "fuzz-token", "token": "t0k", "header.X-Fuzz": "1"}, nil))
	f.Add(config, load(ft.base.Metadata, ft.metaRaw, nil, map[string]any{"storage-credentials": []any{
		map[string]any{"prefix": "file:/", "config": map[string]string{"s3.access-key-id": "AKIAICECDCFUZZ000002"}}}}))
	if out, err := withMeta(ft.meta, func(root any) {
		Set(root, Path{"snapshots", 0, "manifest-list"}, ft.base.Outside.ManifestList)
	}); err == nil {
		f.Add(config, load(ft.base.Metadata, out, nil, nil)) // a manifest list of the outside table
	}
	f.Add(config, good[:len(good)/2])
	f.Add([]byte(`{"defaults": `), good)
	f.Add([]byte(`{"error": {"message": "m", "type": "T", "code": 500}}`), good)
	location := filepath.Dir(filepath.Dir(ft.base.Metadata))
	f.Fuzz(func(t *testing.T, config, load []byte) {
		answers.set(config, load)
		res := runREST(srv.URL, location, fuzzBudget)
		switch {
		case res.hang:
			t.Fatalf("no result after %s", fuzzTimeout)
		case errors.Is(res.err, errOverBudget), res.alloc > fuzzBudget:
			t.Fatalf("allocated %d MiB, budget %d MiB", res.alloc>>20, fuzzBudget>>20)
		}
		if bytes.Contains(res.out, []byte(Secret)) {
			t.Fatalf("the output holds a row of the table outside %s: its files were read", location)
		}
		var inline struct {
			Metadata json.RawMessage `json:"metadata"`
		}
		_ = json.Unmarshal(load, &inline)
		if res.err != nil {
			msg := res.err.Error()
			names := append(ft.objectNames(ft.base.Metadata, inline.Metadata), "bookshop.orders", srv.URL, "rest catalog",
				"catalog answer")
			for _, raw := range [][]byte{config, load} {
				for _, n := range Walk(parsedOrNil(raw)) {
					if k := n.Path.Last(); len(k) >= 5 {
						names = append(names, keyNames(k)...)
					}
				}
			}
			if class, detail := namesObject(names, msg); class != classClear || strings.Contains(msg, "\n") {
				t.Fatalf("unclear error (%s): %s", class, detail)
			}
		}
		cols, _, _ := ft.cols(inline.Metadata)
		// The events name the catalog, which a table read from its
		// metadata file has none of.
		got, err := ParseEvents(bytes.ReplaceAll(res.out, []byte(`"db":"local"`), []byte(`"db":""`)), cols)
		if err != nil {
			t.Fatalf("output is not events: %v", err)
		}
		bySnap := map[int64][]Event{}
		for _, e := range got {
			bySnap[e.Snap] = append(bySnap[e.Snap], e)
		}
		for id, evs := range bySnap {
			if d := Compare(evs, ft.byID[id], res.complete[id]); d != "" {
				t.Fatalf("snapshot %d (error %v): %s", id, res.err, d)
			}
		}
	})
}

// runREST runs what `icecdc changes --catalog-type rest` runs against the
// catalog at uri, in this process, watching its allocations and time.
func runREST(uri, allowed string, budget uint64) inProcess {
	return runWatched(budget, func(ctx context.Context) (*source.Table, error) {
		return source.Open(ctx, source.Options{CatalogType: "rest", CatalogURI: uri, Table: "bookshop.orders",
			AllowedLocations: []string{allowed}, MaxResponseBytes: restMaxAnswer})
	})
}
