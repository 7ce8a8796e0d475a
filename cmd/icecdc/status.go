package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net/http"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/icecdc/icecdc/cdc"
	"github.com/icecdc/icecdc/health"
	"github.com/icecdc/icecdc/state"
)

// exitTablesFailing is `icecdc status`'s exit status when it printed the
// status and a table is failing, stopped or could not be read: a script
// or a probe tells it from a status that could not be printed (1) and a
// command line that does not parse (2).
const exitTablesFailing = 3

// exitError ends the process with its code after its message.
type exitError struct {
	code int
	err  error
}

func (e *exitError) Error() string { return e.err.Error() }
func (e *exitError) Unwrap() error { return e.err }

func statusCommand(e *cli) *cobra.Command {
	var f configFlags
	var output string
	cmd := &cobra.Command{
		Use:   "status -c FILE [flags]",
		Short: "print each table's checkpoint, the branch head and the lag",
		Long: `Print each configured table's checkpoint, its branch head and how far behind the checkpoint is.
A running daemon is asked at http.listen; without one, the state file is read.
Exits 3 when a table is failing, stopped or cannot be read (after printing the status).`,
		Example: `  icecdc status -c icecdc.yaml
  icecdc status -c icecdc.yaml -o json                   # the shape of the daemon's /status
  icecdc status -c icecdc.yaml --listen 127.0.0.1:9464    # a daemon started with --listen`,
		Args:                  noArgs,
		DisableFlagsInUseLine: true,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := checkChoice(cmd, "output", output, "table", "json"); err != nil {
				return err
			}
			cfg, err := f.load()
			if err != nil {
				return err
			}
			return cmdStatus(cmd.Context(), cfg, e.stdout, output == "json")
		},
	}
	cmd.Flags().StringVarP(&output, "output", "o", "table", "table | json (the shape of the daemon's /status)")
	f.register(cmd, overrideListen|overrideState)
	return cmd
}

// tableStatus is one table of the daemon's /status and of `icecdc status
// -o json`. Each part is left out when not known: a table without a
// checkpoint has no checkpoint and saved_at; one not loaded yet no head
// and lag.
type tableStatus struct {
	Table      string          `json:"table"`
	Checkpoint *cdc.Checkpoint `json:"checkpoint,omitempty"`
	SavedAt    time.Time       `json:"saved_at,omitzero"` // when the checkpoint was stored
	Head       *headStatus     `json:"head,omitempty"`
	Lag        *lagStatus      `json:"lag,omitempty"`
	// Health is the running daemon's view: state, the last error and
	// since when.
	Health *health.TableHealth `json:"health,omitempty"`
	// Error is why `icecdc status` could not read the table itself.
	Error string `json:"error,omitempty"`
	// In cluster mode: the member that owns the table now, and the member
	// and generation that wrote the checkpoint.
	Owner      string `json:"owner,omitempty"`
	LastWriter string `json:"last_writer,omitempty"`
}

// headStatus is the branch's head snapshot.
type headStatus struct {
	SnapshotID     int64     `json:"snapshot_id"`
	SequenceNumber int64     `json:"sequence_number"`
	CommitTime     time.Time `json:"commit_time"`
}

// lagStatus is how far delivery is behind the head.
type lagStatus struct {
	SnapshotsBehind int     `json:"snapshots_behind"`
	SecondsBehind   float64 `json:"seconds_behind"` // since the oldest commit not delivered; 0 when caught up
}

func newHead(s cdc.SnapshotInfo) *headStatus {
	return &headStatus{SnapshotID: s.ID, SequenceNumber: s.SequenceNumber, CommitTime: time.UnixMilli(s.TimestampMs).UTC()}
}

func newLag(pending int, oldestMs int64, now time.Time) *lagStatus {
	l := &lagStatus{SnapshotsBehind: pending}
	if pending > 0 && oldestMs > 0 {
		l.SecondsBehind = max(0, now.Sub(time.UnixMilli(oldestMs)).Round(time.Second).Seconds())
	}
	return l
}

// failing reports whether the table needs someone's attention.
func (s *tableStatus) failing() bool {
	return s.Error != "" || s.Health != nil && s.Health.State != health.StateOK
}

