package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net/http"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/icecdc/icecdc/cdc"
	"github.com/icecdc/icecdc/state"
)

func statusCommand(e *cli) *cobra.Command {
	var f configFlags
	cmd := &cobra.Command{
		Use:   "status -c FILE [flags]",
		Short: "print each table's checkpoint, the branch head and the lag",
		Long: `Print each configured table's checkpoint, its branch head and how far behind the checkpoint is.
A running daemon is asked at http.listen; without one, the state file is read.`,
		Example: `  icecdc status -c icecdc.yaml
  icecdc status -c icecdc.yaml --listen 127.0.0.1:9464    # a daemon started with --listen`,
		Args:                  noArgs,
		DisableFlagsInUseLine: true,
		RunE: func(cmd *cobra.Command, _ []string) error {
			cfg, err := f.load()
			if err != nil {
				return err
			}
			return cmdStatus(cmd.Context(), cfg, e.stdout)
		},
	}
	f.register(cmd, overrideListen|overrideState)
	return cmd
}

// cmdStatus prints each table's checkpoint, the branch head and the lag.
// A running daemon holds the state file's lock, so status asks it over
// HTTP first and reads the file only when no daemon answers.
func cmdStatus(ctx context.Context, cfg *Config, out io.Writer) error {
	if cfg.Cluster.Enabled() {
		return clusterStatusTable(ctx, cfg, out)
	}
	states, err := statesFromDaemon(ctx, cfg)
	if err != nil {
		store, oerr := state.Open(cfg.State.Path, state.Options{LockTimeout: 200 * time.Millisecond, Pipeline: cfg.Name, ReadOnly: true})
		switch {
		case errors.Is(oerr, fs.ErrNotExist):
			// Never run: no table has a checkpoint.
		case oerr != nil:
			return fmt.Errorf("status: no daemon answered at %s (%v) and %w", cfg.HTTP.Listen, err, oerr)
		default:
			defer store.Close()
			if states, err = tableStatuses(store, cfg.Name, nil); err != nil {
				return err
			}
		}
	}
	byName := map[string]state.TableState{}
	for _, s := range states {
		if !s.SavedAt.IsZero() { // else the daemon knows the table but it has no checkpoint yet
			byName[s.Table] = s.TableState
		}
	}
	specs, closeAll, err := buildTables(ctx, cfg, nil)
	if err != nil {
		return err
	}
	defer closeAll()
	w := tabwriter.NewWriter(out, 2, 4, 2, ' ', 0)
	fmt.Fprintln(w, "TABLE\tCHECKPOINT SEQ\tSNAPSHOT\tPOSITION\tHEAD SEQ\tSNAPSHOTS BEHIND\tSECONDS BEHIND\tSAVED")
	for _, sp := range specs {
		if _, err := sp.Source.Refresh(ctx); err != nil {
			fmt.Fprintf(w, "%s\tunavailable: %s\n", sp.Name, oneLine(err.Error()))
			continue
		}
		head, hasHead := sp.Source.Head()
		st, ok := byName[sp.Name]
		cp := st.Checkpoint
		pos, saved := "-", "-"
		if ok {
			pos = "done"
			if cp.Initial {
				pos = fmt.Sprintf("initial read, row %d", cp.Next)
			} else if !cp.Done {
				pos = fmt.Sprintf("event %d", cp.Next)
			}
			saved = st.SavedAt.UTC().Format(time.RFC3339)
		}
		behind, secs := 0, 0.0
		if hasHead {
			snaps, err := sp.Source.Snapshots(ctx, cp.Seq, 0)
			if err != nil {
				fmt.Fprintf(w, "%s\t%d\t%d\t%s\t%d\tbroken: %s\n", sp.Name, cp.Seq, cp.SnapshotID, pos, head.SequenceNumber, oneLine(err.Error()))
				continue
			}
			{
				behind = len(snaps)
				if !cp.Done && ok {
					behind++
				}
				if len(snaps) > 0 {
					secs = time.Since(time.UnixMilli(snaps[0].TimestampMs)).Seconds()
				}
			}
		}
		fmt.Fprintf(w, "%s\t%d\t%d\t%s\t%d\t%d\t%.0f\t%s\n", sp.Name, cp.Seq, cp.SnapshotID, pos, head.SequenceNumber, behind, secs, saved)
	}
	if err := w.Flush(); err != nil {
		return err
	}
	// What the daemon sees going wrong, after a blank line: the last
	// error per table and since when.
	sep := "\n"
	for _, s := range states {
		if s.Health != nil && s.Health.State != cdc.StateOK {
			fmt.Fprintf(out, "%s%s\n", sep, oneLine(s.Health.String()))
			sep = ""
		}
	}
	return nil
}

// tableStatus is one table of /status: its stored checkpoint (none yet
// when SavedAt is zero) and, from a running daemon, its health.
type tableStatus struct {
	state.TableState
	Health *cdc.TableHealth `json:"health,omitempty"`
}

// tableStatuses lists the tables with a checkpoint, then those the daemon
// follows without one yet; health may be nil.
func tableStatuses(store *state.Store, pipeline string, health *cdc.Health) ([]tableStatus, error) {
	stored, err := store.Tables(pipeline)
	if err != nil {
		return nil, err
	}
	out := make([]tableStatus, 0, len(stored))
	index := map[string]int{}
	for _, s := range stored {
		index[s.Table] = len(out)
		out = append(out, tableStatus{TableState: s})
	}
	if health == nil {
		return out, nil
	}
	for _, h := range health.Tables() {
		i, ok := index[h.Table]
		if !ok {
			i = len(out)
			out = append(out, tableStatus{TableState: state.TableState{Table: h.Table}})
		}
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
