package javatables

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/table"
	"github.com/twmb/avro/ocf"
)

// Placeholder is the table location the stored tables carry in place of
// the directory Spark wrote them in. It keeps the spelling Iceberg Java
// uses for local paths (file:/abs/path).
const Placeholder = "file:/ICECDC_TESTDATA"

// posDeleteFilePathID is the field id of a position-delete file's file_path
// column: its bounds in a manifest hold the path of the data file deleted
// from, so they are relocated too.
const posDeleteFilePathID = 2147483546

// Relocation describes one copy of a table from one location to another.
type Relocation struct {
	// Metadata is the local path of the metadata.json to copy; the files
	// of every snapshot it lists are copied with it.
	Metadata string
	// SrcDir is the local directory that holds the files whose paths start
	// with From (the table location the metadata names).
	SrcDir string
	// From and To are table locations: every path under From becomes the
	// same path under To. A path outside From is an error.
	From, To string
	// OutDir is the local directory the files for To are written to.
	OutDir string
}

// Result says what a relocation wrote.
type Result struct {
	// Metadata is the path of the metadata.json relative to OutDir.
	Metadata string `json:"metadata"`
	// Files counts the files written.
	Files int `json:"files"`
	// Rewritten lists, relative to OutDir, the files whose bytes changed
	// beyond the metadata: manifest lists, manifests, Puffin files (the
	// referenced-data-file property of their blobs) and position-delete
	// files (their file_path column).
	Rewritten []string `json:"rewritten"`
}

// Relocate copies the table r describes, rewriting every path under r.From
// to r.To: the current metadata.json (as text, so that everything else in
// it stays byte for byte), each snapshot's manifest list and manifests
// (read and written with iceberg-go's Avro readers and writers, the
// manifest lengths in the lists updated), Puffin footers and the file_path
// column of position-delete files (sizes updated in the manifests). Data
// files are copied unchanged. Only files the metadata references are
// copied: older metadata files and orphans are left out.
//
// Everything but the paths, the sizes of rewritten files and the manifest
// lengths is preserved exactly, nulls included: sequence numbers left to
// inheritance stay null, explicit first_row_id stay explicit, entries keep
// their status and snapshot ids, vectors their offsets and sizes. Each
// rewritten manifest list and manifest is read back and compared with the
// original, field by field, before Relocate returns.
func Relocate(ctx context.Context, r Relocation) (Result, error) {
	r.From = strings.TrimSuffix(r.From, "/")
	r.To = strings.TrimSuffix(r.To, "/")
	rl := &relocator{r: r, sizes: map[string]int64{}, manifests: map[string]int64{}}
	res, err := rl.run(ctx)
	if err != nil {
		return Result{}, fmt.Errorf("relocate %s from %s to %s: %w", r.Metadata, r.From, r.To, err)
	}
	return res, nil
}

type relocator struct {
	r         Relocation
	sizes     map[string]int64 // data, delete and Puffin files written: their new size
	manifests map[string]int64 // manifests written: their new length
	res       Result
}

// rel returns the path of p relative to the source location.
func (rl *relocator) rel(p string) (string, error) {
	if !strings.HasPrefix(p, rl.r.From+"/") {
		return "", fmt.Errorf("path %s is not under the table location %s", p, rl.r.From)
	}
	rel := strings.TrimPrefix(p, rl.r.From+"/")
	if rel == "" || strings.Contains("/"+rel+"/", "/../") {
		return "", fmt.Errorf("path %s: bad relative path %q", p, rel)
	}
	return rel, nil
}

// moved returns p relocated; p must be under From.
func (rl *relocator) moved(p string) (string, error) {
	rel, err := rl.rel(p)
	if err != nil {
		return "", err
	}
	return rl.r.To + "/" + rel, nil
}

func (rl *relocator) read(p string) ([]byte, error) {
	rel, err := rl.rel(p)
	if err != nil {
		return nil, err
	}
	return os.ReadFile(filepath.Join(rl.r.SrcDir, filepath.FromSlash(rel)))
}

func (rl *relocator) write(p string, b []byte, rewritten bool) error {
	rel, err := rl.rel(p)
	if err != nil {
		return err
	}
	dst := filepath.Join(rl.r.OutDir, filepath.FromSlash(rel))
	if err := os.MkdirAll(filepath.Dir(dst), 0o755); err != nil {
		return err
	}
	if err := os.WriteFile(dst, b, 0o644); err != nil {
		return err
	}
	rl.res.Files++
	if rewritten {
		rl.res.Rewritten = append(rl.res.Rewritten, rel)
	}
	return nil
}

