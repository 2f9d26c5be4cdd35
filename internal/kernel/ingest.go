package kernel

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"time"

	"github.com/overseer-dev/overseer/internal/action"
	"github.com/overseer-dev/overseer/internal/audit"
	"github.com/overseer-dev/overseer/internal/guard"
	"github.com/overseer-dev/overseer/internal/patchfmt"
	"github.com/overseer-dev/overseer/internal/store"
	"github.com/overseer-dev/overseer/internal/undo"
)

// State namespaces of the audited mode. Each key is written only as the
// effect of the audit record that describes it (store.PutStateEffect), so
// a call is recorded once however often it is ingested.
const (
	nsIngestCalls   = "ingest.calls"   // call key → the ingested action's id
	nsIngestResults = "ingest.results" // action id → its result and the file change it made
)

// Sentinel errors of the audited mode.
var (
	// ErrNotIngested: a result whose call was never ingested.
	ErrNotIngested = errors.New("the call was not ingested")
	// ErrNoRollback: the transcript does not describe the write fully.
	ErrNoRollback = errors.New("nothing that can be rolled back")
	// ErrChangedSince: the file is no longer what the call made it.
	ErrChangedSince = errors.New("the file changed since the call wrote it")
	// ErrRollbackRefused: the firewall or the file's kind forbids it.
	ErrRollbackRefused = errors.New("rollback refused")
)

// IngestSource says where an ingested call was read.
type IngestSource struct {
	// Key identifies the call across files and ingests.
	Key       string    `json:"key"`
	Format    string    `json:"format"`
	File      string    `json:"file"`
	Line      int       `json:"line"`
	SubAgent  string    `json:"sub_agent,omitempty"`
	ToolUseID string    `json:"tool_use_id,omitempty"`
	At        time.Time `json:"at,omitzero"` // when the agent recorded it
}

// IngestedRecord is the data of an ingested audit record.
type IngestedRecord struct {
	Ingested bool           `json:"ingested"` // always true: the mark
	Source   IngestSource   `json:"source"`
	Action   action.Action  `json:"action"`
	Verdict  action.Verdict `json:"verdict"`
}

// IngestOutcome is what ingesting one call did.
type IngestOutcome struct {
	ActionID string         `json:"action_id"`
	Verdict  action.Verdict `json:"verdict"`
	// Duplicate: the call was ingested before (ActionID is that action's);
	// nothing was recorded now.
	Duplicate bool `json:"duplicate,omitempty"`
	// Violation: the verdict is block — the call should never have run.
	Violation bool `json:"violation,omitempty"`
	// Demoted is the agent's trust change the violation caused, if any.
	Demoted *TrustChange `json:"demoted,omitempty"`
}

// IngestCall judges a call an agent already made and records it as
// ingested (audit type "ingested", with its source file and line). The
// engine is the same as for live calls; the verdict says what it would have
// decided. Nothing is executed and no person is asked. A call whose key was
// ingested before is not recorded again (Duplicate). A violation (block)
// demotes the agent (see DemoteOnViolation).
func (k *Kernel) IngestCall(ctx context.Context, a *action.Action, src IngestSource) (*IngestOutcome, error) {
	if src.Key == "" {
		return nil, errors.New("ingest: a call without a key")
	}
	if id, ok := k.ingestedID(ctx, src.Key); ok {
		return &IngestOutcome{ActionID: id, Duplicate: true}, nil
	}
	MintID(a)
	a.Cut = nil
	v := k.Engine.Evaluate(ctx, a)
	sa, sv := k.stored(a, &v)
	seen, err := json.Marshal(map[string]string{"action_id": a.ID})
	if err != nil {
		return nil, err
	}
	e := entry(audit.TypeIngested, &sa, IngestedRecord{Ingested: true, Source: src, Action: sa, Verdict: sv})
	e.Effect = &store.PutStateEffect{NS: nsIngestCalls, Key: src.Key, Value: seen, IfAbsent: true}
	if _, err := k.Audit.Append(ctx, e); err != nil {
		if errors.Is(err, store.ErrExists) {
			// Another ingest recorded it first.
			id, _ := k.ingestedID(ctx, src.Key)
			return &IngestOutcome{ActionID: id, Duplicate: true}, nil
		}
		return nil, fmt.Errorf("recording the ingested call: %w", err)
	}
	out := &IngestOutcome{ActionID: a.ID, Verdict: v, Violation: v.Level == action.Block}
	if out.Violation {
		ch, err := k.DemoteOnViolation(ctx, a.Agent, a.ID, v.Summary())
		if err != nil {
			return out, fmt.Errorf("demoting %s after a violation: %w", a.Agent, err)
		}
		out.Demoted = ch
	}
	return out, nil
}

