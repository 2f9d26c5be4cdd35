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
	"path/filepath"
	"strings"

	"github.com/overseer-dev/overseer/internal/action"
	"github.com/overseer-dev/overseer/internal/audit"
	"github.com/overseer-dev/overseer/internal/guard/paths"
	"github.com/overseer-dev/overseer/internal/guard/shell"
	"github.com/overseer-dev/overseer/internal/store"
)

// readObserver records the reads of the agents' own read tools, and the
// files their shell commands print whole (`cat f`, `sed -n '1,200p' f` of
// a file of at most 200 lines: shell.ShownFiles), when the kernel records
// them as running (or a person approves them).
type readObserver struct {
	t *paths.StoreTracker
	// hashes remembers the hashes of files read before (nil: every read
	// hashes its file).
	hashes *paths.HashCache
}

// Observe implements guard.Observer: it records the reads of an action a
// person approved. Those of an action that runs without a person are
// committed with its audit records by Submit (see effects).
func (o readObserver) Observe(ctx context.Context, a *action.Action, level action.Level, answered bool) error {
	if !answered || !o.tracked(a) {
		return nil
	}
	states, err := o.effects(a)
	if err != nil {
		return err
	}
	return o.put(ctx, states)
}

// tracked reports whether a is a read by an agent's own read tool, whose
// reads are remembered.
func (o readObserver) tracked(a *action.Action) bool {
	return a.Agent != paths.BuiltinAgent && a.Session != "" && (a.Kind == action.KindFileRead || a.Kind == action.KindShell)
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
	if a.Kind == action.KindShell {
		return o.shellStates(a)
	}
	return o.states(a.Session, a.Facts.Paths, readFull(a), action.PathRead)
}

// maxShownFile is the largest file a shell read is recorded for: no agent
// sees more through its shell's output, and hashing it is the kernel's
// time.
const maxShownFile = 16 << 20

// pseudoFS reports whether p lies in a file system of the kernel's own
// (/proc, /sys, /dev), whose files are not read to record a read.
func pseudoFS(p string) bool {
	for _, d := range []string{"/proc", "/sys", "/dev"} {
		if p == d || strings.HasPrefix(p, d+"/") {
			return true
		}
	}
	return false
}

// shellStates returns the read records of the files a shell command prints
// to the agent whole. A file counts when the shell guard's effect model
// also has the command reading it (Facts.Paths, symlinks resolved) and the
// lines printed cover the file as it is now; a file printed only in part
// is not remembered (nor does it replace an earlier read), so an edit after
// it is judged as before it.
func (o readObserver) shellStates(a *action.Action) ([]*store.PutStateEffect, error) {
	cmd, ok := shell.CommandOf(a.Args)
	if !ok {
		return nil, nil
	}
	shown := shell.ShownFiles(cmd, a.Cwd)
	if len(shown) == 0 {
		return nil, nil
	}
	read := map[string]bool{}
	for _, p := range a.Facts.Paths {
		if p.Intent == action.PathRead {
			read[p.Path] = true
		}
	}
	var out []*store.PutStateEffect
	done := map[string]bool{}
	for _, s := range shown {
		p, err := filepath.EvalSymlinks(s.Path)
		if err != nil || done[p] || !read[p] {
			continue
		}
		fi, err := os.Stat(p)
		if err != nil || !fi.Mode().IsRegular() || fi.Size() > maxShownFile || pseudoFS(p) {
			continue
		}
		h, mt, lines, err := paths.HashFileLines(p)
		if err != nil || !s.Covers(lines) {
			continue
		}
		done[p] = true
		key, val, err := o.t.ReadState(a.Session, p, true, mt, h)
		if err != nil {
			return nil, fmt.Errorf("recording the read of %s: %w", p, err)
		}
		out = append(out, &store.PutStateEffect{NS: paths.ReadsNamespace, Key: key, Value: val})
	}
	return out, nil
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
		if err != nil || !fi.Mode().IsRegular() || fi.Size() > paths.MaxRecordedRead || pseudoFS(p.Path) {
			continue
		}
		h, mt, err := o.hashes.Hash(p.Path, fi)
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
			o := readObserver{t: paths.NewStoreTracker(k.raw, k.Clock)}
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
	o := readObserver{t: paths.NewStoreTracker(k.raw, k.Clock)}
	_ = o.record(ctx, a.Session, a.Facts.Paths, true, action.PathWrite)
}
