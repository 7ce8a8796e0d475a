package source

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/icecdc/icecdc/health"
	"github.com/icecdc/icecdc/internal/moto"
)

// hostileGlue is a Glue API whose GetTables answers are answer's; it
// counts them.
func hostileGlue(t *testing.T, answer func(w http.ResponseWriter, page int)) (string, *atomic.Int64) {
	t.Helper()
	var n atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body)
		if r.Header.Get("X-Amz-Target") != "AWSGlue.GetTables" {
			http.Error(w, "unexpected "+r.Header.Get("X-Amz-Target"), http.StatusBadRequest)
			return
		}
		w.Header().Set("Content-Type", "application/x-amz-json-1.1")
		answer(w, int(n.Add(1)-1))
	}))
	t.Cleanup(srv.Close)
	return srv.URL, &n
}

// glueTable is one table of a GetTables answer.
func glueTable(name, loc string) map[string]any {
	return map[string]any{"Name": name, "DatabaseName": "db",
		"Parameters": map[string]string{"table_type": "ICEBERG", "metadata_location": loc}}
}

// TestGlueCheckBounds: a Glue API that pages for ever (new NextTokens, or
// the same one again), sends a page longer than the answer bound, or
// throttles fails the change check with one line naming the database and
// the endpoint, after a bounded number of requests; a throttled check is
// health.Throttled. A well-behaved answer of two pages covers the table.
func TestGlueCheckBounds(t *testing.T) {
	moto.Isolate(t)
	defer func(n int) { glueMaxPages = n }(glueMaxPages)
	glueMaxPages = 5
	for _, tc := range []struct {
		name      string
		answer    func(w http.ResponseWriter, page int)
		limit     int64
		want      string
		requests  int64
		throttled bool
	}{
		{name: "endless pages", answer: func(w http.ResponseWriter, page int) {
			json.NewEncoder(w).Encode(map[string]any{"TableList": []any{}, "NextToken": fmt.Sprint("tok", page)})
		}, want: "database db: GetTables sent more than 5 pages of tables (500 tables)", requests: 5},
		{name: "same token", answer: func(w http.ResponseWriter, page int) {
			json.NewEncoder(w).Encode(map[string]any{"TableList": []any{}, "NextToken": "again"})
		}, want: "database db: GetTables sent the same NextToken twice (after 2 pages)", requests: 2},
		{name: "huge page", limit: 4096, answer: func(w http.ResponseWriter, page int) {
			var tables []any
			for i := range 200 {
				tables = append(tables, glueTable(fmt.Sprint("t", i), "s3://b/t/metadata/v1.metadata.json"))
			}
			json.NewEncoder(w).Encode(map[string]any{"TableList": tables})
		}, want: "is longer than 4096 bytes, the most icecdc reads of a catalog answer", requests: 1},
		{name: "huge page said", limit: 4096, answer: func(w http.ResponseWriter, page int) {
			var tables []any
			for i := range 200 {
				tables = append(tables, glueTable(fmt.Sprint("t", i), "s3://b/t/metadata/v1.metadata.json"))
			}
			b, _ := json.Marshal(map[string]any{"TableList": tables})
			w.Header().Set("Content-Length", fmt.Sprint(len(b)))
			w.Write(b)
		}, want: "is longer than 4096 bytes, the most icecdc reads of a catalog answer", requests: 1},
		{name: "throttled", answer: func(w http.ResponseWriter, page int) {
			w.WriteHeader(http.StatusBadRequest)
			io.WriteString(w, `{"__type":"ThrottlingException","message":"Rate exceeded"}`)
		}, want: "database db: ", requests: 1, throttled: true},
		{name: "two pages", answer: func(w http.ResponseWriter, page int) {
			if page == 0 {
				json.NewEncoder(w).Encode(map[string]any{"TableList": []any{glueTable("other", "s3://b/o/v1.metadata.json")}, "NextToken": "p2"})
				return
			}
			json.NewEncoder(w).Encode(map[string]any{"TableList": []any{glueTable("t", "s3://b/t/metadata/v1.metadata.json")}})
		}, requests: 2},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ep, n := hostileGlue(t, tc.answer)
			o := Options{CatalogType: "glue", Warehouse: "s3://b", MaxResponseBytes: tc.limit, Props: map[string]string{
				"glue.endpoint": ep, "glue.region": moto.Region, "glue.access-key-id": moto.AccessKey,
				"glue.secret-access-key": moto.SecretKey, "glue.max-retries": "1",
			}}
			cat := NewCatalog(o, 2)
			defer cat.Close()
			to := o
			to.Table, to.Catalog = "db.t", cat
			tbl, err := New(to)
			if err != nil {
				t.Fatal(err)
			}
			defer tbl.Close()
			err = cat.CheckChanges(context.Background())
			t.Logf("%d requests; %v", n.Load(), err)
			if got := n.Load(); got != tc.requests {
				t.Errorf("%d GetTables requests, want %d", got, tc.requests)
			}
			if tc.want == "" {
				if err != nil {
					t.Fatal(err)
				}
				if _, covered := tbl.Changes(); !covered {
					t.Fatal("the table on the second page is not covered")
				}
				return
			}
			if err == nil {
				t.Fatal("the check passed")
			}
			msg := err.Error()
			for _, part := range []string{"check glue catalog at " + ep + " for changes: ", tc.want} {
				if !strings.Contains(msg, part) {
					t.Errorf("error lacks %q: %s", part, msg)
				}
			}
			if strings.Contains(msg, "\n") || strings.Contains(msg, moto.SecretKey) {
				t.Errorf("error on more than a line or with the secret: %q", msg)
			}
			if got := health.IsThrottled(err); got != tc.throttled {
				t.Errorf("throttled %v, want %v", got, tc.throttled)
			}
			if _, covered := tbl.Changes(); covered {
				t.Error("a failed check covers the table")
			}
		})
	}
}

