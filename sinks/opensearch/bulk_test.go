package opensearch

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/icecdc/icecdc/cdc"
)

func TestDocID(t *testing.T) {
	for _, tc := range []struct{ key, id, err string }{
		{`{"id":42}`, "42", ""},
		{`{"_row_id":7}`, "7", ""},
		{`{"sku":"A-1"}`, "A-1", ""},
		{`{"sku":"é\"x"}`, `é"x`, ""},
		{`{"region":"eu","id":42}`, `["eu",42]`, ""},
		{`{"k":{"a":1, "b":[1,2]}}`, `{"a":1,"b":[1,2]}`, ""},
		{`{"flag":true}`, "true", ""},
		{`{"id":12345678901234567890}`, "12345678901234567890", ""},
		{`{"id":null}`, "", "is null"},
		{`{"id":""}`, "", "empty"},
		{`{}`, "", "no column"},
		{`[1]`, "", "not a JSON object"},
		{`{"id":"` + strings.Repeat("x", 513) + `"}`, "", "longer than"},
	} {
		id, err := DocID([]byte(tc.key))
		if tc.err != "" {
			if err == nil || !strings.Contains(err.Error(), tc.err) {
				t.Errorf("DocID(%s) = %q, %v; want an error saying %q", tc.key, id, err, tc.err)
			}
			continue
		}
		if err != nil || id != tc.id {
			t.Errorf("DocID(%s) = %q, %v; want %q", tc.key, id, err, tc.id)
		}
	}
}

func TestVersionOrdersEventsAndHasBounds(t *testing.T) {
	type ev struct {
		seq   int64
		index int
	}
	order := []ev{{1, 0}, {1, 1}, {1, MaxIndex - 1}, {1, MaxIndex}, {2, 0}, {2, 5}, {1 << 30, 0}, {MaxSeq, MaxIndex}}
	last := int64(-1)
	for _, e := range order {
		v, err := Version(e.seq, e.index)
		if err != nil {
			t.Fatalf("Version(%d, %d): %v", e.seq, e.index, err)
		}
		if v <= last {
			t.Errorf("Version(%d, %d) = %d, not above the previous %d", e.seq, e.index, v, last)
		}
		last = v
	}
	// Past MaxIndex a snapshot's events share the last version.
	a, _ := Version(3, MaxIndex)
	b, _ := Version(3, MaxIndex+5000)
	if a != b {
		t.Errorf("versions past MaxIndex differ: %d, %d", a, b)
	}
	if _, err := Version(MaxSeq+1, 0); err == nil {
		t.Error("a sequence number past MaxSeq has a version")
	}
}

func TestBulkItemLines(t *testing.T) {
	m := cdc.Message{ID: "u:9:7:u", Op: cdc.OpUpdate, Index: 3, Key: []byte(`{"id":42}`), Value: []byte(`{"id":42,"name":"x"}`)}
	it, err := newItem(0, &m, "shop-items", 9)
	if err != nil {
		t.Fatal(err)
	}
	want := `{"index":{"_index":"shop-items","_id":"42","version":9437187,"version_type":"external_gte"}}` + "\n" + `{"id":42,"name":"x","__event_id":"u:9:7:u"}` + "\n"
	if string(it.body) != want {
		t.Errorf("index item:\n%s\nwant\n%s", it.body, want)
	}
	m = cdc.Message{Op: cdc.OpDelete, Index: 0, Key: []byte(`{"id":42}`)}
	if it, err = newItem(0, &m, "shop-items", 10); err != nil {
		t.Fatal(err)
	}
	want = `{"delete":{"_index":"shop-items","_id":"42","version":10485760,"version_type":"external_gte"}}` + "\n"
	if string(it.body) != want {
		t.Errorf("delete item:\n%s\nwant\n%s", it.body, want)
	}
	// An r event is an index item; a value spread over lines is compacted.
	m = cdc.Message{ID: "u:1:1:r", Op: cdc.OpSnapshot, Key: []byte(`{"id":1}`), Value: []byte("{\"id\":1,\n \"name\":\"a\"}")}
	if it, err = newItem(0, &m, "i", 1); err != nil || !strings.HasPrefix(string(it.body), `{"index"`) || strings.Count(string(it.body), "\n") != 2 ||
		!strings.HasSuffix(string(it.body), `{"id":1,"name":"a","__event_id":"u:1:1:r"}`+"\n") {
		t.Errorf("r item %q, %v", it.body, err)
	}
	m = cdc.Message{Op: cdc.OpCreate, Key: []byte(`{"id":1}`)}
	if _, err = newItem(0, &m, "i", 1); err == nil {
		t.Error("an index item without a document was built")
	}
}

