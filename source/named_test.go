package source_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/icecdc/icecdc/cdc"
	"github.com/icecdc/icecdc/internal/javatables"
)

// TestErrorsNameTheTableOnce: what a Table's methods return is a
// cdc.TableError naming the table once, and the pipeline's wrapping of it
// adds nothing: the steps below the methods do not name the table.
func TestErrorsNameTheTableOnce(t *testing.T) {
	tb := javatables.Load(t, "cow")
	src := openJava(t, tb)
	defer src.Close()
	ctx := context.Background()
	if _, err := src.Refresh(ctx); err != nil {
		t.Fatal(err)
	}
	_, commitErr := src.Commit(ctx, cdc.SnapshotInfo{ID: 12345})
	_, initialErr := src.InitialRead(ctx, cdc.SnapshotInfo{ID: 12345})
	for _, c := range []struct {
		name, want string
		err        error
	}{
		{"Commit", "snapshot 12345 is not in the table metadata", commitErr},
		{"InitialRead", "snapshot 12345 is not in the table metadata", initialErr},
	} {
		var te *cdc.TableError
		if !errors.As(c.err, &te) || te.Table != tb.MetadataPath {
			t.Errorf("%s: %v is not a TableError naming %s", c.name, c.err, tb.MetadataPath)
			continue
		}
		for _, msg := range []string{c.err.Error(), (&cdc.TableError{Table: tb.MetadataPath, Err: c.err}).Error()} {
			if n := strings.Count(msg, tb.MetadataPath); n != 1 || !strings.HasPrefix(msg, "table "+tb.MetadataPath+": "+c.want) {
				t.Errorf("%s: %q names the table %d times, want once, as 'table %s: %s…'", c.name, msg, n, tb.MetadataPath, c.want)
			}
		}
	}
}
