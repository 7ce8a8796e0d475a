package source

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/url"
	"path"
	"path/filepath"
	"slices"
	"strings"
	"sync"

	iceio "github.com/apache/iceberg-go/io"
	"github.com/apache/iceberg-go/table"
)

// ErrOutsideLocations is wrapped by the error for a file outside the
// locations a table may be read from (Options.AllowedLocations).
var ErrOutsideLocations = errors.New("outside the allowed locations")

// outsideError says which locations were allowed; the caller names the
// file. via is where a local file's symbolic links led, when that is what
// is outside.
type outsideError struct{ allowed, via string }

func (e *outsideError) Error() string {
	if e.via != "" {
		return fmt.Sprintf("a symbolic link to %s, %s (%s); add that to allowed_locations to read it", e.via, ErrOutsideLocations, e.allowed)
	}
	return fmt.Sprintf("%s (%s); add it to allowed_locations to read it", ErrOutsideLocations, e.allowed)
}

func (e *outsideError) Unwrap() error { return ErrOutsideLocations }

// locations is the set of prefixes a table's files may be read from: a
// manifest list, manifest, data or delete file elsewhere is refused before
// it is opened, so that corrupt or hostile metadata cannot make icecdc read
// (and report) files that are not the table's.
type locations struct {
	prefixes []string // normalised
	describe string   // for errors: where the prefixes came from

	resolveOnce sync.Once
	resolved    []string // the local prefixes with their symbolic links resolved
}

// tableLocations returns the locations a table may be read from: the
// configured ones, or by default the table's location, the write paths its
// properties name and the catalog's warehouse.
//
// The metadata file is no allowed location: it is read before the table
// is confined (by the catalog, or by New for a metadata file the user
// named), and a path allowed because it is named as the metadata location
// would let the metadata name one file outside the locations as both that
// and a manifest list, or a REST catalog whose metadata comes inline name
// any file.
func tableLocations(o Options, meta table.Metadata) *locations {
	l := &locations{}
	var parts []string
	add := func(what, p string, fromMetadata bool) {
		if p == "" {
			return
		}
		n, err := normalise(p)
		if err == nil && fromMetadata && n == "/" {
			// No table lives at the root of a file system: a metadata
			// saying so would allow every file of the machine.
			parts = append(parts, what+" / (a file system root: not allowed unless allowed_locations says so)")
			return
		}
		if err == nil {
			l.prefixes = append(l.prefixes, n)
		}
		parts = append(parts, what+" "+p)
	}
	if len(o.AllowedLocations) > 0 {
		for _, p := range o.AllowedLocations {
			add("allowed_locations", p, false)
		}
	} else {
		// The default trusts the metadata to say where the table is: the
		// catalog's warehouse alone would refuse what is legitimate and
		// common, a table outside it (Glue and Hive tables anywhere in a
		// bucket, a REST catalog whose warehouse is a name), a table read
		// from its metadata file without a catalog. Table.Refresh says in
		// one WARN line what this allows.
		add("table location", meta.Location(), true)
		// Write paths a table may keep its files under instead of its location.
		for _, k := range []string{"write.data.path", "write.metadata.path", "write.object-storage.path", "write.folder-storage.path"} {
			add(k, meta.Properties()[k], true)
		}
		add("warehouse", o.Warehouse, false)
	}
	l.describe = strings.Join(parts, ", ")
	if l.describe == "" {
		l.describe = "none"
	}
	return l
}

// check returns an *outsideError for a path outside every allowed location.
func (l *locations) check(p string) error {
	n, err := normalise(p)
	if err == nil {
		for _, pre := range l.prefixes {
			if within(n, pre) {
				return nil
			}
		}
	}
	return &outsideError{allowed: l.describe}
}

// checkResolved checks the path a local file's symbolic links lead to
// (filepath.EvalSymlinks), after check passed its name: a link inside the
// table to a file outside it is refused as the file itself would be. The
// prefixes count as they are written and as their own links resolve (a
// warehouse configured through a link to its disk).
func (l *locations) checkResolved(real string) error {
	l.resolveOnce.Do(func() {
		for _, pre := range l.prefixes {
			if isObjectStore(pre) {
				continue
			}
			if r, err := filepath.EvalSymlinks(filepath.FromSlash(pre)); err == nil {
				l.resolved = append(l.resolved, filepath.ToSlash(r))
			}
		}
	})
	n := filepath.ToSlash(real)
	for _, pre := range slices.Concat(l.prefixes, l.resolved) {
		if within(n, pre) {
			return nil
		}
	}
	return &outsideError{allowed: l.describe, via: real}
}

// within reports whether normalised path p is prefix or under it, on a
// path-segment boundary: /wh/tbl2 is not inside /wh/tbl.
func within(p, prefix string) bool {
	if p == prefix {
		return true
	}
	if !strings.HasSuffix(prefix, "/") {
		prefix += "/"
	}
	return strings.HasPrefix(p, prefix)
}

