package scenario

import (
	"context"
	"fmt"

	"github.com/apache/iceberg-go/table"
)

// ManyTables creates n v3 tables ns.t0000 … in the Env's catalog, each
// with one commit of one order: a catalog of many small tables, as a
// daemon following a whole namespace sees it. It returns their names.
func (e *Env) ManyTables(ctx context.Context, ns string, n int) ([]string, error) {
	names := make([]string, n)
	for i := range n {
		name := fmt.Sprintf("t%04d", i)
		tbl, err := e.CreateTable(ctx, table.Identifier{ns, name}, OrdersSchema(), nil, 3, nil)
		if err != nil {
			return nil, fmt.Errorf("many tables: %w", err)
		}
		if _, err := Append(ctx, tbl, []map[string]any{Order(int64(i+1), "c", "new", 1)}); err != nil {
			return nil, fmt.Errorf("many tables: append to %s.%s: %w", ns, name, err)
		}
		names[i] = ns + "." + name
	}
	return names, nil
}
