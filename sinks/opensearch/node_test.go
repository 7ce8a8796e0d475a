package opensearch

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
)

// doc is a document as the test node holds it.
type doc struct {
	version int64
	source  string
	deleted bool // a delete's tombstone, kept with its version
}

// bulkNode is the _bulk endpoint of a node for the sink's tests: it keeps
// documents under external_gte versioning as OpenSearch does (a version
// lower than the stored one, tombstones included, is a 409) and answers
// in the _bulk response format (OpenSearch API reference, "Bulk",
// response body fields), so that the sink's own reading of answers is
// what is tested. The interop stage checks the same against a real node.
type bulkNode struct {
	mu   sync.Mutex
	docs map[string]map[string]*doc // index → id → doc
	// Faults: reject answers a refusal for an item, or 0; tooLarge is
	// the most body bytes a request may have (0: any); down answers
	// whole requests with this status while it is above 0 times.
	reject   func(index, id, source string) (int, string)
	tooLarge int
	down     int
	downWith int
	requests int
	refresh  []string
	// applied logs the items the node applied (not the 409s), in order.
	applied []appliedItem
	// mappings are the bodies of the indexes created (PUT /index);
	// create, when set, answers a creation instead (status, error type).
	mappings map[string]string
	create   func(index string) (int, string)
	creates  int
}

type appliedItem struct {
	index, id, verb, source string
	version                 int64
}

func newBulkNode(t *testing.T) (*bulkNode, string) {
	n := &bulkNode{docs: map[string]map[string]*doc{}, mappings: map[string]string{}}
	srv := httptest.NewServer(n)
	t.Cleanup(srv.Close)
	return n, srv.URL
}

type action struct {
	Index       string `json:"_index"`
	ID          string `json:"_id"`
	Version     int64  `json:"version"`
	VersionType string `json:"version_type"`
}

func (n *bulkNode) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	n.mu.Lock()
	defer n.mu.Unlock()
	if r.Method == http.MethodPut {
		n.createIndex(w, r)
		return
	}
	n.requests++
	n.refresh = append(n.refresh, r.URL.Query().Get("refresh"))
	body, _ := io.ReadAll(r.Body)
	if r.URL.Path != "/_bulk" || r.Header.Get("Content-Type") != "application/x-ndjson" {
		http.Error(w, `{"error":{"type":"illegal_argument_exception","reason":"bad request"},"status":400}`, 400)
		return
	}
	if n.down > 0 {
		n.down--
		w.WriteHeader(n.downWith)
		fmt.Fprintf(w, `{"error":{"root_cause":[],"type":"es_rejected_execution_exception","reason":"rejected execution"},"status":%d}`, n.downWith)
		return
	}
	if n.tooLarge > 0 && len(body) > n.tooLarge {
		w.WriteHeader(413)
		fmt.Fprintf(w, `{"error":{"type":"content_too_long_exception","reason":"request body is too large"},"status":413}`)
		return
	}
	sc := bufio.NewScanner(bytes.NewReader(body))
	sc.Buffer(nil, 1<<24)
	var items []string
	errorsSeen := false
	for sc.Scan() {
		var head map[string]action
		if err := json.Unmarshal(sc.Bytes(), &head); err != nil || len(head) != 1 {
			http.Error(w, `{"error":{"type":"illegal_argument_exception","reason":"Malformed action/metadata line"},"status":400}`, 400)
			return
		}
		for verb, a := range head {
			source := ""
			if verb == "index" {
				sc.Scan()
				source = sc.Text()
			}
			item := n.apply(verb, a, source)
			if !bytes.Contains([]byte(item), []byte(`"status":20`)) {
				errorsSeen = true
			}
			items = append(items, fmt.Sprintf(`{%q:%s}`, verb, item))
		}
	}
	fmt.Fprintf(w, `{"took":3,"errors":%t,"items":[%s]}`, errorsSeen, bytes.Join(func() [][]byte {
		var b [][]byte
		for _, s := range items {
			b = append(b, []byte(s))
		}
		return b
	}(), []byte(",")))
}