// normalise turns a location into one comparable form, the way the file IO
// will resolve it: a local file (file:/x, file:///x, file://localhost/x or
// /x, percent-escapes in URIs decoded as iceberg-go's local IO does) becomes
// a clean absolute path; an object-store URI becomes scheme://authority/key
// with the key cleaned (s3a and s3n are s3). Cleaning resolves "..", so a
// path that climbs out of the table is compared where it lands.
func normalise(loc string) (string, error) {
	scheme, rest, hasScheme := splitScheme(loc)
	switch {
	case !hasScheme:
		return localClean(loc)
	case scheme == "file":
		u, err := url.Parse(loc)
		if err != nil {
			return "", err
		}
		if u.Host != "" && !strings.EqualFold(u.Host, "localhost") {
			return "", fmt.Errorf("file URI with host %q", u.Host)
		}
		p := u.Path
		if u.Opaque != "" {
			if p, err = url.PathUnescape(u.Opaque); err != nil {
				return "", err
			}
		}
		return localClean(p)
	}
	switch scheme {
	case "s3a", "s3n":
		scheme = "s3"
	}
	authority, key, _ := strings.Cut(rest, "/")
	if authority == "" {
		return "", errors.New("no authority")
	}
	return scheme + "://" + authority + path.Clean("/"+key), nil
}

// splitScheme returns a URI's lower-case scheme and what follows "://", or
// for "file:" without slashes what follows the colon. Anything else is a
// local path (a colon may be part of a file name), as iceberg-go reads it.
func splitScheme(loc string) (scheme, rest string, ok bool) {
	i := strings.IndexByte(loc, ':')
	if i <= 0 || strings.ContainsAny(loc[:i], `/\`) {
		return "", "", false
	}
	scheme = strings.ToLower(loc[:i])
	if r, found := strings.CutPrefix(loc[i+1:], "//"); found {
		return scheme, r, true
	}
	if scheme == "file" {
		return scheme, loc[i+1:], true
	}
	return "", "", false
}

func localClean(p string) (string, error) {
	if p == "" {
		return "", errors.New("empty path")
	}
	abs, err := filepath.Abs(p)
	if err != nil {
		return "", err
	}
	return filepath.ToSlash(abs), nil // Abs cleans
}

// confinedIO is the file IO a table is read through: every open is checked
// against the table's locations first. icecdc checks the files it opens
// itself with clearer messages; this also covers the opens inside
// iceberg-go (scans of data and equality-delete files).
type confinedIO struct {
	inner iceio.IO
	locs  *locations
}

var _ iceio.IO = (*confinedIO)(nil)

// Open opens name if it is inside the allowed locations. The refusal is
// returned bare (not a *fs.PathError): callers name the file.
func (c *confinedIO) Open(name string) (iceio.File, error) {
	// The name is checked before the file system is asked anything, so
	// that a file outside is refused alike whether it exists or not.
	if err := c.locs.check(name); err != nil {
		return nil, err
	}
	var f iceio.File
	var err error
	if _, local := c.inner.(localIO); local {
		f, err = openLocal(name, c.locs)
	} else {
		f, err = c.inner.Open(name)
	}
	if err != nil {
		return nil, err
	}
	return ioFile{f}, nil
}

// Remove removes name if it is inside the allowed locations; icecdc itself
// never removes files.
func (c *confinedIO) Remove(name string) error {
	if err := c.locs.check(name); err != nil {
		return err
	}
	return c.inner.Remove(name)
}

// Close closes the inner IO, if it can be closed.
func (c *confinedIO) Close() error {
	if cl, ok := c.inner.(io.Closer); ok {
		return cl.Close()
	}
	return nil
}

// ioFile marks errors of reading a file as I/O errors, so that a decoder's
// error on the same file can be told from them (see fileError).
type ioFile struct{ iceio.File }

func (f ioFile) Read(p []byte) (int, error) {
	n, err := f.File.Read(p)
	return n, asIOError(err)
}

func (f ioFile) ReadAt(p []byte, off int64) (int, error) {
	n, err := f.File.ReadAt(p, off)
	return n, asIOError(err)
}

func (f ioFile) Seek(offset int64, whence int) (int64, error) {
	n, err := f.File.Seek(offset, whence)
	return n, asIOError(err)
}

// ioError is an error of the storage, not of a file's content.
type ioError struct{ err error }

func (e *ioError) Error() string { return e.err.Error() }
func (e *ioError) Unwrap() error { return e.err }

func asIOError(err error) error {
	if err == nil || errors.Is(err, io.EOF) {
		return err // io.EOF must stay itself: readers compare with ==
	}
	return &ioError{err}
}

// confine returns tbl reading through a confinedIO over the store st; cat
// is the catalog it commits through (nil for a table loaded from a
// metadata file).
func confine(o Options, st *store, tbl *table.Table, cat table.CatalogIO) *table.Table {
	locs := tableLocations(o, tbl.Metadata())
	tableFS := st.fs(tbl.Metadata().Location(), tbl.FS)
	fsF := func(ctx context.Context) (iceio.IO, error) {
		fs, err := tableFS(ctx)
		if err != nil {
			return nil, err
		}
		return &confinedIO{inner: fs, locs: locs}, nil
	}
	return table.New(tbl.Identifier(), withoutManifestListCache(tbl.Metadata()), tbl.MetadataLocation(), fsF, cat)
}

// Within reports whether location loc lies under one of prefixes, compared
// as allowed_locations are (file:/x, file:///x and /x are one local path;
// s3a and s3n are s3), for writers that must stay inside them.
func Within(loc string, prefixes []string) (bool, error) {
	p, err := normalise(loc)
	if err != nil {
		return false, err
	}
	for _, a := range prefixes {
		n, err := normalise(a)
		if err != nil {
			return false, err
		}
		if within(p, n) {
			return true, nil
		}
	}
	return false, nil
}
