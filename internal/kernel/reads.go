package kernel

// Environment awareness for the agents behind hooks: what a session read
// (and wrote) is remembered with the file's content hash, so that the
// paths guard's read-before-edit judges an edit of a file that changed
// behind the agent's back as an edit of a stale read — refused until the
// agent reads the file again. Overseer's own tools record their reads
// themselves (plugins/tool/builtin).

import (
	"context"
	"encoding/json"
	"fmt"
	"os"

	"github.com/overseer-dev/overseer/internal/action"
	"github.com/overseer-dev/overseer/internal/audit"
	"github.com/overseer-dev/overseer/internal/guard/paths"
	"github.com/overseer-dev/overseer/internal/store"
)

// readObserver records the reads of the agents' own read tools when the
// kernel records them as running (or a person approves them).
type readObserver struct{ t *paths.StoreTracker }

// Observe implements guard.Observer.
func (o readObserver) Observe(ctx context.Context, a *action.Action, level action.Level, answered bool) error {
	if a.Agent == paths.BuiltinAgent || a.Session == "" || a.Kind != action.KindFileRead || !(answered || level.RunsWithoutPerson()) {
		return nil
	}
	// A read with an offset or a limit saw only part of the file.
	full := a.Args["offset"] == nil && a.Args["limit"] == nil
	return o.record(ctx, a.Session, a.Facts.Paths, full, action.PathRead)
}

// record remembers the current content of the regular files among ps with
// intent as read in session. A file that cannot be hashed is not
// remembered (then it counts as not read).
func (o readObserver) record(ctx context.Context, session string, ps []action.PathFact, full bool, intent action.PathIntent) error {
	for _, p := range ps {
		if p.Intent != intent {
			continue
		}
		fi, err := os.Stat(p.Path)
		if err != nil || !fi.Mode().IsRegular() {
			continue
		}
		h, mt, err := paths.HashFile(p.Path)
		if err != nil {
			continue
		}
		if err := o.t.RecordRead(ctx, session, p.Path, full, mt, h); err != nil {
			return fmt.Errorf("recording the read of %s: %w", p.Path, err)
		}
	}
	return nil
}

// recordWrites remembers, after a hook agent's write or edit ran, the
// files it wrote as read: the agent knows what it wrote.
func (k *Kernel) recordWrites(ctx context.Context, r Result) {
	if r.IsError || r.ActionID == "" || r.Agent == paths.BuiltinAgent || r.Session == "" {
		return
	}
	recs, err := k.raw.QueryAudit(ctx, store.AuditQuery{ActionID: r.ActionID, Types: []string{audit.TypeAction}, Limit: 1})
	if err != nil || len(recs) != 1 {
		return
	}
	var a action.Action
	if json.Unmarshal(recs[0].Data, &a) != nil || a.Session != r.Session || a.Agent != r.Agent {
		return
	}
	o := readObserver{paths.NewStoreTracker(k.raw, k.Clock)}
	_ = o.record(ctx, a.Session, a.Facts.Paths, true, action.PathWrite)
}