func (k *Kernel) ingestedID(ctx context.Context, key string) (string, bool) {
	b, err := k.Store.GetState(ctx, nsIngestCalls, key)
	if err != nil {
		return "", false
	}
	var v struct {
		ActionID string `json:"action_id"`
	}
	if json.Unmarshal(b, &v) != nil || v.ActionID == "" {
		return "", false
	}
	return v.ActionID, true
}

// FileChange is a file write an ingested call made, as its transcript
// describes it.
type FileChange struct {
	Path string `json:"path"`
	// Before is the content before the call; nil: the call created the file.
	Before *string `json:"before"`
	After  string  `json:"after"`
	// Patch, when set, is the body of an apply_patch update of Path (a
	// Codex rollout holds the patch, not the previous content): the content
	// before the call is what reversing the patch on the file gives, where
	// the file is what the patch made it. Before and After are unset.
	Patch string `json:"patch,omitempty"`
}

// IngestedResult is an ingested call's recorded result.
type IngestedResult struct {
	Source  IngestSource // the result's own line; Key is the call's
	IsError bool
	Text    string
	Change  *FileChange
}

// resultState is what nsIngestResults keeps per action.
type resultState struct {
	ActionID string      `json:"action_id"`
	Change   *FileChange `json:"change,omitempty"`
}

// changeSummary is how an audit record describes a change (the contents
// themselves stay in the state store).
type changeSummary struct {
	Path         string `json:"path"`
	Created      bool   `json:"created,omitempty"`
	BeforeSHA256 string `json:"before_sha256,omitempty"`
	AfterSHA256  string `json:"after_sha256,omitempty"`
	BeforeBytes  int    `json:"before_bytes"`
	AfterBytes   int    `json:"after_bytes"`
	// PatchSHA256 and PatchBytes describe a change known by its patch.
	PatchSHA256 string `json:"patch_sha256,omitempty"`
	PatchBytes  int    `json:"patch_bytes,omitempty"`
}

func summarize(c *FileChange) *changeSummary {
	if c == nil {
		return nil
	}
	if c.Patch != "" {
		return &changeSummary{Path: c.Path, PatchSHA256: sha(c.Patch), PatchBytes: len(c.Patch)}
	}
	s := &changeSummary{Path: c.Path, Created: c.Before == nil, AfterSHA256: sha(c.After), AfterBytes: len(c.After)}
	if c.Before != nil {
		s.BeforeSHA256, s.BeforeBytes = sha(*c.Before), len(*c.Before)
	}
	return s
}

func sha(s string) string {
	sum := sha256.Sum256([]byte(s))
	return hex.EncodeToString(sum[:])
}

// ingestedResultRecord is the data of an ingested_result record.
type ingestedResultRecord struct {
	Ingested bool           `json:"ingested"`
	Source   IngestSource   `json:"source"`
	IsError  bool           `json:"is_error"`
	Text     string         `json:"text,omitempty"`
	Change   *changeSummary `json:"change,omitempty"`
}

