package source

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/apache/iceberg-go/catalog"
	"github.com/apache/iceberg-go/table"

	"github.com/icecdc/icecdc/cdc"
	"github.com/icecdc/icecdc/internal/redact"
	"github.com/icecdc/icecdc/internal/suggest"
)

// missingError is a table the catalog does not know, said in one line
// with what the catalog holds nearby: iceberg-go's own text shows the
// identifier as a Go slice ("table does not exist: [shop ordrs]").
type missingError struct {
	msg string
	err error // the catalog's, for errors.Is(err, catalog.ErrNoSuchTable)
}

func (e *missingError) Error() string { return e.msg }
func (e *missingError) Unwrap() error { return e.err }

// isMissing reports whether the catalog answered that the table or its
// namespace does not exist.
func isMissing(err error) bool {
	return errors.Is(err, catalog.ErrNoSuchTable) || errors.Is(err, catalog.ErrNoSuchNamespace)
}

// missingTable explains err, the catalog's answer that o.Table does not
// exist, with the nearest name of the tables in its namespace (or of the
// namespaces, when the namespace is missing too). The table stops: a
// table that never loaded is a name to correct, and retrying it would
// say the same for ever (a table that loaded once and then went missing,
// being re-created, is retried; see Table.Refresh).
func missingTable(ctx context.Context, h *catalogHandle, o Options, ident table.Identifier, err error) error {
	ns := ident[:len(ident)-1]
	msg := fmt.Sprintf("table %s does not exist in %s", o.Table, describeCatalog(o))
	var tables []string
	_, lerr := h.use(ctx, func(ctx context.Context, c catalog.Catalog) error {
		for id, err := range c.ListTables(ctx, ns) {
			if err != nil {
				return err
			}
			tables = append(tables, strings.Join(id, "."))
		}
		return nil
	})
	switch {
	case lerr == nil && len(tables) > 0:
		slices.Sort(tables)
		if best := suggest.Closest(o.Table, tables); best != "" {
			msg += "; did you mean " + best + "?"
		} else {
			msg += fmt.Sprintf("; namespace %s holds %s", strings.Join(ns, "."), cdc.BoundedList(tables, 5))
		}
	default:
		nsName := strings.Join(ns, ".")
		var names []string
		_, nerr := h.use(ctx, func(ctx context.Context, c catalog.Catalog) error {
			nss, err := c.ListNamespaces(ctx, nil)
			for _, n := range nss {
				names = append(names, strings.Join(n, "."))
			}
			return err
		})
		switch {
		case errors.Is(err, catalog.ErrNoSuchNamespace) || nerr == nil && !slices.Contains(names, nsName):
			msg += ": no namespace " + nsName
			slices.Sort(names)
			if best := suggest.Closest(nsName, names); best != "" {
				msg += "; did you mean " + best + "." + ident[len(ident)-1] + "?"
			} else if len(names) > 0 {
				msg += "; the namespaces are " + cdc.BoundedList(names, 5)
			}
		case lerr == nil:
			msg += fmt.Sprintf("; namespace %s holds no table", nsName)
		}
	}
	return cdc.Permanent(cdc.NamedIn(o.Table, &missingError{msg: msg, err: err}))
}

// describeCatalog names the catalog for a line: its type, its name when
// the configuration gives one, and where it is (without secrets).
func describeCatalog(o Options) string {
	typ := o.CatalogType
	if typ == "" {
		typ = "sql"
	}
	s := typ + " catalog"
	if o.CatalogName != "" {
		s += " " + strconv.Quote(o.CatalogName)
	}
	if o.CatalogURI != "" {
		s += " at " + redact.URL(o.CatalogURI)
	}
	return s
}