func (rl *relocator) run(ctx context.Context) (Result, error) {
	raw, err := os.ReadFile(rl.r.Metadata)
	if err != nil {
		return Result{}, err
	}
	meta, err := table.ParseMetadataBytes(raw)
	if err != nil {
		return Result{}, fmt.Errorf("metadata: %w", err)
	}
	if meta.Location() != rl.r.From {
		return Result{}, fmt.Errorf("metadata: location %s, want %s", meta.Location(), rl.r.From)
	}
	if err := noSideFiles(raw); err != nil {
		return Result{}, err
	}
	out, err := relocateJSON(raw, rl.r.From, rl.r.To)
	if err != nil {
		return Result{}, err
	}
	absMeta, err := filepath.Abs(rl.r.Metadata)
	if err != nil {
		return Result{}, err
	}
	absSrc, err := filepath.Abs(rl.r.SrcDir)
	if err != nil {
		return Result{}, err
	}
	relMeta, err := filepath.Rel(absSrc, absMeta)
	if err != nil || strings.HasPrefix(relMeta, "..") {
		return Result{}, fmt.Errorf("metadata %s is not under %s", rl.r.Metadata, rl.r.SrcDir)
	}
	rl.res.Metadata = filepath.ToSlash(relMeta)
	for _, snap := range meta.Snapshots() {
		if err := ctx.Err(); err != nil {
			return Result{}, err
		}
		if err := rl.manifestList(snap); err != nil {
			return Result{}, fmt.Errorf("snapshot %d: %w", snap.SnapshotID, err)
		}
	}
	if err := rl.write(rl.r.From+"/"+rl.res.Metadata, out, false); err != nil {
		return Result{}, err
	}
	return rl.res, nil
}

// noSideFiles refuses metadata that references statistics files: they are
// not relocated.
func noSideFiles(raw []byte) error {
	var m map[string]json.RawMessage
	if err := json.Unmarshal(raw, &m); err != nil {
		return fmt.Errorf("metadata: %w", err)
	}
	for _, k := range []string{"statistics", "partition-statistics"} {
		var list []json.RawMessage
		if v, ok := m[k]; ok {
			if err := json.Unmarshal(v, &list); err != nil {
				return fmt.Errorf("metadata %s: %w", k, err)
			}
			if len(list) > 0 {
				return fmt.Errorf("metadata lists %s files, which relocation does not copy", k)
			}
		}
	}
	return nil
}

// relocateJSON replaces the location in every JSON string that is the
// location or starts with it and a slash, leaving every other byte as it
// was. It checks the result parses and that no string still names the old
// location.
func relocateJSON(raw []byte, from, to string) ([]byte, error) {
	enc := func(s string) string {
		b, _ := json.Marshal(s)
		return strings.TrimSuffix(string(b), `"`)
	}
	out := bytes.ReplaceAll(raw, []byte(enc(from)+`/`), []byte(enc(to)+`/`))
	out = bytes.ReplaceAll(out, []byte(enc(from)+`"`), []byte(enc(to)+`"`))
	var v any
	if err := json.Unmarshal(out, &v); err != nil {
		return nil, fmt.Errorf("metadata after relocation: %w", err)
	}
	var stale []string
	var walk func(any)
	walk = func(v any) {
		switch x := v.(type) {
		case string:
			if x == from || strings.HasPrefix(x, from+"/") {
				stale = append(stale, x)
			}
		case []any:
			for _, e := range x {
				walk(e)
			}
		case map[string]any:
			for _, e := range x {
				walk(e)
			}
		}
	}
	walk(v)
	if len(stale) > 0 {
		return nil, fmt.Errorf("metadata: %d strings still name %s after relocation, e.g. %q", len(stale), from, stale[0])
	}
	return out, nil
}

