package source_test

import (
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/icecdc/icecdc/cdc"
	"github.com/icecdc/icecdc/changes"
	"github.com/icecdc/icecdc/source"
)

// vendedMeta is a v3 table on S3 with one snapshot, as a REST catalog
// sends it inline.
const vendedMeta = `{"format-version": 3, "table-uuid": "9c12d441-03fe-4693-9a96-a0705ddf69c1",
 "location": "s3://bucket/shop/orders", "last-sequence-number": 1, "last-updated-ms": 1700000000000,
 "last-column-id": 1, "current-schema-id": 0,
 "schemas": [{"type": "struct", "schema-id": 0, "identifier-field-ids": [1],
   "fields": [{"id": 1, "name": "id", "required": true, "type": "long"}]}],
 "default-spec-id": 0, "partition-specs": [{"spec-id": 0, "fields": []}], "last-partition-id": 999,
 "default-sort-order-id": 0, "sort-orders": [{"order-id": 0, "fields": []}], "properties": {},
 "current-snapshot-id": 1, "refs": {"main": {"snapshot-id": 1, "type": "branch"}},
 "snapshots": [{"snapshot-id": 1, "sequence-number": 1, "timestamp-ms": 1700000000000,
   "manifest-list": "s3://bucket/shop/orders/metadata/snap-1.avro", "summary": {"operation": "append"},
   "schema-id": 0, "first-row-id": 0, "added-rows": 1}],
 "next-row-id": 1, "snapshot-log": [], "metadata-log": []}`

// TestVendedEndpointNeedsVendedKeys: a REST catalog whose loadTable
// config names an s3.endpoint of its own but no credentials gets no
// request signed with the operator's keys: the read fails at once, in one
// line naming the endpoint. With vended keys, the vended endpoint is used
// (with them), and an endpoint the operator gave is trusted with the
// operator's keys.
func TestVendedEndpointNeedsVendedKeys(t *testing.T) {
	t.Setenv("AWS_MAX_ATTEMPTS", "1")
	const operatorKey, vendedKey = "AKIAICECDCOPERATOR01", "AKIAICECDCVENDED0009"
	var mu sync.Mutex
	var signedBy []string // the access key of each request the endpoint got
	s3 := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		auth := r.Header.Get("Authorization")
		_, key, _ := strings.Cut(auth, "Credential=")
		key, _, _ = strings.Cut(key, "/")
		mu.Lock()
		signedBy = append(signedBy, key)
		mu.Unlock()
		w.Header().Set("Content-Type", "application/xml")
		w.WriteHeader(http.StatusForbidden)
		io.WriteString(w, `<?xml version="1.0" encoding="UTF-8"?><Error><Code>AccessDenied</Code><Message>denied</Message></Error>`)
	}))
	defer s3.Close()
	operator := map[string]string{"s3.region": "us-east-1", "s3.access-key-id": operatorKey,
		"s3.secret-access-key": "operator-secret-Uy7"}
	for _, tc := range []struct {
		name     string
		vended   map[string]string
		own      map[string]string // added to the operator's properties
		refused  bool
		wantSign string
	}{
		{"endpoint without keys", map[string]string{"s3.endpoint": s3.URL, "s3.path-style-access": "true"}, nil, true, ""},
		{"endpoint with keys", map[string]string{"s3.endpoint": s3.URL, "s3.path-style-access": "true",
			"s3.access-key-id": vendedKey, "s3.secret-access-key": "vended-secret-Ko2"}, nil, false, vendedKey},
		{"the operator's endpoint", map[string]string{"s3.endpoint": s3.URL, "s3.path-style-access": "true"},
			map[string]string{"s3.endpoint": s3.URL, "s3.path-style-access": "true"}, false, operatorKey},
	} {
		t.Run(tc.name, func(t *testing.T) {
			mu.Lock()
			signedBy = nil
			mu.Unlock()
			catalog := hostileREST(t, nil, func(w http.ResponseWriter, r *http.Request) {
				json.NewEncoder(w).Encode(map[string]any{
					"metadata-location": "s3://bucket/shop/orders/metadata/v1.metadata.json",
					"metadata":          json.RawMessage(vendedMeta),
					"config":            tc.vended,
				})
			})
			props := map[string]string{}
			for _, m := range []map[string]string{operator, tc.own} {
				for k, v := range m {
					props[k] = v
				}
			}
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute) // a hang guard
			defer cancel()
			src, err := source.Open(ctx, source.Options{CatalogType: "rest", CatalogURI: catalog.URL,
				Table: "shop.orders", Props: props})
			if err == nil {
				err = changes.Changes(ctx, src, 0, 0, slog.New(slog.DiscardHandler), func(*cdc.Commit) error { return nil })
				src.Close()
			}
			if err == nil {
				t.Fatal("read a table whose store refuses everything")
			}
			msg := err.Error()
			t.Logf("%s", msg)
			mu.Lock()
			got := strings.Join(signedBy, ",")
			mu.Unlock()
			if strings.Contains(got, operatorKey) && tc.wantSign != operatorKey {
				t.Fatalf("the catalog's endpoint got requests signed with the operator's key: %s", got)
			}
			if tc.refused {
				if got != "" || strings.Contains(msg, "\n") || !strings.Contains(msg, "gives the endpoint "+s3.URL) {
					t.Fatalf("want no request (got %q) and one line naming the endpoint: %s", got, msg)
				}
				return
			}
			if !strings.Contains(got, tc.wantSign) {
				t.Fatalf("want requests signed with %s, got %q (%s)", tc.wantSign, got, msg)
			}
		})
	}
}
