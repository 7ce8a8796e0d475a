package source

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"math"
	"strings"

	"github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/catalog/rest"
	"github.com/apache/iceberg-go/table"

	"github.com/icecdc/icecdc/cdc"
)

var _ cdc.Holder = (*Table)(nil)

// commitFunc commits updates to the table through its catalog, which
// applies them to the table's current metadata (not the loaded one).
type commitFunc func(ctx context.Context, reqs []table.Requirement, updates []table.Update) error

// Hold points branch ref at the loaded head with min-snapshots-to-keep set
// to the snapshots from snapshot from (0, or one no longer on the branch:
// every retained one) up to the head, so that snapshot expiry by any engine
// keeps them (see cdc.Holder for why a branch and not a tag). The ref's
// max-ref-age-ms is set to the largest value, so that a table's
// history.expire.max-ref-age-ms does not drop the ref itself.
func (t *Table) Hold(ctx context.Context, ref string, from int64) (cdc.Held, error) {
	if t.tbl == nil {
		return cdc.Held{}, t.named(errNotLoaded)
	}
	held, err := t.hold(ctx, t.tbl, ref, from)
	return held, t.named(err)
}

// HoldLatest is Hold at the head the catalog has now, not the loaded one,
// unless that head is still snapshot unless: then nothing is committed
// and moved is false. The loaded metadata stays as it is, so it may run
// while another method of the Table does (a commit of the table is being
// delivered): it only loads the table through the catalog and commits the
// ref.
func (t *Table) HoldLatest(ctx context.Context, ref string, from, unless int64) (_ cdc.Held, moved bool, err error) {
	defer func() { err = t.named(err) }()
	if t.commit == nil {
		return cdc.Held{}, false, cdc.Permanent(errors.New("followed from its metadata file: there is no catalog to commit a ref to"))
	}
	tbl, err := t.load(ctx)
	if err != nil {
		return cdc.Held{}, false, err
	}
	if head := tbl.Metadata().SnapshotByName(t.opts.Branch); head != nil && head.SnapshotID == unless {
		return cdc.Held{Head: snapshotInfo(head)}, false, nil
	}
	held, err := t.hold(ctx, tbl, ref, from)
	return held, err == nil, err
}

// hold commits the ref at the head of the branch in tbl's metadata.
func (t *Table) hold(ctx context.Context, tbl *table.Table, ref string, from int64) (cdc.Held, error) {
	if t.commit == nil {
		return cdc.Held{}, cdc.Permanent(errors.New("followed from its metadata file: there is no catalog to commit a ref to"))
	}
	if ref == t.opts.Branch || ref == table.MainBranch {
		return cdc.Held{}, cdc.Permanent(fmt.Errorf("the hold ref %q would replace the followed branch", ref))
	}
	meta := tbl.Metadata()
	head := meta.SnapshotByName(t.opts.Branch)
	if head == nil {
		return cdc.Held{}, fmt.Errorf("branch %s has no snapshot to hold", t.opts.Branch)
	}
	held := cdc.Held{Head: snapshotInfo(head)}
	seen := map[int64]bool{}
	for s := head; s != nil && !seen[s.SnapshotID]; {
		seen[s.SnapshotID] = true
		held.Snapshots++
		held.Oldest = snapshotInfo(s)
		if s.SnapshotID == from || s.ParentSnapshotID == nil {
			break
		}
		s = meta.SnapshotByID(*s.ParentSnapshotID)
	}
	uuid := meta.TableUUID()
	err := t.commit(ctx, []table.Requirement{table.AssertTableUUID(uuid)},
		[]table.Update{table.NewSetSnapshotRefUpdate(ref, head.SnapshotID, table.BranchRef, math.MaxInt64, 0, held.Snapshots)})
	if err != nil {
		return cdc.Held{}, holdError(ref, "set", err)
	}
	return held, nil
}

// Release removes ref from the table, if the loaded metadata has it.
func (t *Table) Release(ctx context.Context, ref string) (err error) {
	defer func() { err = t.named(err) }()
	if t.tbl == nil {
		return errNotLoaded
	}
	if _, ok := refOf(t.tbl.Metadata(), ref); !ok || ref == t.opts.Branch || ref == table.MainBranch {
		return nil
	}
	if t.commit == nil {
		return cdc.Permanent(errors.New("followed from its metadata file: there is no catalog to commit to"))
	}
	err = t.commit(ctx, []table.Requirement{table.AssertTableUUID(t.tbl.Metadata().TableUUID())},
		[]table.Update{table.NewRemoveSnapshotRefUpdate(ref)})
	if err != nil {
		return holdError(ref, "remove", err)
	}
	return nil
}

// HasRef reports whether the loaded metadata has the ref, and its snapshot.
func (t *Table) HasRef(ref string) (snapshotID int64, ok bool) {
	if t.tbl == nil {
		return 0, false
	}
	r, ok := refOf(t.tbl.Metadata(), ref)
	return r.SnapshotID, ok
}

func refOf(meta table.Metadata, name string) (table.SnapshotRef, bool) {
	for n, r := range meta.Refs() {
		if n == name {
			return r, true
		}
	}
	return table.SnapshotRef{}, false
}

// holdError classifies a failed ref commit: a conflict is tried again
// later, a refusal by the catalog stops the table.
func holdError(ref, verb string, err error) error {
	switch {
	case errors.Is(err, table.ErrCommitFailed):
		return fmt.Errorf("%w: %s ref %s: %w", cdc.ErrHoldBusy, verb, ref, err)
	case errors.Is(err, rest.ErrForbidden), errors.Is(err, rest.ErrUnauthorized), errors.Is(err, rest.ErrBadRequest),
		errors.Is(err, iceberg.ErrNotImplemented), errors.Is(err, fs.ErrPermission),
		strings.Contains(err.Error(), "readonly database"): // SQLite's words for a file it may not write
		return cdc.Permanent(fmt.Errorf("the catalog refused to %s ref %s (%v): give the daemon's catalog identity the right to commit to the table, or set hold: false", verb, ref, strings.Join(strings.Fields(err.Error()), " ")))
	}
	return fmt.Errorf("%s ref %s: %w", verb, ref, err)
}