// Answers in the shape of OpenSearch 2.x's _bulk response (the "Bulk"
// page of the OpenSearch API reference: items[].<action> with _index,
// _id, status, result or error{type, reason, caused_by}).
const realAnswer = `{"took":30,"errors":true,"items":[
{"index":{"_index":"items","_id":"1","_version":1048576,"result":"created","_shards":{"total":2,"successful":1,"failed":0},"_seq_no":0,"_primary_term":1,"status":201}},
{"index":{"_index":"items","_id":"2","status":409,"error":{"type":"version_conflict_engine_exception","reason":"[2]: version conflict, current version [2097152] is higher than the one provided [1048577]","index":"items","shard":"0","index_uuid":"aBcD"}}},
{"delete":{"_index":"items","_id":"3","_version":1048578,"result":"not_found","_shards":{"total":2,"successful":1,"failed":0},"_seq_no":1,"_primary_term":1,"status":404}},
{"index":{"_index":"items","_id":"4","status":429,"error":{"type":"es_rejected_execution_exception","reason":"rejected execution of coordinating operation"}}},
{"index":{"_index":"items","_id":"5","status":503,"error":{"type":"unavailable_shards_exception","reason":"[items][0] primary shard is not active Timeout: [1m]"}}},
{"index":{"_index":"items","_id":"6","status":400,"error":{"type":"mapper_parsing_exception","reason":"failed to parse field [price] of type [long] in document with id '6'. Preview of field's value: 'abc'","caused_by":{"type":"illegal_argument_exception","reason":"For input string: \"abc\""}}}},
{"index":{"_index":"Items","_id":"7","status":400,"error":{"type":"invalid_index_name_exception","reason":"Invalid index name [Items], must be lowercase","index":"Items","index_uuid":"_na_"}}},
{"update":{"_index":"items","_id":"8","_version":3,"result":"updated","status":200}},
{"delete":{"_index":"items","_id":"9","status":409,"error":{"type":"version_conflict_engine_exception","reason":"[9]: version conflict"}}}
]}`

func TestClassifyRealAnswers(t *testing.T) {
	a, err := decodeAnswer([]byte(realAnswer))
	if err != nil {
		t.Fatal(err)
	}
	deletes := map[int]bool{2: true, 8: true}
	want := []outcome{written, written, written, again, again, refused, refused, written, written}
	if len(a.Items) != len(want) {
		t.Fatalf("%d items", len(a.Items))
	}
	for i, r := range a.Items {
		if got := classify(r, deletes[i]); got != want[i] {
			t.Errorf("item %d (%d %s): %v, want %v", i, r.Status, reason(r), got, want[i])
		}
	}
	if got := reason(a.Items[5]); !strings.Contains(got, "mapper_parsing_exception: failed to parse field [price]") || !strings.Contains(got, "caused by illegal_argument_exception") {
		t.Errorf("reason: %q", got)
	}
	// A 404 on an index item is not a missing document to delete.
	if classify(a.Items[2], false) != refused {
		t.Error("404 on an index item counted as written")
	}
}

func TestWrongPasswordIsPermanentAndNamesTheNode(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if u, p, ok := r.BasicAuth(); !ok || u != "admin" || p != "right" {
			w.Header().Set("WWW-Authenticate", `Basic realm="OpenSearch Security"`)
			http.Error(w, "Unauthorized", http.StatusUnauthorized)
			return
		}
		w.Write([]byte(`{"took":1,"errors":false,"items":[]}`))
	}))
	defer srv.Close()
	s := newTestSink(t, srv.URL, func(c *Config) { c.Username, c.Password = "admin", "wrong" })
	h := newHistory(t)
	err := s.Write(context.Background(), h.commit(5, change{cdc.OpCreate, 1, "a"})[0])
	if !errors.Is(err, cdc.ErrPermanent) || !strings.Contains(err.Error(), "401") || !strings.Contains(err.Error(), srv.URL) || strings.Contains(err.Error(), "wrong") {
		t.Fatalf("Write with a wrong password: %v", err)
	}
}

func TestConfigCheck(t *testing.T) {
	for _, tc := range []struct {
		edit func(*Config)
		want string
	}{
		{func(c *Config) { c.URLs = nil }, "urls: at least one"},
		{func(c *Config) { c.URLs = []string{"node:9200"} }, "urls[0]"},
		{func(c *Config) { c.Index = "{tabel}" }, "index: unknown placeholder {tabel}"},
		{func(c *Config) { c.APIKey, c.BearerToken = "k", "t" }, "exclude each other"},
		{func(c *Config) { c.Refresh = "yes" }, `refresh: "yes": want false, true or wait_for`},
		{func(c *Config) { c.TLS.CAFile = "/nonexistent/ca.pem" }, "tls.ca_file"},
	} {
		c := Config{URLs: []string{"http://localhost:9200"}}
		tc.edit(&c)
		err := c.Validate()
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("Validate: %v, want %q", err, tc.want)
		}
	}
}

// A node whose certificate the configured CAs do not sign stops the table
// with one line naming the node; no retry helps.
func TestTLSMismatchIsPermanent(t *testing.T) {
	srv := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Write([]byte(`{"took":1,"errors":false,"items":[]}`))
	}))
	defer srv.Close()
	s := newTestSink(t, srv.URL, nil)
	h := newHistory(t)
	err := s.Write(context.Background(), h.commit(5, change{cdc.OpCreate, 1, "a"})[0])
	if !errors.Is(err, cdc.ErrPermanent) || !strings.Contains(err.Error(), srv.URL) || !strings.Contains(err.Error(), "certificate") || strings.Contains(err.Error(), "\n") {
		t.Fatalf("Write to a node with an unknown certificate: %v", err)
	}
}
