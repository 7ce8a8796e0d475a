package source

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"path/filepath"
	"testing"

	"github.com/aws/smithy-go"
	"github.com/uptrace/bun/driver/sqliteshim"

	"github.com/icecdc/icecdc/health"
)

// TestThrottleErrors: a real SQLITE_BUSY (a read while another
// connection holds the database's exclusive lock, with no busy timeout)
// and Glue's ThrottlingException are throttling; a missing table is not.
func TestThrottleErrors(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "c.db")
	db, err := sql.Open(sqliteshim.ShimName, "file:"+path)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if _, err := db.ExecContext(ctx, "CREATE TABLE iceberg_tables (x INTEGER)"); err != nil {
		t.Fatal(err)
	}
	holder, err := db.Conn(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer holder.Close()
	if _, err := holder.ExecContext(ctx, "BEGIN EXCLUSIVE"); err != nil {
		t.Fatal(err)
	}
	defer holder.ExecContext(ctx, "ROLLBACK")
	other, err := sql.Open(sqliteshim.ShimName, "file:"+path)
	if err != nil {
		t.Fatal(err)
	}
	defer other.Close()
	reader, err := other.Conn(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer reader.Close()
	if _, err := reader.ExecContext(ctx, "PRAGMA busy_timeout = 0"); err != nil {
		t.Fatal(err)
	}
	var n int
	busy := reader.QueryRowContext(ctx, "SELECT count(*) FROM iceberg_tables").Scan(&n)
	if busy == nil {
		t.Fatal("read a database another connection holds exclusively")
	}
	t.Logf("busy: %v", busy)
	glue := fmt.Errorf("load table a.b: %w", &smithy.GenericAPIError{Code: "ThrottlingException", Message: "Rate exceeded"})
	for _, tc := range []struct {
		err  error
		want bool
	}{
		{busy, true},
		{fmt.Errorf("load table a.b: %w", busy), true},
		{glue, true},
		{errors.New("load table a.b: no such table"), false},
	} {
		if got := isThrottle(tc.err); got != tc.want {
			t.Errorf("isThrottle(%v) = %v, want %v", tc.err, got, tc.want)
		}
		if tc.want && !health.IsThrottled(health.Throttled(tc.err)) {
			t.Errorf("health.Throttled(%v) is not throttled", tc.err)
		}
	}
}
