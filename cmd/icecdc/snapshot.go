package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/icecdc/icecdc/cdc"
	"github.com/icecdc/icecdc/snapreq"
)

// snapshotAnswer is the body of a started on-demand snapshot.
type snapshotAnswer struct {
	Table          string `json:"table"`
	SnapshotID     int64  `json:"snapshot_id"`
	SequenceNumber int64  `json:"sequence_number"`
}

// snapshotHandler serves POST /snapshot?table=NS.T: it asks the pipeline
// for an on-demand snapshot of the table and answers 202 once the read's
// start is checkpointed. Requests authenticate with http.token as a
// bearer token; without a configured token the endpoint is off.
func snapshotHandler(token string, p *cdc.Pipeline) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		fail := func(code int, format string, a ...any) {
			http.Error(w, oneLine(fmt.Sprintf(format, a...)), code)
		}
		if r.Method != http.MethodPost {
			w.Header().Set("Allow", http.MethodPost)
			fail(http.StatusMethodNotAllowed, "snapshot: use POST")
			return
		}
		if token == "" {
			fail(http.StatusForbidden, "snapshot: on-demand snapshots are off: set http.token in the daemon's configuration")
			return
		}
		if !tokenMatches(r, token) {
			w.Header().Set("WWW-Authenticate", `Bearer realm="icecdc"`)
			fail(http.StatusUnauthorized, "snapshot: missing or wrong bearer token (http.token)")
			return
		}
		// The answer waits for the read to start, longer than the
		// listener's write timeout; the request's context ends it when the
		// client gives up or the daemon stops.
		http.NewResponseController(w).SetWriteDeadline(time.Time{})
		table := r.URL.Query().Get("table")
		if table == "" {
			fail(http.StatusBadRequest, "snapshot: give the table: POST /snapshot?table=NAMESPACE.TABLE")
			return
		}
		si, err := p.RequestSnapshot(r.Context(), table)
		switch {
		case errors.Is(err, snapreq.ErrUnknownTable):
			fail(http.StatusNotFound, "%v", err)
			return
		case errors.Is(err, snapreq.ErrNotServing):
			fail(http.StatusConflict, "%v", err)
			return
		case errors.Is(err, context.Canceled), errors.Is(err, context.DeadlineExceeded):
			fail(http.StatusGatewayTimeout, "%v", err)
			return
		case err != nil:
			fail(http.StatusInternalServerError, "%v", err)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusAccepted)
		json.NewEncoder(w).Encode(snapshotAnswer{Table: table, SnapshotID: si.ID, SequenceNumber: si.SequenceNumber})
	})
}

func snapshotCommand(e *cli) *cobra.Command {
	var (
		f       configFlags
		table   string
		timeout time.Duration
	)
	cmd := &cobra.Command{
		Use:   "snapshot -c FILE --table NS.NAME [flags]",
		Short: "ask the running daemon to emit a table's rows as 'r' events",
		Long: `Ask the running daemon of the configuration (at http.listen, with http.token) to emit the rows of
a table's current snapshot as 'r' events in its stream, between two commits.`,
		Example:               `  icecdc snapshot -c icecdc.yaml --table shop.orders`,
		Args:                  noArgs,
		DisableFlagsInUseLine: true,
		RunE: func(cmd *cobra.Command, _ []string) error {
			cfg, err := f.load()
			if err != nil {
				return err
			}
			return cmdSnapshot(cmd.Context(), cfg, table, timeout, e.stdout)
		},
	}
	f.register(cmd, overrideListen)
	fl := cmd.Flags()
	fl.StringVar(&table, "table", "", "the table to read, as the daemon follows it (namespace.table)")
	fl.DurationVar(&timeout, "timeout", time.Minute, "how long to wait for the table to start the read (it waits for the commit being delivered)")
	groupFlags(fl, "Snapshot", "table", "timeout")
	return cmd
}

// cmdSnapshot asks the running daemon of the configuration for an
// on-demand snapshot of a table, over its http.listen address with
// http.token.
func cmdSnapshot(ctx context.Context, cfg *Config, table string, timeout time.Duration, out io.Writer) error {
	if table == "" {
		return errors.New("snapshot: give --table NAMESPACE.TABLE")
	}
	if cfg.HTTP.Listen == "" {
		return errors.New("snapshot: http.listen is not set: the daemon takes requests on that address")
	}
	if cfg.HTTP.Token == "" {
		return errors.New("snapshot: http.token is not set: the daemon refuses snapshot requests without it")
	}
	host, port, err := net.SplitHostPort(cfg.HTTP.Listen)
	if err != nil {
		return fmt.Errorf("snapshot: http.listen %q: %w", cfg.HTTP.Listen, err)
	}
	if host == "" || host == "0.0.0.0" || host == "::" {
		host = "127.0.0.1"
	}
	u := url.URL{Scheme: "http", Host: net.JoinHostPort(host, port), Path: "/snapshot", RawQuery: url.Values{"table": {table}}.Encode()}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, u.String(), nil)
	if err != nil {
		return err
	}
	req.Header.Set("Authorization", "Bearer "+cfg.HTTP.Token)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return fmt.Errorf("snapshot of table %s: daemon at %s: %w", table, u.Host, err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(io.LimitReader(resp.Body, 64<<10))
	if resp.StatusCode != http.StatusAccepted {
		return fmt.Errorf("daemon at %s answered %s: %s", u.Host, resp.Status, strings.TrimSpace(string(body)))
	}
	var a snapshotAnswer
	if err := json.Unmarshal(body, &a); err != nil {
		return fmt.Errorf("snapshot of table %s: daemon at %s: unreadable answer: %w", table, u.Host, err)
	}
	fmt.Fprintf(out, "snapshot of %s started: the rows of snapshot %d (sequence number %d) follow in its stream as 'r' events\n", a.Table, a.SnapshotID, a.SequenceNumber)
	return nil
}
