package main

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/icecdc/icecdc/cdc"
)

// TestHoldAndResyncConfig: the new keys parse, and what cannot work is
// refused when the configuration is loaded, naming the field.
func TestHoldAndResyncConfig(t *testing.T) {
	base := "name: p\nsink: {type: stdout}\n"
	ok := base + "tables: [{name: shop.orders, hold: true}]\non_history_loss: resync\nhold_interval: 5m\nhttp: {listen: 127.0.0.1:1, token: '${TOK}'}\n"
	c, err := parseConfig([]byte(ok), env(map[string]string{"TOK": "s3cret"}))
	if err != nil {
		t.Fatal(err)
	}
	if !c.Tables[0].Hold || c.OnHistoryLoss != "resync" || c.HoldInterval.Minutes() != 5 || c.HTTP.Token != "s3cret" {
		t.Fatalf("parsed %+v", c)
	}
	for _, bad := range []struct{ yaml, want string }{
		{base + "tables: [{name: orders, metadata: /x/v1.metadata.json, hold: true}]\n", "tables[0].hold: a table followed from its metadata file cannot hold"},
		{base + "catalog: {type: hadoop, warehouse: 's3://lake/wh'}\ntables: [{name: shop.orders, hold: true}]\n", "tables[0].hold: a hadoop catalog on an object store"},
		{base + "tables: [{name: shop.orders}]\non_history_loss: skip\n", `on_history_loss: "skip": want stop or resync`},
		{base + "tables: [{name: shop.orders}]\nhttp: {token: x}\n", "http.token: set, but http.listen is not"},
	} {
		_, err := parseConfig([]byte(bad.yaml), env(nil))
		if err == nil || !strings.Contains(err.Error(), bad.want) {
			t.Errorf("%q: %v, want %q", bad.yaml, err, bad.want)
		}
	}
}

// TestSnapshotEndpoint: POST /snapshot wants the configured bearer token
// (and is off without one), names an unknown table with 404, and refuses
// other methods.
func TestSnapshotEndpoint(t *testing.T) {
	p := &cdc.Pipeline{Name: "p"} // not running: the known table is not served
	call := func(h http.Handler, method, target, auth string) (int, string) {
		r := httptest.NewRequest(method, target, nil)
		if auth != "" {
			r.Header.Set("Authorization", auth)
		}
		w := httptest.NewRecorder()
		h.ServeHTTP(w, r)
		return w.Code, w.Body.String()
	}
	on := snapshotHandler("tok3n", p)
	for _, c := range []struct {
		h                    http.Handler
		method, target, auth string
		code                 int
		want                 string
	}{
		{snapshotHandler("", p), "POST", "/snapshot?table=shop.orders", "Bearer ", http.StatusForbidden, "set http.token"},
		{on, "POST", "/snapshot?table=shop.orders", "", http.StatusUnauthorized, "bearer token"},
		{on, "POST", "/snapshot?table=shop.orders", "Bearer tok3m", http.StatusUnauthorized, "bearer token"},
		{on, "POST", "/snapshot?table=shop.orders", "Basic tok3n", http.StatusUnauthorized, "bearer token"},
		{on, "GET", "/snapshot?table=shop.orders", "Bearer tok3n", http.StatusMethodNotAllowed, "POST"},
		{on, "POST", "/snapshot", "Bearer tok3n", http.StatusBadRequest, "table="},
		{on, "POST", "/snapshot?table=shop.orders", "Bearer tok3n", http.StatusConflict, "starting"},
	} {
		code, body := call(c.h, c.method, c.target, c.auth)
		if code != c.code || !strings.Contains(body, c.want) || strings.Count(strings.TrimSpace(body), "\n") > 0 {
			t.Errorf("%s %s (%q): %d %q, want %d with %q on one line", c.method, c.target, c.auth, code, body, c.code, c.want)
		}
	}
}