// cmdStatus prints each table's checkpoint, the branch head and the lag.
// A running daemon holds the state file's lock, so status asks it over
// HTTP first and reads the file only when no daemon answers. The head and
// lag are those status loads itself, fresher than the daemon's.
func cmdStatus(ctx context.Context, cfg *Config, out io.Writer, asJSON bool) error {
	var rows []tableStatus
	var err error
	if cfg.Cluster.Enabled() {
		rows, err = clusterStatuses(ctx, cfg)
	} else {
		rows, err = statuses(ctx, cfg)
	}
	if err != nil {
		return err
	}
	if asJSON {
		enc := json.NewEncoder(out)
		enc.SetIndent("", "  ")
		err = enc.Encode(rows)
	} else {
		err = printStatus(out, rows, cfg.Cluster.Enabled())
	}
	if err != nil {
		return err
	}
	var bad []string
	for _, r := range rows {
		if r.failing() {
			bad = append(bad, r.Table)
		}
	}
	if len(bad) > 0 {
		return &exitError{exitTablesFailing, fmt.Errorf("status: %d of %d %s failing, stopped or unreadable: %s",
			len(bad), len(rows), plural(len(rows), "table", "tables"), strings.Join(bad, ", "))}
	}
	return nil
}

func statuses(ctx context.Context, cfg *Config) ([]tableStatus, error) {
	states, err := statesFromDaemon(ctx, cfg)
	if err != nil {
		store, oerr := state.Open(cfg.State.Path, state.Options{LockTimeout: 200 * time.Millisecond, Pipeline: cfg.Name, ReadOnly: true})
		switch {
		case errors.Is(oerr, fs.ErrNotExist):
			// Never run: no table has a checkpoint.
		case oerr != nil:
			where := ""
			if cfg.HTTP.Listen != "" {
				where = " at " + cfg.HTTP.Listen
			}
			return nil, fmt.Errorf("status: no daemon answered%s (%v) and %w", where, err, oerr)
		default:
			defer store.Close()
			if states, err = tableStatuses(store, cfg.Name, nil); err != nil {
				return nil, err
			}
		}
	}
	byName := map[string]tableStatus{}
	for _, s := range states {
		byName[s.Table] = s
	}
	specs, closeAll, err := buildTables(ctx, cfg, nil)
	if err != nil {
		return nil, err
	}
	defer closeAll()
	rows := make([]tableStatus, 0, len(specs))
	for _, sp := range specs {
		r := byName[sp.Name]
		r.Table = sp.Name
		measure(ctx, &r, sp.Source)
		rows = append(rows, r)
	}
	return rows, nil
}

// measure loads the table and sets r's head and lag from what it finds;
// a table that cannot be loaded or walked keeps the daemon's and gets an
// Error.
func measure(ctx context.Context, r *tableStatus, src cdc.Source) {
	if _, err := src.Refresh(ctx); err != nil {
		r.Error = "unavailable: " + oneLine(err.Error())
		return
	}
	head, ok := src.Head()
	if !ok {
		r.Head, r.Lag = nil, &lagStatus{}
		return
	}
	r.Head = newHead(head)
	var cp cdc.Checkpoint
	if r.Checkpoint != nil {
		cp = *r.Checkpoint
	}
	snaps, err := src.Snapshots(ctx, cp.Seq, 0)
	if err != nil {
		r.Error = "broken: " + oneLine(err.Error())
		return
	}
	pending := len(snaps)
	if r.Checkpoint != nil && !cp.Done {
		pending++ // the snapshot being delivered
	}
	var oldest int64
	if len(snaps) > 0 {
		oldest = snaps[0].TimestampMs
	}
	r.Lag = newLag(pending, oldest, time.Now())
}

