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

// Observe implements guard.Observer: it records the reads of an action a
// person approved. Those of an action that runs without a person are
// committed with its audit records by Submit (see effects).
func (o readObserver) Observe(ctx context.Context, a *action.Action, level action.Level, answered bool) error {
	if !answered || !o.tracked(a) {
		return nil
	}
	return o.record(ctx, a.Session, a.Facts.Paths, readFull(a), action.PathRead)
}

// tracked reports whether a is a read by an agent's own read tool, whose
// reads are remembered.
func (o readObserver) tracked(a *action.Action) bool {
	return a.Agent != paths.BuiltinAgent && a.Session != "" && a.Kind == action.KindFileRead
}

// readFull reports whether a read the whole file: a read with an offset or
// a limit saw only part of it.
func readFull(a *action.Action) bool { return a.Args["offset"] == nil && a.Args["limit"] == nil }

// put writes read records that did not ride with an audit record.
func (o readObserver) put(ctx context.Context, effects []*store.PutStateEffect) error {
	for _, e := range effects {
		if err := o.t.PutState(ctx, e.Key, e.Value); err != nil {
			return fmt.Errorf("recording a read: %w", err)
		}
	}
	return nil
}

// effects returns the read records of a, an action about to run without a
// person, as store effects for its audit records: committed in the same
// transaction, they cost no write (and no fsync) of their own, and are on
// disk exactly when the action is.
func (o readObserver) effects(a *action.Action) ([]*store.PutStateEffect, error) {
	if !o.tracked(a) {
		return nil, nil
	}
	return o.states(a.Session, a.Facts.Paths, readFull(a), action.PathRead)
}

// record remembers the current content of the regular files among ps with
// intent as read in session.
func (o readObserver) record(ctx context.Context, session string, ps []action.PathFact, full bool, intent action.PathIntent) error {
	states, err := o.states(session, ps, full, intent)
	if err != nil {
		return err
	}
	return o.put(ctx, states)
}

// states returns the read records of the regular files among ps with
// intent. A file that cannot be hashed is not remembered (then it counts
// as not read).
func (o readObserver) states(session string, ps []action.PathFact, full bool, intent action.PathIntent) ([]*store.PutStateEffect, error) {
	var out []*store.PutStateEffect
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
		key, val, err := o.t.ReadState(session, p.Path, full, mt, h)
		if err != nil {
			return nil, fmt.Errorf("recording the read of %s: %w", p.Path, err)
		}
		out = append(out, &store.PutStateEffect{NS: paths.ReadsNamespace, Key: key, Value: val})
	}
	return out, nil
}

// recordWrites remembers, after a hook agent's write or edit ran, the
// files it wrote as read: the agent knows what it wrote.
func (k *Kernel) recordWrites(ctx context.Context, r Result) {
	if r.IsError || r.ActionID == "" || r.Agent == paths.BuiltinAgent || r.Session == "" {
		return
	}
	if r.Facts != nil {
		if len(r.Facts.Paths) > 0 {
			o := readObserver{paths.NewStoreTracker(k.raw, k.Clock)}
			_ = o.record(ctx, r.Session, r.Facts.Paths, true, action.PathWrite)
		}
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