// manifestList rewrites a snapshot's manifest list and the manifests in it.
func (rl *relocator) manifestList(snap table.Snapshot) error {
	raw, err := rl.read(snap.ManifestList)
	if err != nil {
		return err
	}
	files, err := iceberg.ReadManifestList(bytes.NewReader(raw))
	if err != nil {
		return fmt.Errorf("manifest list %s: %w", snap.ManifestList, err)
	}
	version := 2
	if snap.FirstRowID != nil {
		version = 3
	}
	for _, m := range files {
		if m.Version() != version {
			return fmt.Errorf("manifest list %s: manifest %s recorded as v%d in a list of a v%d snapshot",
				snap.ManifestList, m.FilePath(), m.Version(), version)
		}
	}
	var buf bytes.Buffer
	var w *iceberg.ManifestListWriter
	switch version {
	case 3:
		w, err = iceberg.NewManifestListWriterV3(&buf, snap.SnapshotID, snap.SequenceNumber, *snap.FirstRowID, snap.ParentSnapshotID)
	default:
		w, err = iceberg.NewManifestListWriterV2(&buf, snap.SnapshotID, snap.SequenceNumber, snap.ParentSnapshotID)
	}
	if err != nil {
		return err
	}
	want := make([]string, len(files))
	for i, m := range files {
		length, err := rl.manifest(m)
		if err != nil {
			return fmt.Errorf("manifest %s: %w", m.FilePath(), err)
		}
		path, err := rl.moved(m.FilePath())
		if err != nil {
			return err
		}
		nf := iceberg.NewManifestFile(m.Version(), path, length, m.PartitionSpecID(), m.SnapshotID()).
			SequenceNum(m.SequenceNum(), m.MinSequenceNum()).Content(m.ManifestContent()).
			AddedFiles(m.AddedDataFiles()).ExistingFiles(m.ExistingDataFiles()).DeletedFiles(m.DeletedDataFiles()).
			AddedRows(m.AddedRows()).ExistingRows(m.ExistingRows()).DeletedRows(m.DeletedRows()).
			Partitions(m.Partitions()).KeyMetadata(m.KeyMetadata()).Build()
		if version == 3 && m.ManifestContent() == iceberg.ManifestContentData {
			// The v3 writer assigns first_row_id to a data manifest that
			// has none, from its running next row id: set that to the
			// value Java wrote, so the list keeps it.
			if m.FirstRowID() == nil {
				return fmt.Errorf("manifest %s: no first_row_id in a v3 list: iceberg-go's writer would assign one", m.FilePath())
			}
			*w.NextRowID() = *m.FirstRowID()
		}
		if err := w.AddManifests([]iceberg.ManifestFile{nf}); err != nil {
			return fmt.Errorf("manifest list %s: %w", snap.ManifestList, err)
		}
		want[i] = describeManifestFile(m, path, length)
	}
	if err := w.Close(); err != nil {
		return err
	}
	// Read back: everything but paths and lengths as Java wrote it.
	back, err := iceberg.ReadManifestList(bytes.NewReader(buf.Bytes()))
	if err != nil {
		return fmt.Errorf("manifest list %s as rewritten: %w", snap.ManifestList, err)
	}
	if len(back) != len(files) {
		return fmt.Errorf("manifest list %s as rewritten: %d manifests, want %d", snap.ManifestList, len(back), len(files))
	}
	for i, m := range back {
		if got := describeManifestFile(m, m.FilePath(), m.Length()); got != want[i] {
			return fmt.Errorf("manifest list %s as rewritten differs:\n got %s\nwant %s", snap.ManifestList, got, want[i])
		}
	}
	return rl.write(snap.ManifestList, buf.Bytes(), true)
}

func describeManifestFile(m iceberg.ManifestFile, path string, length int64) string {
	first := "null"
	if v := m.FirstRowID(); v != nil {
		first = fmt.Sprint(*v)
	}
	var parts []string
	for _, p := range m.Partitions() {
		nan := "null"
		if p.ContainsNaN != nil {
			nan = fmt.Sprint(*p.ContainsNaN)
		}
		parts = append(parts, fmt.Sprintf("{null=%v nan=%s lower=%x upper=%x}", p.ContainsNull, nan, deref(p.LowerBound), deref(p.UpperBound)))
	}
	return fmt.Sprintf("path=%s length=%d spec=%d content=%v seq=%d min_seq=%d snapshot=%d files=%d/%d/%d rows=%d/%d/%d first_row_id=%s partitions=%v key=%x",
		path, length, m.PartitionSpecID(), m.ManifestContent(), m.SequenceNum(), m.MinSequenceNum(), m.SnapshotID(),
		m.AddedDataFiles(), m.ExistingDataFiles(), m.DeletedDataFiles(), m.AddedRows(), m.ExistingRows(), m.DeletedRows(),
		first, parts, m.KeyMetadata())
}