// IngestResult records the result of an ingested call (once), with the
// file write it made when the transcript describes it fully: that write
// can then be rolled back (Rollback). It returns the call's action id;
// ErrNotIngested when the call was never ingested.
func (k *Kernel) IngestResult(ctx context.Context, r IngestedResult) (string, bool, error) {
	id, ok := k.ingestedID(ctx, r.Source.Key)
	if !ok {
		return "", false, ErrNotIngested
	}
	if _, err := k.Store.GetState(ctx, nsIngestResults, id); err == nil {
		return id, false, nil
	}
	if c := r.Change; c != nil && (c.Patch != "" && (c.Before != nil || c.After != "")) {
		r.Change = nil // a patch change is known by its patch alone
	}
	if c := r.Change; c != nil && (!filepath.IsAbs(c.Path) || filepath.Clean(c.Path) != c.Path || !k.callWrites(ctx, id, c.Path)) {
		// Only clean absolute paths the call itself wrote can be rolled
		// back: a result naming another file than its call is not believed.
		r.Change = nil
	}
	val, err := json.Marshal(resultState{ActionID: id, Change: r.Change})
	if err != nil {
		return "", false, err
	}
	rec := ingestedResultRecord{Ingested: true, Source: r.Source, IsError: r.IsError, Text: r.Text, Change: summarize(r.Change)}
	e := audit.Entry{Type: audit.TypeIngestedResult, ActionID: id, Data: rec,
		Effect: &store.PutStateEffect{NS: nsIngestResults, Key: id, Value: val, IfAbsent: true}}
	if _, err := k.Audit.Append(ctx, e); err != nil {
		if errors.Is(err, store.ErrExists) {
			return id, false, nil
		}
		return "", false, fmt.Errorf("recording the ingested result: %w", err)
	}
	return id, true, nil
}

// callWrites reports whether ingested action id names path as a file it
// writes: a path argument of the call, or a path the engine found it writes.
func (k *Kernel) callWrites(ctx context.Context, id, path string) bool {
	recs, err := k.Store.QueryAudit(ctx, store.AuditQuery{Types: []string{audit.TypeIngested}, ActionID: id, Limit: 1})
	if err != nil || len(recs) != 1 {
		return false
	}
	var in IngestedRecord
	if json.Unmarshal(recs[0].Data, &in) != nil {
		return false
	}
	a := &in.Action
	for _, key := range []string{"file_path", "path", "filePath", "notebook_path"} {
		if v, ok := a.Args[key].(string); ok && v != "" {
			if !filepath.IsAbs(v) && a.Cwd != "" {
				v = filepath.Join(a.Cwd, v)
			}
			if filepath.Clean(v) == path {
				return true
			}
		}
	}
	for _, pf := range a.Facts.Paths {
		if pf.Intent == action.PathWrite && pf.Path == path {
			return true
		}
	}
	return false
}

// RollbackPlan is what rolling back an ingested write does.
type RollbackPlan struct {
	ActionID string `json:"action_id"`
	Path     string `json:"path"`
	// Remove: the call created the file; rolling back removes it.
	Remove bool `json:"remove,omitempty"`
	// Diff is from the file as it is to what it will be.
	Diff string `json:"diff"`
	// Done is set once the rollback was made.
	Done bool `json:"done,omitempty"`
}

// rollbackRecord is the data of a rollback record.
type rollbackRecord struct {
	Path    string `json:"path"`
	Remove  bool   `json:"remove,omitempty"`
	Who     string `json:"who"`
	Channel string `json:"channel"`
	// Restored is the SHA-256 of the content written back ("" when removed).
	Restored string `json:"restored_sha256,omitempty"`
}

// PlanRollback checks that the write of ingested action id can be rolled
// back and says what that does, without doing it.
func (k *Kernel) PlanRollback(ctx context.Context, id string) (*RollbackPlan, error) {
	c, err := k.ingestedChange(ctx, id)
	if err != nil {
		return nil, err
	}
	p, _, err := k.planRollback(ctx, id, c)
	return p, err
}