// printStatus writes rows as a table, then what goes wrong after a blank
// line: the last error per table and since when.
func printStatus(out io.Writer, rows []tableStatus, cluster bool) error {
	w := tabwriter.NewWriter(out, 2, 4, 2, ' ', 0)
	if cluster {
		fmt.Fprintln(w, "TABLE\tOWNER\tCHECKPOINT SEQ\tSNAPSHOT\tPOSITION\tHEAD SEQ\tSNAPSHOTS BEHIND\tSECONDS BEHIND\tLAST WRITER\tSAVED")
	} else {
		fmt.Fprintln(w, "TABLE\tCHECKPOINT SEQ\tSNAPSHOT\tPOSITION\tHEAD SEQ\tSNAPSHOTS BEHIND\tSECONDS BEHIND\tSAVED")
	}
	for _, r := range rows {
		cols := []string{r.Table}
		if cluster {
			cols = append(cols, dash(r.Owner))
		}
		var cp cdc.Checkpoint
		pos, saved := "-", "-"
		if r.Checkpoint != nil {
			cp = *r.Checkpoint
			pos = "done"
			if cp.Initial {
				pos = fmt.Sprintf("initial read, row %d", cp.Next)
			} else if !cp.Done {
				pos = fmt.Sprintf("event %d", cp.Next)
			}
			if !r.SavedAt.IsZero() {
				saved = r.SavedAt.UTC().Format(time.RFC3339)
			}
		}
		if strings.HasPrefix(r.Error, "unavailable: ") {
			fmt.Fprintf(w, "%s\t%s\n", strings.Join(cols, "\t"), r.Error)
			continue
		}
		cols = append(cols, fmt.Sprint(cp.Seq), fmt.Sprint(cp.SnapshotID), pos)
		var headSeq int64
		if r.Head != nil {
			headSeq = r.Head.SequenceNumber
		}
		cols = append(cols, fmt.Sprint(headSeq))
		if r.Error != "" {
			fmt.Fprintf(w, "%s\t%s\n", strings.Join(cols, "\t"), r.Error)
			continue
		}
		var lag lagStatus
		if r.Lag != nil {
			lag = *r.Lag
		}
		cols = append(cols, fmt.Sprint(lag.SnapshotsBehind), fmt.Sprintf("%.0f", lag.SecondsBehind))
		if cluster {
			cols = append(cols, dash(r.LastWriter))
		}
		fmt.Fprintln(w, strings.Join(append(cols, saved), "\t"))
	}
	if err := w.Flush(); err != nil {
		return err
	}
	sep := "\n"
	for _, r := range rows {
		if h := r.Health; h != nil && h.State != health.StateOK {
			fmt.Fprintf(out, "%s%s\n", sep, oneLine(h.String()))
			sep = ""
		}
	}
	return nil
}

func dash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

// tableStatuses lists the tables with a checkpoint, then those the daemon
// follows without one yet; daemon (the running daemon's health) may be nil. From a daemon, each table
// has the head and lag it measured at its last load.
func tableStatuses(store *state.Store, pipeline string, daemon *health.Health) ([]tableStatus, error) {
	stored, err := store.Tables(pipeline)
	if err != nil {
		return nil, err
	}
	out := make([]tableStatus, 0, len(stored))
	index := map[string]int{}
	for _, s := range stored {
		index[s.Table] = len(out)
		cp := s.Checkpoint
		out = append(out, tableStatus{Table: s.Table, Checkpoint: &cp, SavedAt: s.SavedAt.UTC()})
	}
	if daemon == nil {
		return out, nil
	}
	now := time.Now()
	for _, h := range daemon.Tables() {
		i, ok := index[h.Table]
		if !ok {
			i = len(out)
			out = append(out, tableStatus{Table: h.Table})
		}
		if l := h.Lag; l != nil {
			if l.Head.ID != 0 {
				out[i].Head = newHead(cdc.SnapshotInfo{ID: l.Head.ID, SequenceNumber: l.Head.SequenceNumber, TimestampMs: l.Head.TimestampMs})
			}
			pending, oldest := l.Pending, l.OldestMs
			if cp := out[i].Checkpoint; cp != nil {
				// The table measures its lag before a commit and again
				// after its checkpoint is saved: a checkpoint read in
				// between is counted against what is really left.
				pending, oldest = l.Behind(cp.Seq, cp.Done)
			}
			out[i].Lag = newLag(pending, oldest, now)
		}
		h.Lag = nil
		out[i].Health = &h
	}
	return out, nil
}

func statesFromDaemon(ctx context.Context, cfg *Config) ([]tableStatus, error) {
	if cfg.HTTP.Listen == "" {
		return nil, errors.New("http.listen is not set")
	}
	ctx, cancel := context.WithTimeout(ctx, 2*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, "http://"+cfg.HTTP.Listen+"/status", nil)
	if err != nil {
		return nil, err
	}
	if cfg.HTTP.Token != "" {
		req.Header.Set("Authorization", "Bearer "+cfg.HTTP.Token)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("daemon /status: %s", resp.Status)
	}
	var ts []tableStatus
	if err := json.NewDecoder(io.LimitReader(resp.Body, 16<<20)).Decode(&ts); err != nil {
		return nil, fmt.Errorf("daemon /status: %w", err)
	}
	return ts, nil
}