func deref(b *[]byte) []byte {
	if b == nil {
		return nil
	}
	return *b
}

// rawEntries reads a manifest's entries as stored: no sequence number,
// snapshot id or first_row_id inheritance (a null snapshot id reads as -1,
// a null sequence number as -1).
func rawEntries(m iceberg.ManifestFile, raw []byte) (*iceberg.ManifestReader, []iceberg.ManifestEntry, error) {
	fake := iceberg.NewManifestFile(m.Version(), m.FilePath(), int64(len(raw)), m.PartitionSpecID(), -1).
		SequenceNum(-1, -1).Content(m.ManifestContent()).Build()
	r, err := iceberg.NewManifestReader(fake, bytes.NewReader(raw))
	if err != nil {
		return nil, nil, err
	}
	var out []iceberg.ManifestEntry
	for {
		e, err := r.ReadEntry()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			r.Close()
			return nil, nil, err
		}
		out = append(out, e)
	}
	return r, out, nil
}

// manifest rewrites one manifest (once, however many lists hold it) and
// returns its new length.
func (rl *relocator) manifest(m iceberg.ManifestFile) (int64, error) {
	if n, ok := rl.manifests[m.FilePath()]; ok {
		return n, nil
	}
	raw, err := rl.read(m.FilePath())
	if err != nil {
		return 0, err
	}
	if int64(len(raw)) != m.Length() {
		return 0, fmt.Errorf("length %d, the manifest list says %d", len(raw), m.Length())
	}
	r, entries, err := rawEntries(m, raw)
	if err != nil {
		return 0, err
	}
	defer r.Close()
	schema, err := headerSchema(raw)
	if err != nil {
		return 0, err
	}
	spec, err := r.PartitionSpec()
	if err != nil {
		return 0, err
	}
	var buf bytes.Buffer
	w, err := iceberg.NewManifestWriter(r.Version(), &buf, *spec, schema, m.SnapshotID(),
		iceberg.WithManifestWriterContent(m.ManifestContent()))
	if err != nil {
		return 0, err
	}
	want := make([]string, len(entries))
	for i, e := range entries {
		df, err := rl.dataFile(*spec, e.DataFile())
		if err != nil {
			return 0, err
		}
		snap, seq, fseq := e.SnapshotID(), e.SequenceNum(), e.FileSequenceNum()
		switch e.Status() {
		case iceberg.EntryStatusADDED:
			// The writer stamps added entries with the manifest's snapshot
			// id and leaves their file sequence number to inheritance.
			if snap != m.SnapshotID() {
				return 0, fmt.Errorf("added entry %s: snapshot id %d, not the manifest's %d: cannot be preserved", df.FilePath(), snap, m.SnapshotID())
			}
			if fseq != nil {
				return 0, fmt.Errorf("added entry %s: explicit file sequence number %d: cannot be preserved", df.FilePath(), *fseq)
			}
			err = w.Add(iceberg.NewManifestEntry(e.Status(), nil, &seq, nil, df))
		case iceberg.EntryStatusDELETED:
			if snap != m.SnapshotID() {
				return 0, fmt.Errorf("deleted entry %s: snapshot id %d, not the manifest's %d: cannot be preserved", df.FilePath(), snap, m.SnapshotID())
			}
			err = w.Delete(iceberg.NewManifestEntry(e.Status(), &snap, &seq, fseq, df))
		default:
			if snap == -1 {
				return 0, fmt.Errorf("existing entry %s without snapshot id", df.FilePath())
			}
			err = w.Existing(iceberg.NewManifestEntry(e.Status(), &snap, &seq, fseq, df))
		}
		if err != nil {
			return 0, fmt.Errorf("entry %s: %w", df.FilePath(), err)
		}
		want[i] = describeEntry(e, df.FilePath(), rl.newRef(e.DataFile()), df.FileSizeBytes(), rl.boundPath)
	}
	if err := w.Close(); err != nil {
		return 0, err
	}
	if err := rl.checkManifest(m, raw, buf.Bytes(), r, want); err != nil {
		return 0, err
	}
	if err := rl.write(m.FilePath(), buf.Bytes(), true); err != nil {
		return 0, err
	}
	rl.manifests[m.FilePath()] = int64(buf.Len())
	return int64(buf.Len()), nil
}