// planRollback checks the rollback of change c of action id and returns
// the plan and the content to write back (nil: remove the file).
func (k *Kernel) planRollback(ctx context.Context, id string, c *FileChange) (*RollbackPlan, []byte, error) {
	cur, to, err := k.checkRollback(ctx, id, c)
	if err != nil {
		return nil, nil, err
	}
	p := &RollbackPlan{ActionID: id, Path: c.Path, Remove: to == nil}
	p.Diff = undo.UnifiedDiff(c.Path+" (now)", c.Path+" (rolled back)", cur, to)
	return p, to, nil
}

// Rollback restores the file ingested action id wrote to its content
// before the call (removes it when the call created it), on a person's
// request. It refuses when the file is not exactly what the transcript says
// the call made it (ErrChangedSince: later work is never clobbered), when
// it or a directory on its path is a symbolic link or it is not a regular
// file, and when the firewall would block writing that path or put it to a
// person's full review (Overseer's home, hook configurations, start-up
// files, secrets: a forged transcript cannot get them rewritten). The rollback is
// recorded before the file is touched.
func (k *Kernel) Rollback(ctx context.Context, id, who, channel string) (*RollbackPlan, error) {
	c, err := k.ingestedChange(ctx, id)
	if err != nil {
		return nil, err
	}
	p, to, err := k.planRollback(ctx, id, c)
	if err != nil {
		return nil, err
	}
	rec := rollbackRecord{Path: c.Path, Remove: p.Remove, Who: who, Channel: channel}
	if to != nil {
		rec.Restored = sha(string(to))
	}
	if _, err := k.Audit.Append(ctx, audit.Entry{Type: audit.TypeRollback, ActionID: id, Data: rec, Seal: true}); err != nil {
		return nil, fmt.Errorf("recording the rollback: %w", err)
	}
	if to == nil {
		err = os.Remove(c.Path)
	} else {
		err = writeBack(c.Path, to)
	}
	if err != nil {
		_, _ = k.Audit.Append(ctx, audit.Entry{Type: audit.TypeError, ActionID: id,
			Data: map[string]string{"op": "rollback", "path": c.Path, "error": err.Error()}})
		return nil, fmt.Errorf("rolling back %s: %w", c.Path, err)
	}
	p.Done = true
	return p, nil
}

// ingestedChange returns the change recorded for action id, checked
// against the audit record that stored it.
func (k *Kernel) ingestedChange(ctx context.Context, id string) (*FileChange, error) {
	b, err := k.Store.GetState(ctx, nsIngestResults, id)
	if err != nil {
		if errors.Is(err, store.ErrNotFound) {
			return nil, fmt.Errorf("%s: %w", id, ErrNoRollback)
		}
		return nil, err
	}
	var st resultState
	if err := json.Unmarshal(b, &st); err != nil || st.Change == nil || st.ActionID != id {
		return nil, fmt.Errorf("%s: %w", id, ErrNoRollback)
	}
	recs, err := k.Store.QueryAudit(ctx, store.AuditQuery{Types: []string{audit.TypeIngestedResult}, ActionID: id, Limit: 1})
	if err != nil {
		return nil, err
	}
	want := summarize(st.Change)
	if len(recs) != 1 {
		return nil, fmt.Errorf("%s: %w: no audited record backs it", id, ErrRollbackRefused)
	}
	var got ingestedResultRecord
	if err := json.Unmarshal(recs[0].Data, &got); err != nil || got.Change == nil || *got.Change != *want {
		return nil, fmt.Errorf("%s: %w: the stored change differs from its audit record", id, ErrRollbackRefused)
	}
	return st.Change, nil
}