// createIndex answers PUT /index as a node does (OpenSearch API
// reference, "Create index"): acknowledged, or 400
// resource_already_exists_exception for an index that exists.
func (n *bulkNode) createIndex(w http.ResponseWriter, r *http.Request) {
	n.creates++
	index := r.URL.Path[1:]
	body, _ := io.ReadAll(r.Body)
	if n.create != nil {
		if st, typ := n.create(index); st != 0 {
			w.WriteHeader(st)
			fmt.Fprintf(w, `{"error":{"root_cause":[],"type":%q,"reason":"refused [%s]","index":%q},"status":%d}`, typ, index, index, st)
			return
		}
	}
	if _, ok := n.mappings[index]; ok || n.docs[index] != nil {
		w.WriteHeader(400)
		fmt.Fprintf(w, `{"error":{"root_cause":[],"type":"resource_already_exists_exception","reason":"index [%s/abc] already exists","index":%q},"status":400}`, index, index)
		return
	}
	n.mappings[index] = string(body)
	fmt.Fprintf(w, `{"acknowledged":true,"shards_acknowledged":true,"index":%q}`, index)
}

// apply applies one item and returns its answer object.
func (n *bulkNode) apply(verb string, a action, source string) string {
	if a.VersionType != "external_gte" {
		return fmt.Sprintf(`{"_index":%q,"_id":%q,"status":400,"error":{"type":"action_request_validation_exception","reason":"version_type missing"}}`, a.Index, a.ID)
	}
	if n.reject != nil {
		if st, typ := n.reject(a.Index, a.ID, source); st != 0 {
			return fmt.Sprintf(`{"_index":%q,"_id":%q,"status":%d,"error":{"type":%q,"reason":"failed to parse field [amount] of type [long] in document with id '%s'","caused_by":{"type":"illegal_argument_exception","reason":"For input string"}}}`, a.Index, a.ID, st, typ, a.ID)
		}
	}
	idx := n.docs[a.Index]
	if idx == nil {
		idx = map[string]*doc{}
		n.docs[a.Index] = idx
	}
	d := idx[a.ID]
	if d != nil && a.Version < d.version {
		return fmt.Sprintf(`{"_index":%q,"_id":%q,"status":409,"error":{"type":"version_conflict_engine_exception","reason":"[%s]: version conflict, current version [%d] is higher than the one provided [%d]","index":%q}}`, a.Index, a.ID, a.ID, d.version, a.Version, a.Index)
	}
	n.applied = append(n.applied, appliedItem{index: a.Index, id: a.ID, verb: verb, source: source, version: a.Version})
	if verb == "delete" {
		found := d != nil && !d.deleted
		idx[a.ID] = &doc{version: a.Version, deleted: true}
		if !found {
			return fmt.Sprintf(`{"_index":%q,"_id":%q,"_version":%d,"result":"not_found","status":404}`, a.Index, a.ID, a.Version)
		}
		return fmt.Sprintf(`{"_index":%q,"_id":%q,"_version":%d,"result":"deleted","status":200}`, a.Index, a.ID, a.Version)
	}
	created := d == nil || d.deleted
	idx[a.ID] = &doc{version: a.Version, source: source}
	if created {
		return fmt.Sprintf(`{"_index":%q,"_id":%q,"_version":%d,"result":"created","_shards":{"total":1,"successful":1,"failed":0},"_seq_no":0,"_primary_term":1,"status":201}`, a.Index, a.ID, a.Version)
	}
	return fmt.Sprintf(`{"_index":%q,"_id":%q,"_version":%d,"result":"updated","status":200}`, a.Index, a.ID, a.Version)
}

// live returns the index's live documents by id.
func (n *bulkNode) live(index string) map[string]string {
	n.mu.Lock()
	defer n.mu.Unlock()
	out := map[string]string{}
	for id, d := range n.docs[index] {
		if !d.deleted {
			out[id] = d.source
		}
	}
	return out
}