// checkManifest reads a rewritten manifest back and compares it with the
// original: header (version, content, schema, spec) and every entry.
func (rl *relocator) checkManifest(m iceberg.ManifestFile, in, out []byte, orig *iceberg.ManifestReader, want []string) error {
	r, entries, err := rawEntries(m, out)
	if err != nil {
		return fmt.Errorf("as rewritten: %w", err)
	}
	defer r.Close()
	if r.Version() != orig.Version() || r.ManifestContent() != orig.ManifestContent() {
		return fmt.Errorf("as rewritten: v%d %v, want v%d %v", r.Version(), r.ManifestContent(), orig.Version(), orig.ManifestContent())
	}
	s1, err1 := headerSchema(out)
	s2, err2 := headerSchema(in)
	if err := errors.Join(err1, err2); err != nil {
		return err
	}
	if !s1.Equals(s2) || s1.ID != s2.ID {
		return fmt.Errorf("as rewritten: schema %v, want %v", s1, s2)
	}
	p1, err1 := r.PartitionSpec()
	p2, err2 := orig.PartitionSpec()
	if err := errors.Join(err1, err2); err != nil {
		return err
	}
	if !p1.Equals(*p2) {
		return fmt.Errorf("as rewritten: partition spec %v, want %v", p1, p2)
	}
	if len(entries) != len(want) {
		return fmt.Errorf("as rewritten: %d entries, want %d", len(entries), len(want))
	}
	ident := func(b []byte) []byte { return b }
	for i, e := range entries {
		df := e.DataFile()
		ref := ""
		if v := df.ReferencedDataFile(); v != nil {
			ref = *v
		}
		if got := describeEntry(e, df.FilePath(), ref, df.FileSizeBytes(), ident); got != want[i] {
			return fmt.Errorf("as rewritten: entry %d differs:\n got %s\nwant %s", i, got, want[i])
		}
	}
	return nil
}

func (rl *relocator) newRef(df iceberg.DataFile) string {
	if v := df.ReferencedDataFile(); v != nil {
		p, err := rl.moved(*v)
		if err != nil {
			return "error: " + err.Error()
		}
		return p
	}
	return ""
}

// boundPath relocates a file_path bound (a path, possibly truncated).
func (rl *relocator) boundPath(b []byte) []byte {
	if bytes.HasPrefix(b, []byte(rl.r.From+"/")) {
		return append([]byte(rl.r.To), b[len(rl.r.From):]...)
	}
	return b
}

// describeEntry renders every field of an entry as stored, with the path,
// referenced data file, file size and file_path bounds given.
func describeEntry(e iceberg.ManifestEntry, path, ref string, size int64, bound func([]byte) []byte) string {
	df := e.DataFile()
	fseq := "null"
	if v := e.FileSequenceNum(); v != nil {
		fseq = fmt.Sprint(*v)
	}
	opt := func(p *int64) string {
		if p == nil {
			return "null"
		}
		return fmt.Sprint(*p)
	}
	sort := "null"
	if v := df.SortOrderID(); v != nil {
		sort = fmt.Sprint(*v)
	}
	bounds := func(m map[int][]byte) string {
		out := map[int]string{}
		for k, v := range m {
			if k == posDeleteFilePathID {
				v = bound(v)
			}
			out[k] = fmt.Sprintf("%x", v)
		}
		return fmt.Sprint(out)
	}
	return fmt.Sprintf("status=%v snapshot=%d seq=%d file_seq=%s content=%v path=%s format=%v partition=%v count=%d size=%d "+
		"column_sizes=%v values=%v nulls=%v nans=%v distinct=%v lower=%s upper=%s key=%x splits=%v eq=%v sort=%s "+
		"first_row_id=%s ref=%s offset=%s content_size=%s",
		e.Status(), e.SnapshotID(), e.SequenceNum(), fseq, df.ContentType(), path, df.FileFormat(), df.Partition(), df.Count(), size,
		df.ColumnSizes(), df.ValueCounts(), df.NullValueCounts(), df.NaNValueCounts(), df.DistinctValueCounts(),
		bounds(df.LowerBoundValues()), bounds(df.UpperBoundValues()), df.KeyMetadata(), df.SplitOffsets(), df.EqualityFieldIDs(), sort,
		opt(df.FirstRowID()), ref, opt(df.ContentOffset()), opt(df.ContentSizeInBytes()))
}

