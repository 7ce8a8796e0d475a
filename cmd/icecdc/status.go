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

	"github.com/icecdc/icecdc/state"
)

// cmdStatus prints each table's checkpoint, the branch head and the lag.
// A running daemon holds the state file's lock, so status asks it over
// HTTP first and reads the file only when no daemon answers.
func cmdStatus(ctx context.Context, args []string, out io.Writer) error {
	_, cfg, err := parseRunFlags("status", args, nil)
	if err != nil {
		return err
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
			if states, err = store.Tables(cfg.Name); err != nil {
				return err
			}
		}
	}
	byName := map[string]state.TableState{}
	for _, s := range states {
		byName[s.Table] = s
	}
	specs, err := buildTables(ctx, cfg, nil)
	if err != nil {
		return err
	}
	w := tabwriter.NewWriter(out, 2, 4, 2, ' ', 0)
	fmt.Fprintln(w, "TABLE\tCHECKPOINT SEQ\tSNAPSHOT\tPOSITION\tHEAD SEQ\tSNAPSHOTS BEHIND\tSECONDS BEHIND\tSAVED")
	for _, sp := range specs {
		if err := sp.Source.Refresh(ctx); err != nil {
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
	return w.Flush()
}

func statesFromDaemon(ctx context.Context, cfg *Config) ([]state.TableState, error) {
	if cfg.HTTP.Listen == "" {
		return nil, errors.New("http.listen is not set")
	}
	ctx, cancel := context.WithTimeout(ctx, 2*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, "http://"+cfg.HTTP.Listen+"/status", nil)
	if err != nil {
		return nil, err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("daemon /status: %s", resp.Status)
	}
	var ts []state.TableState
	if err := json.NewDecoder(io.LimitReader(resp.Body, 16<<20)).Decode(&ts); err != nil {
		return nil, fmt.Errorf("daemon /status: %w", err)
	}
	return ts, nil
}
