package state

import (
	"encoding/json"
	"errors"
	"fmt"
	"sync"

	bolt "go.etcd.io/bbolt"
	berrors "go.etcd.io/bbolt/errors"
)

// keyFiles is the table's bucket of data-file index records, next to its
// checkpoint; keyFilesMeta, inside it, says whose records they are.
var (
	keyFiles     = []byte("files")
	keyFilesMeta = []byte("\x00meta") // no manifest path starts with NUL
)

// filesRecord describes a table's stored data-file index.
type filesRecord struct {
	V         int    `json:"v"`
	TableUUID string `json:"table_uuid"`
}

// FileIndex is one table's data-file index in the store: records by
// manifest path, opaque to the store (the source encodes and checks
// them). It implements source.IndexStore.
type FileIndex struct {
	s               *Store
	pipeline, table string
}

// pendingFiles are index changes waiting for the table's next Save.
type pendingFiles struct {
	uuid  string
	reset bool
	put   map[string][]byte
	drop  map[string]bool
}

type pendingKey struct{ pipeline, table string }

// pendingIndex holds the staged changes of every table.
type pendingIndex struct {
	mu sync.Mutex
	m  map[pendingKey]*pendingFiles
}

// FileIndex returns the data-file index of the table in the pipeline.
func (s *Store) FileIndex(pipeline, table string) *FileIndex {
	return &FileIndex{s: s, pipeline: pipeline, table: table}
}

// LoadFileIndex returns the stored records when they are the table
// tableUUID's and of the current format; otherwise none (the source
// rebuilds them, and the first Save after replaces them).
func (f *FileIndex) LoadFileIndex(tableUUID string) (map[string][]byte, error) {
	out := map[string][]byte{}
	err := f.s.db.View(func(tx *bolt.Tx) error {
		tb := tableBucket(tx, f.pipeline, f.table)
		if tb == nil {
			return nil
		}
		fb := tb.Bucket(keyFiles)
		if fb == nil {
			return nil
		}
		var rec filesRecord
		if err := json.Unmarshal(fb.Get(keyFilesMeta), &rec); err != nil || rec.V != formatVersion || rec.TableUUID != tableUUID {
			return nil
		}
		return fb.ForEach(func(k, v []byte) error {
			if v != nil && string(k) != string(keyFilesMeta) {
				out[string(k)] = append([]byte(nil), v...)
			}
			return nil
		})
	})
	if err != nil {
		return nil, fmt.Errorf("state %s: load data-file index %s/%s: %w", f.s.db.Path(), f.pipeline, f.table, err)
	}
	return out, nil
}

// StageFileIndex queues changes to the table's records; they are written
// by the table's next Save, in the checkpoint's transaction.
func (f *FileIndex) StageFileIndex(tableUUID string, put map[string][]byte, drop []string, reset bool) {
	pi := &f.s.pending
	pi.mu.Lock()
	defer pi.mu.Unlock()
	if pi.m == nil {
		pi.m = map[pendingKey]*pendingFiles{}
	}
	k := pendingKey{f.pipeline, f.table}
	p := pi.m[k]
	if p == nil || p.uuid != tableUUID || reset {
		p = &pendingFiles{uuid: tableUUID, reset: reset || (p != nil && p.uuid != tableUUID), put: map[string][]byte{}, drop: map[string]bool{}}
		pi.m[k] = p
	}
	for _, d := range drop {
		delete(p.put, d)
		p.drop[d] = true
	}
	for k, v := range put {
		delete(p.drop, k)
		p.put[k] = v
	}
}

// takePending removes and returns the table's staged index changes.
func (s *Store) takePending(pipeline, table string) *pendingFiles {
	s.pending.mu.Lock()
	defer s.pending.mu.Unlock()
	k := pendingKey{pipeline, table}
	p := s.pending.m[k]
	delete(s.pending.m, k)
	return p
}

// restorePending puts back changes whose transaction failed, under any
// staged since.
func (s *Store) restorePending(pipeline, table string, p *pendingFiles) {
	s.pending.mu.Lock()
	defer s.pending.mu.Unlock()
	k := pendingKey{pipeline, table}
	if later := s.pending.m[k]; later != nil && later.uuid == p.uuid && !later.reset {
		for d := range later.drop {
			delete(p.put, d)
			p.drop[d] = true
		}
		for k, v := range later.put {
			delete(p.drop, k)
			p.put[k] = v
		}
	} else if later != nil {
		return // a newer reset or another table uuid supersedes p
	}
	if s.pending.m == nil {
		s.pending.m = map[pendingKey]*pendingFiles{}
	}
	s.pending.m[k] = p
}

// writeFiles applies staged index changes in the table's bucket.
func writeFiles(tb *bolt.Bucket, p *pendingFiles) error {
	if p.reset {
		if err := tb.DeleteBucket(keyFiles); err != nil && !errors.Is(err, berrors.ErrBucketNotFound) {
			return err
		}
	}
	fb := tb.Bucket(keyFiles)
	if fb != nil {
		var rec filesRecord
		if err := json.Unmarshal(fb.Get(keyFilesMeta), &rec); err != nil || rec.V != formatVersion || rec.TableUUID != p.uuid {
			// Another table's, or of another format: replaced whole.
			if err := tb.DeleteBucket(keyFiles); err != nil {
				return err
			}
			fb = nil
		}
	}
	if fb == nil {
		var err error
		if fb, err = tb.CreateBucket(keyFiles); err != nil {
			return err
		}
		meta, _ := json.Marshal(filesRecord{V: formatVersion, TableUUID: p.uuid})
		if err := fb.Put(keyFilesMeta, meta); err != nil {
			return err
		}
	}
	for k := range p.drop {
		if err := fb.Delete([]byte(k)); err != nil {
			return err
		}
	}
	for k, v := range p.put {
		if k == "" || k[0] == 0 {
			continue // not a manifest path
		}
		if err := fb.Put([]byte(k), v); err != nil {
			return err
		}
	}
	return nil
}