// dataFile copies the file an entry names and returns the entry's data file
// relocated: path, referenced data file, file_path bounds, and the size of
// a file whose bytes had to change.
func (rl *relocator) dataFile(spec iceberg.PartitionSpec, df iceberg.DataFile) (iceberg.DataFile, error) {
	path, err := rl.moved(df.FilePath())
	if err != nil {
		return nil, err
	}
	size, err := rl.file(df)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", df.FilePath(), err)
	}
	b, err := iceberg.NewDataFileBuilder(spec, df.ContentType(), path, df.FileFormat(), df.Partition(), nil, nil, df.Count(), size)
	if err != nil {
		return nil, err
	}
	relocBounds := func(m map[int][]byte) map[int][]byte {
		if m == nil {
			return nil
		}
		out := make(map[int][]byte, len(m))
		for k, v := range m {
			if k == posDeleteFilePathID {
				v = rl.boundPath(v)
			}
			out[k] = v
		}
		return out
	}
	b.ColumnSizes(df.ColumnSizes()).ValueCounts(df.ValueCounts()).NullValueCounts(df.NullValueCounts()).
		NaNValueCounts(df.NaNValueCounts()).DistinctValueCounts(df.DistinctValueCounts()).
		LowerBoundValues(relocBounds(df.LowerBoundValues())).UpperBoundValues(relocBounds(df.UpperBoundValues()))
	if v := df.SplitOffsets(); v != nil {
		b.SplitOffsets(v)
	}
	if v := df.EqualityFieldIDs(); v != nil {
		b.EqualityFieldIDs(v)
	}
	if v := df.SortOrderID(); v != nil {
		b.SortOrderID(*v)
	}
	if v := df.KeyMetadata(); v != nil {
		b.KeyMetadata(v)
	}
	if v := df.ReferencedDataFile(); v != nil {
		ref, err := rl.moved(*v)
		if err != nil {
			return nil, err
		}
		b.ReferencedDataFile(ref)
	}
	if v := df.FirstRowID(); v != nil {
		b.FirstRowID(*v)
	}
	if v := df.ContentOffset(); v != nil {
		b.ContentOffset(*v)
	}
	if v := df.ContentSizeInBytes(); v != nil {
		b.ContentSizeInBytes(*v)
	}
	return b.Build(), nil
}

// file writes the relocated copy of a data, delete or Puffin file (once)
// and returns its size.
func (rl *relocator) file(df iceberg.DataFile) (int64, error) {
	if n, ok := rl.sizes[df.FilePath()]; ok {
		return n, nil
	}
	raw, err := rl.read(df.FilePath())
	if err != nil {
		return 0, err
	}
	if int64(len(raw)) != df.FileSizeBytes() {
		return 0, fmt.Errorf("size %d, the manifest says %d", len(raw), df.FileSizeBytes())
	}
	out, rewritten := raw, false
	switch {
	case df.FileFormat() == iceberg.PuffinFile:
		out, err = relocatePuffin(raw, rl.moved)
		rewritten = true
	case df.ContentType() == iceberg.EntryContentPosDeletes && df.FileFormat() == iceberg.ParquetFile:
		out, err = relocatePositionDeletes(raw, rl.moved)
		rewritten = true
	case df.ContentType() == iceberg.EntryContentData && df.FileFormat() == iceberg.ParquetFile:
	default:
		return 0, fmt.Errorf("%v %v file: relocation does not know whether it holds paths", df.ContentType(), df.FileFormat())
	}
	if err != nil {
		return 0, err
	}
	if err := rl.write(df.FilePath(), out, rewritten); err != nil {
		return 0, err
	}
	rl.sizes[df.FilePath()] = int64(len(out))
	return int64(len(out)), nil
}

// headerSchema returns the table schema a manifest's Avro header records
// ("schema"). Iceberg Java writes no "schema-id" key beside it, which
// iceberg-go's ManifestReader.Schema requires; the id is inside the JSON.
func headerSchema(raw []byte) (*iceberg.Schema, error) {
	rd, err := ocf.NewReader(bytes.NewReader(raw))
	if err != nil {
		return nil, err
	}
	defer rd.Close()
	js, ok := rd.Metadata()["schema"]
	if !ok {
		return nil, errors.New("manifest header without schema")
	}
	var sc iceberg.Schema
	if err := json.Unmarshal(js, &sc); err != nil {
		return nil, fmt.Errorf("manifest header schema: %w", err)
	}
	return &sc, nil
}