// checkRollback returns the file's current content and the content to
// write back (nil: remove the file) after checking that the rollback may
// be made.
func (k *Kernel) checkRollback(ctx context.Context, id string, c *FileChange) (cur, to []byte, err error) {
	// The path, and every directory on the way to it, must be what it
	// says: no symbolic link redirects the write.
	if dir := filepath.Dir(c.Path); dir != c.Path {
		if real, err := filepath.EvalSymlinks(dir); err != nil || real != dir {
			return nil, nil, fmt.Errorf("%s: %w: a directory on its path is a symbolic link or is gone", c.Path, ErrRollbackRefused)
		}
	}
	if c.Before != nil {
		to = []byte(*c.Before)
	}
	if err := k.judgeRollback(ctx, c.Path, to); err != nil {
		return nil, nil, err
	}
	fi, err := os.Lstat(c.Path)
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return nil, nil, fmt.Errorf("%s: %w (it is gone)", c.Path, ErrChangedSince)
		}
		return nil, nil, err
	}
	if !fi.Mode().IsRegular() {
		return nil, nil, fmt.Errorf("%s: %w: not a regular file", c.Path, ErrRollbackRefused)
	}
	// The file may have been replaced since the Lstat: it is opened without
	// blocking, and only when regular (a named pipe would hold the rollback).
	f, err := guard.OpenRegular(c.Path)
	if errors.Is(err, guard.ErrNotRegular) {
		return nil, nil, fmt.Errorf("%s: %w: not a regular file", c.Path, ErrRollbackRefused)
	}
	if err != nil {
		return nil, nil, err
	}
	defer f.Close()
	limit := int64(len(c.After))
	if c.Patch != "" {
		limit = maxPatchedFile
	}
	cur, err = io.ReadAll(io.LimitReader(f, limit+1))
	if err != nil {
		return nil, nil, err
	}
	switch {
	case c.Patch != "":
		// What the patch made it: reversing the patch must find its new
		// lines, once each, and give a content the patch turns back into
		// the file exactly.
		if int64(len(cur)) > limit {
			return nil, nil, fmt.Errorf("%s: %w: larger than %d bytes", c.Path, ErrNoRollback, limit)
		}
		before, err := patchfmt.ReverseUpdate(string(cur), c.Patch)
		if err != nil {
			return nil, nil, fmt.Errorf("%s: %w: reversing the patch: %v", c.Path, ErrChangedSince, err)
		}
		to = []byte(before)
		// The reconstructed content is judged too.
		if err := k.judgeRollback(ctx, c.Path, to); err != nil {
			return nil, nil, err
		}
	case string(cur) != c.After:
		return nil, nil, fmt.Errorf("%s: %w", c.Path, ErrChangedSince)
	}
	return cur, to, nil
}

// judgeRollback judges writing content to path (a removal too: it is the
// path that matters) as a write in the file's own directory: what the
// firewall would put to a person's full review (secrets) or block
// (Overseer's home, hook configurations, start-up files) is refused.
func (k *Kernel) judgeRollback(ctx context.Context, path string, content []byte) error {
	a := &action.Action{Agent: "overseer", Session: "rollback", Tool: "rollback", Kind: action.KindFileWrite,
		Cwd: filepath.Dir(path), Args: map[string]any{"file_path": path, "content": string(content)}}
	if v := k.Engine.Evaluate(ctx, a); v.Level >= action.Approve {
		return fmt.Errorf("%s: %w: %s", path, ErrRollbackRefused, v.Summary())
	}
	return nil
}

// maxPatchedFile bounds the file a patch's rollback reads.
const maxPatchedFile = 1 << 20

// writeBack replaces path's content atomically (a temporary file in the
// same directory, renamed over it), keeping its mode.
func writeBack(path string, b []byte) error {
	fi, err := os.Lstat(path)
	if err != nil {
		return err
	}
	tmp, err := os.CreateTemp(filepath.Dir(path), ".overseer-rollback-*")
	if err != nil {
		return err
	}
	defer os.Remove(tmp.Name())
	if _, err := tmp.Write(b); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Chmod(fi.Mode().Perm()); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Sync(); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Close(); err != nil {
		return err
	}
	return os.Rename(tmp.Name(), path)
}