// closedWriterTo is a request body as the AWS SDK sends it: once closed
// (which the SDK does when the answer's headers arrive), its WriteTo
// fails with io.EOF.
type closedWriterTo struct {
	io.Reader
	closed atomic.Bool
}

func (b *closedWriterTo) Close() error { b.closed.Store(true); return nil }

func (b *closedWriterTo) Read(p []byte) (int, error) {
	if b.closed.Load() {
		return 0, io.EOF
	}
	return b.Reader.Read(p)
}

func (b *closedWriterTo) WriteTo(w io.Writer) (int64, error) {
	if b.closed.Load() {
		return 0, io.EOF
	}
	return io.Copy(w, b.Reader)
}

// TestAWSClientSendsBodyWithoutWriteTo: the client beneath the AWS SDK
// hides a request body's WriteTo from net/http, whose check for bytes past
// the Content-Length would otherwise take the SDK's io.EOF after the close
// for a failed write and close the connection under the answer.
func TestAWSClientSendsBodyWithoutWriteTo(t *testing.T) {
	var sent io.ReadCloser
	c := &boundedAWSClient{limit: 1 << 20, next: doFunc(func(req *http.Request) (*http.Response, error) {
		sent = req.Body
		return &http.Response{StatusCode: 200, Body: io.NopCloser(strings.NewReader("{}")), Request: req}, nil
	})}
	body := &closedWriterTo{Reader: strings.NewReader(`{"DatabaseName":"db"}`)}
	req, err := http.NewRequest(http.MethodPost, "http://127.0.0.1:1/", body)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.Do(req); err != nil {
		t.Fatal(err)
	}
	if _, ok := sent.(io.WriterTo); ok {
		t.Fatalf("the body sent is an io.WriterTo (%T)", sent)
	}
	sent.Close()
	if !body.closed.Load() {
		t.Fatal("closing the body sent does not close the SDK's body")
	}
	if n, err := io.Copy(io.Discard, sent); n != 0 || err != nil {
		t.Fatalf("copying the closed body: %d bytes, %v; want 0, nil", n, err)
	}
}

type doFunc func(*http.Request) (*http.Response, error)

func (f doFunc) Do(req *http.Request) (*http.Response, error) { return f(req) }
