package opensearch

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"strings"
	"testing"

	"github.com/icecdc/icecdc/cdc"
)

// realNodeEnv names a running node (http://host:port, no security) that
// TestRealNode writes to; the interop stage starts one (interop/parts/
// opensearch.sh), and so can anyone with its jars.
const realNodeEnv = "ICECDC_OPENSEARCH_URL"

// TestRealNode runs the sink's history, its replays and a mapping
// rejection against a real node: what the test node above stands in for
// in the other tests.
func TestRealNode(t *testing.T) {
	url := os.Getenv(realNodeEnv)
	if url == "" {
		t.Skipf("%s is not set: no OpenSearch node to write to (the interop stage runs this against its own)", realNodeEnv)
	}
	index := fmt.Sprintf("sinktest-%d", os.Getpid())
	t.Cleanup(func() {
		req, _ := http.NewRequest(http.MethodDelete, url+"/"+index, nil)
		if resp, err := http.DefaultClient.Do(req); err == nil {
			resp.Body.Close()
		}
	})
	s := newTestSink(t, url, func(c *Config) { c.Index = index; c.Refresh = RefreshTrue })
	h := newHistory(t)
	hist := someHistory(h)
	writeAll(t, s, hist[2])
	writeAll(t, s, hist...)
	got, versions := realDocs(t, url, index)
	sameIndex(t, got, h.want())
	writeAll(t, s, hist[1], hist[0])
	again, versions2 := realDocs(t, url, index)
	sameIndex(t, again, got)
	for id, v := range versions {
		if versions2[id] != v {
			t.Errorf("document %s: version %d after the replay, %d before", id, versions2[id], v)
		}
	}
	// A document the mapping refuses: id is a long in the index now.
	bad := h.commit(1, change{cdc.OpCreate, 1000, "x"})[0]
	bad.Messages[0].Value = []byte(`{"id":"not a number","name":"x"}`)
	err := s.Write(context.Background(), bad)
	if err == nil || !strings.Contains(err.Error(), "index "+index+": document 1000: 400 ") ||
		!strings.Contains(err.Error(), "mapper_parsing_exception") && !strings.Contains(err.Error(), "document_parsing_exception") {
		t.Errorf("a refused document: %v", err)
	}
	t.Logf("%d documents, replays changed none; refusal: %v", len(got), err)
}

// realDocs reads every document of index with its version.
func realDocs(t *testing.T, url, index string) (map[string]string, map[string]int64) {
	t.Helper()
	resp, err := http.Get(url + "/" + index + "/_search?size=10000&version=true")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var r struct {
		Hits struct {
			Hits []struct {
				ID      string          `json:"_id"`
				Version int64           `json:"_version"`
				Source  json.RawMessage `json:"_source"`
			} `json:"hits"`
		} `json:"hits"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&r); err != nil {
		t.Fatal(err)
	}
	docs, versions := map[string]string{}, map[string]int64{}
	for _, h := range r.Hits.Hits {
		docs[h.ID], versions[h.ID] = string(h.Source), h.Version
	}
	return docs, versions
}
