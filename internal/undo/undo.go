// Package undo keeps the previous content of files before an allowed
// action writes, edits or deletes them, so that the action can be undone:
// the rollback data of the audit trail.
//
// Content is stored once per distinct content (a blob named by its SHA-256)
// under the store's directory; the index — which action kept which path, in
// which state — lives in the kernel's store.StateStore (namespace "undo"),
// so every process sharing a database sees the same history. What is kept
// is bounded: files over MaxFileBytes are recorded without their content
// (undo then reports it cannot restore them), a directory keeps at most
// MaxDirFiles files, and Prune drops the oldest history by age and total
// size.
package undo

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
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/overseer-dev/overseer/internal/clock"
	"github.com/overseer-dev/overseer/internal/guard"
	"github.com/overseer-dev/overseer/internal/store"
)

// Namespace is the StateStore namespace of the index.
const Namespace = "undo"

// Defaults of Options.
const (
	DefaultMaxFileBytes = 10 << 20
	DefaultMaxDirFiles  = 1000
	DefaultMaxKeepBytes = 100 << 20
	DefaultGCGrace      = 10 * time.Minute
)

// Sentinel errors.
var (
	// ErrNotFound means no undo data is kept for the action.
	ErrNotFound = errors.New("undo: nothing kept for this action")
	// ErrAlreadyRestored means the action was undone before.
	ErrAlreadyRestored = errors.New("undo: already undone")
	// ErrNotKept means a file's content was not kept (too large, not a
	// regular file) or its blob is gone, so it cannot be restored.
	ErrNotKept = errors.New("undo: content was not kept")
	// ErrMoved means a path's parent directory now leads somewhere else (it
	// was replaced by a symbolic link), so restoring there is refused.
	ErrMoved = errors.New("undo: the file's directory has moved")
	// ErrElsewhere means the action's previous content was kept by another
	// instance sharing the index (Options.Instance): its paths are that
	// instance's machine's and its content is in that instance's
	// directory, so only that instance restores it.
	ErrElsewhere = errors.New("undo: kept by another instance")
)

// NothingDone reports whether err, from Restore, means that nothing was
// restored: the action is unknown, undone already, or kept by another
// instance.
func NothingDone(err error) bool {
	return errors.Is(err, ErrNotFound) || errors.Is(err, ErrAlreadyRestored) || errors.Is(err, ErrElsewhere)
}

// Options bound what is kept. Zero values take the defaults.
type Options struct {
	MaxFileBytes int64 // content of larger files is not kept
	MaxDirFiles  int   // files kept under one directory
	MaxKeepBytes int64 // content kept by one Keep call
	Clock        clock.Clock
	// GCGrace protects blobs younger than this (by their file time) from
	// Prune, so a Keep running in another process is not robbed of the blob
	// it has just written.
	GCGrace time.Duration
	// Instance names this store among the stores sharing one index (the
	// instances of a fleet, on one database; "" when the index is this
	// store's alone). Entries record it, and Restore refuses the entries
	// another instance kept (ErrElsewhere).
	Instance string
}

func (o Options) withDefaults() Options {
	if o.MaxFileBytes <= 0 {
		o.MaxFileBytes = DefaultMaxFileBytes
	}
	if o.MaxDirFiles <= 0 {
		o.MaxDirFiles = DefaultMaxDirFiles
	}
	if o.MaxKeepBytes <= 0 {
		o.MaxKeepBytes = DefaultMaxKeepBytes
	}
	if o.Clock == nil {
		o.Clock = clock.Real{}
	}
	if o.GCGrace == 0 {
		o.GCGrace = DefaultGCGrace
	}
	return o
}

// File is the kept state of one path.
type File struct {
	Path    string      `json:"path"`
	Existed bool        `json:"existed"`
	Type    string      `json:"type,omitempty"` // file, dir, symlink, other
	Mode    fs.FileMode `json:"mode,omitempty"`
	Size    int64       `json:"size,omitempty"`
	Blob    string      `json:"blob,omitempty"` // SHA-256 of the content
	Link    string      `json:"link,omitempty"` // a symbolic link's target
	// Skipped says why the content was not kept.
	Skipped string `json:"skipped,omitempty"`
}

// Entry is what one Keep recorded: the previous state of one path (and of
// the files under it, for a directory) before an action changed it.
type Entry struct {
	ActionID string    `json:"action_id"`
	Session  string    `json:"session,omitempty"`
	Path     string    `json:"path"`
	At       time.Time `json:"at"`
	Files    []File    `json:"files"`
	// More counts files under a directory that were not kept (cap). The
	// count stops at ten times the cap; MoreNotCounted says there were
	// more still.
	More           int       `json:"more,omitempty"`
	MoreNotCounted bool      `json:"more_not_counted,omitempty"`
	RestoredAt     time.Time `json:"restored_at,omitzero"`
	// Instance is the store that kept it (Options.Instance), when the
	// index is shared.
	Instance string `json:"instance,omitempty"`
}

// Store keeps and restores previous content. It is safe for concurrent use.
type Store struct {
	dir   string
	blobs string
	st    store.StateStore
	opts  Options
	mu    sync.Mutex // serialises Prune's blob collection with this process's Keeps
}

// New opens the store in dir (created if needed), with its index in st.
func New(dir string, st store.StateStore, opts Options) (*Store, error) {
	if st == nil {
		return nil, errors.New("undo: no state store")
	}
	if !filepath.IsAbs(dir) {
		return nil, fmt.Errorf("undo: directory %q is not absolute", dir)
	}
	s := &Store{dir: dir, blobs: filepath.Join(dir, "blobs"), st: st, opts: opts.withDefaults()}
	if err := os.MkdirAll(s.blobs, 0o700); err != nil {
		return nil, fmt.Errorf("undo: %w", err)
	}
	return s, nil
}

// Dir returns the store's directory.
func (s *Store) Dir() string { return s.dir }

// record is the index value of one action.
type record struct {
	Entries []Entry `json:"entries"`
}

// Keep records the current state of path — its content, or that it does
// not exist so that undo removes it — before action actionID changes it.
// For a directory it keeps the files under it, up to the caps. path must be
// absolute; the caller passes the resolved path the action will touch.
// Keeping the same path twice for one action keeps the first state only.
func (s *Store) Keep(ctx context.Context, actionID, session, path string) (Entry, error) {
	if actionID == "" {
		return Entry{}, errors.New("undo: keep: no action id")
	}
	if !filepath.IsAbs(path) {
		return Entry{}, fmt.Errorf("undo: keep: %q is not absolute", path)
	}
	path = filepath.Clean(path)
	s.mu.Lock()
	defer s.mu.Unlock()
	if prev, err := s.load(ctx, actionID); err == nil {
		for _, p := range prev {
			if p.Path == path {
				return p, nil // the state before the action was kept already
			}
		}
	} else if !errors.Is(err, ErrNotFound) {
		return Entry{}, err
	}
	e := Entry{ActionID: actionID, Session: session, Path: path, At: s.opts.Clock.Now(), Instance: s.opts.Instance}
	if err := s.capture(ctx, &e); err != nil {
		return Entry{}, err
	}
	var kept Entry
	err := s.st.UpdateState(ctx, Namespace, actionID, func(old []byte) ([]byte, error) {
		var rec record
		if old != nil {
			if err := json.Unmarshal(old, &rec); err != nil {
				return nil, fmt.Errorf("undo index of %s: %w", actionID, err)
			}
		}
		for _, prev := range rec.Entries {
			if prev.Path == path {
				kept = prev
				return old, nil
			}
		}
		kept = e
		rec.Entries = append(rec.Entries, e)
		return json.Marshal(rec)
	})
	if err != nil {
		return Entry{}, fmt.Errorf("undo: keep %s: %w", path, err)
	}
	return kept, nil
}

// update changes the index record of an action in place.
func (s *Store) update(ctx context.Context, actionID string, fn func(*record)) error {
	return s.st.UpdateState(ctx, Namespace, actionID, func(old []byte) ([]byte, error) {
		if old == nil {
			return nil, fmt.Errorf("%s: %w", actionID, ErrNotFound)
		}
		var rec record
		if err := json.Unmarshal(old, &rec); err != nil {
			return nil, err
		}
		fn(&rec)
		return json.Marshal(rec)
	})
}

// capture fills e.Files with the state of e.Path.
func (s *Store) capture(ctx context.Context, e *Entry) error {
	fi, err := os.Lstat(e.Path)
	if errors.Is(err, fs.ErrNotExist) {
		e.Files = []File{{Path: e.Path}}
		return nil
	}
	if err != nil {
		return fmt.Errorf("undo: keep %s: %w", e.Path, err)
	}
	if !fi.IsDir() {
		budget := s.opts.MaxKeepBytes
		f, err := s.captureOne(e.Path, fi, &budget)
		if err != nil {
			return err
		}
		e.Files = []File{f}
		return nil
	}
	budget := s.opts.MaxKeepBytes
	files := 0
	return filepath.WalkDir(e.Path, func(p string, d fs.DirEntry, err error) error {
		if cerr := ctx.Err(); cerr != nil {
			return cerr
		}
		if err != nil {
			// An unreadable part cannot be kept; say so rather than fail the
			// whole keep (the rest is still restorable).
			e.Files = append(e.Files, File{Path: p, Existed: true, Skipped: "unreadable: " + err.Error()})
			if d != nil && d.IsDir() {
				return fs.SkipDir
			}
			return nil
		}
		if !d.IsDir() {
			if files >= s.opts.MaxDirFiles {
				if e.More >= 10*s.opts.MaxDirFiles {
					e.MoreNotCounted = true
					return fs.SkipAll
				}
				e.More++
				return nil
			}
			files++
		}
		info, err := d.Info()
		if err != nil {
			e.Files = append(e.Files, File{Path: p, Existed: true, Skipped: "unreadable: " + err.Error()})
			return nil
		}
		f, err := s.captureOne(p, info, &budget)
		if err != nil {
			return err
		}
		e.Files = append(e.Files, f)
		return nil
	})
}

// captureOne keeps one path that exists.
func (s *Store) captureOne(p string, fi fs.FileInfo, budget *int64) (File, error) {
	f := File{Path: p, Existed: true, Mode: fi.Mode().Perm(), Size: fi.Size()}
	switch {
	case fi.IsDir():
		f.Type, f.Size = "dir", 0
	case fi.Mode()&fs.ModeSymlink != 0:
		f.Type, f.Size = "symlink", 0
		target, err := os.Readlink(p)
		if err != nil {
			f.Skipped = "unreadable link: " + err.Error()
		} else {
			f.Link = target
		}
	case fi.Mode().IsRegular():
		f.Type = "file"
		switch {
		case fi.Size() > s.opts.MaxFileBytes:
			f.Skipped = fmt.Sprintf("larger than %d bytes", s.opts.MaxFileBytes)
		case fi.Size() > *budget:
			f.Skipped = "over the size budget of one keep"
		default:
			blob, n, err := s.putBlob(p)
			if err != nil {
				return File{}, err
			}
			f.Blob, f.Size = blob, n
			*budget -= n
		}
	default:
		f.Type = "other"
		f.Skipped = "not a regular file"
	}
	return f, nil
}

// blobPath returns where the blob with hash h lives.
func (s *Store) blobPath(h string) string {
	return filepath.Join(s.blobs, h[:2], h[2:])
}

// putBlob stores the content of file p and returns its hash and size.
// Content already stored is not written again.
func (s *Store) putBlob(p string) (string, int64, error) {
	src, err := guard.OpenRegular(p) // a pipe swapped in after Lstat must not hold the keep
	if err != nil {
		return "", 0, fmt.Errorf("undo: keep %s: %w", p, err)
	}
	defer src.Close()
	// Read one byte past the cap: a file that grew since Lstat is not kept
	// half.
	b, err := io.ReadAll(io.LimitReader(src, s.opts.MaxFileBytes+1))
	if err != nil {
		return "", 0, fmt.Errorf("undo: keep %s: %w", p, err)
	}
	if int64(len(b)) > s.opts.MaxFileBytes {
		return "", 0, fmt.Errorf("undo: keep %s: the file grew past %d bytes while it was read", p, s.opts.MaxFileBytes)
	}
	sum := sha256.Sum256(b)
	h := hex.EncodeToString(sum[:])
	n := int64(len(b))
	dst := s.blobPath(h)
	if _, err := os.Stat(dst); err == nil {
		now := time.Now()
		_ = os.Chtimes(dst, now, now) // fresh again for the GC grace
		return h, n, nil
	}
	if err := os.MkdirAll(filepath.Dir(dst), 0o700); err != nil {
		return "", 0, fmt.Errorf("undo: %w", err)
	}
	tmp, err := os.CreateTemp(s.blobs, "tmp-*")
	if err != nil {
		return "", 0, fmt.Errorf("undo: %w", err)
	}
	defer os.Remove(tmp.Name()) // after a successful rename this is a no-op error
	_, err = tmp.Write(b)
	if err == nil {
		err = tmp.Sync()
	}
	if cerr := tmp.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(tmp.Name(), dst)
	}
	if err != nil {
		return "", 0, fmt.Errorf("undo: keep %s: %w", p, err)
	}
	return h, n, nil
}

// load returns the entries kept for an action.
func (s *Store) load(ctx context.Context, actionID string) ([]Entry, error) {
	b, err := s.st.GetState(ctx, Namespace, actionID)
	if errors.Is(err, store.ErrNotFound) {
		return nil, fmt.Errorf("%s: %w", actionID, ErrNotFound)
	}
	if err != nil {
		return nil, fmt.Errorf("undo: %w", err)
	}
	var rec record
	if err := json.Unmarshal(b, &rec); err != nil {
		return nil, fmt.Errorf("undo index of %s: %w", actionID, err)
	}
	if len(rec.Entries) == 0 {
		return nil, fmt.Errorf("%s: %w", actionID, ErrNotFound)
	}
	return rec.Entries, nil
}

// Entries returns what is kept for an action, in the order it was kept.
func (s *Store) Entries(ctx context.Context, actionID string) ([]Entry, error) {
	return s.load(ctx, actionID)
}

// Restore puts back what Keep recorded for an action: kept content is
// written back (through a temporary file and a rename, so a link planted at
// the path is replaced, not followed), paths that did not exist are
// removed, kept directories are re-created. Files added under a kept
// directory since are left alone. Entries are restored last kept first.
// What could not be restored is reported in the error (joined); the rest
// is restored anyway, and the action is marked undone.
func (s *Store) Restore(ctx context.Context, actionID string) ([]Entry, error) {
	entries, err := s.load(ctx, actionID)
	if err != nil {
		return nil, err
	}
	for _, e := range entries {
		if !e.RestoredAt.IsZero() {
			return entries, fmt.Errorf("%s was undone at %s: %w", actionID, e.RestoredAt.Format(time.RFC3339), ErrAlreadyRestored)
		}
	}
	for _, e := range entries {
		// An entry of another instance names files of its machine, whose
		// content is in its directory: restoring it here would remove or
		// write this machine's files of the same names, and mark the
		// action undone where it was not.
		if e.Instance != s.opts.Instance {
			where := e.Instance
			if where == "" {
				where = "an instance of its own"
			}
			return entries, fmt.Errorf("%s was kept by %s: undo it there: %w", actionID, where, ErrElsewhere)
		}
	}
	var errs []error
	for i := len(entries) - 1; i >= 0; i-- {
		if err := ctx.Err(); err != nil {
			return entries, err
		}
		errs = append(errs, s.restoreEntry(entries[i])...)
	}
	now := s.opts.Clock.Now()
	if err := s.update(ctx, actionID, func(rec *record) {
		for i := range rec.Entries {
			rec.Entries[i].RestoredAt = now
		}
	}); err != nil {
		errs = append(errs, fmt.Errorf("undo: marking %s undone: %w", actionID, err))
	}
	for i := range entries {
		entries[i].RestoredAt = now
	}
	return entries, errors.Join(errs...)
}

func (s *Store) restoreEntry(e Entry) []error {
	var errs []error
	// Directories first (parents before children), then the rest; paths
	// that did not exist are removed deepest first.
	files := append([]File(nil), e.Files...)
	sort.SliceStable(files, func(i, j int) bool {
		ri, rj := restoreRank(files[i]), restoreRank(files[j])
		if ri != rj {
			return ri < rj
		}
		if !files[i].Existed {
			return len(files[i].Path) > len(files[j].Path)
		}
		return len(files[i].Path) < len(files[j].Path)
	})
	for _, f := range files {
		if err := s.restoreFile(f); err != nil {
			errs = append(errs, err)
		}
	}
	return errs
}

func restoreRank(f File) int {
	switch {
	case !f.Existed:
		return 0
	case f.Type == "dir":
		return 1
	}
	return 2
}

func (s *Store) restoreFile(f File) error {
	if err := checkParent(f.Path); err != nil {
		return err
	}
	if !f.Existed {
		err := os.Remove(f.Path)
		if err != nil && !errors.Is(err, fs.ErrNotExist) {
			return fmt.Errorf("undo: removing %s, which the action created: %w", f.Path, err)
		}
		return nil
	}
	if f.Skipped != "" {
		return fmt.Errorf("%s (%s): %w", f.Path, f.Skipped, ErrNotKept)
	}
	switch f.Type {
	case "dir":
		if err := os.MkdirAll(f.Path, f.Mode|0o700); err != nil {
			return fmt.Errorf("undo: %w", err)
		}
		return nil
	case "symlink":
		tmp := f.Path + ".overseer-undo"
		_ = os.Remove(tmp)
		if err := os.Symlink(f.Link, tmp); err != nil {
			return fmt.Errorf("undo: %w", err)
		}
		if err := os.Rename(tmp, f.Path); err != nil {
			os.Remove(tmp)
			return fmt.Errorf("undo: %w", err)
		}
		return nil
	case "file":
		return s.writeBack(f)
	}
	return fmt.Errorf("%s (%s): %w", f.Path, f.Type, ErrNotKept)
}

// checkParent refuses to restore into a directory that is now reached
// through a symbolic link: the kept path was resolved when it was kept, so
// a changed resolution means someone moved things around since.
func checkParent(p string) error {
	dir := filepath.Dir(p)
	for {
		real, err := filepath.EvalSymlinks(dir)
		if err == nil {
			if real != dir {
				return fmt.Errorf("%s now leads to %s: %w", dir, real, ErrMoved)
			}
			return nil
		}
		if !errors.Is(err, fs.ErrNotExist) {
			return fmt.Errorf("undo: %w", err)
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return nil
		}
		dir = parent // a missing directory is re-created below its existing parent
	}
}

// writeBack writes a kept file's content back to its path.
func (s *Store) writeBack(f File) error {
	src, err := os.Open(s.blobPath(f.Blob))
	if errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("%s (its content was pruned): %w", f.Path, ErrNotKept)
	}
	if err != nil {
		return fmt.Errorf("undo: %w", err)
	}
	defer src.Close()
	if err := os.MkdirAll(filepath.Dir(f.Path), 0o755); err != nil {
		return fmt.Errorf("undo: %w", err)
	}
	tmp, err := os.CreateTemp(filepath.Dir(f.Path), "."+filepath.Base(f.Path)+".overseer-undo-*")
	if err != nil {
		return fmt.Errorf("undo: %w", err)
	}
	defer os.Remove(tmp.Name())
	_, err = io.Copy(tmp, src)
	if err == nil {
		err = tmp.Chmod(f.Mode)
	}
	if err == nil {
		err = tmp.Sync()
	}
	if cerr := tmp.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("undo: restoring %s: %w", f.Path, err)
	}
	if fi, err := os.Lstat(f.Path); err == nil && fi.IsDir() {
		return fmt.Errorf("undo: %s is now a directory; not replacing it", f.Path)
	}
	if err := os.Rename(tmp.Name(), f.Path); err != nil {
		return fmt.Errorf("undo: restoring %s: %w", f.Path, err)
	}
	return nil
}

// all returns every action's entries.
func (s *Store) all(ctx context.Context) (map[string][]Entry, error) {
	raw, err := s.st.ListState(ctx, Namespace)
	if err != nil {
		return nil, fmt.Errorf("undo: %w", err)
	}
	out := make(map[string][]Entry, len(raw))
	for id, b := range raw {
		var rec record
		if err := json.Unmarshal(b, &rec); err != nil {
			return nil, fmt.Errorf("undo index of %s: %w", id, err)
		}
		if len(rec.Entries) > 0 {
			out[id] = rec.Entries
		}
	}
	return out, nil
}

// actionOrder sorts action ids by when their first path was kept, oldest
// first (ids break ties).
func actionOrder(all map[string][]Entry) []string {
	ids := make([]string, 0, len(all))
	for id := range all {
		ids = append(ids, id)
	}
	sort.Slice(ids, func(i, j int) bool {
		a, b := all[ids[i]][0].At, all[ids[j]][0].At
		if !a.Equal(b) {
			return a.Before(b)
		}
		return ids[i] < ids[j]
	})
	return ids
}

// Last returns the entries of the last n actions of a session that have
// not been undone, newest action first (each action's entries in the order
// they were kept). n <= 0 means all.
func (s *Store) Last(ctx context.Context, session string, n int) ([]Entry, error) {
	all, err := s.all(ctx)
	if err != nil {
		return nil, err
	}
	ids := actionOrder(all)
	var out []Entry
	taken := 0
	for i := len(ids) - 1; i >= 0 && (n <= 0 || taken < n); i-- {
		es := all[ids[i]]
		if es[0].Session != session || !es[0].RestoredAt.IsZero() {
			continue
		}
		out = append(out, es...)
		taken++
	}
	return out, nil
}

// Diff returns a unified diff, per kept file, from the file as it is now
// to what undo would restore; "" when undo would change nothing.
func (s *Store) Diff(ctx context.Context, actionID string) (string, error) {
	entries, err := s.load(ctx, actionID)
	if err != nil {
		return "", err
	}
	var sb strings.Builder
	for _, e := range entries {
		for _, f := range e.Files {
			if err := ctx.Err(); err != nil {
				return "", err
			}
			sb.WriteString(s.diffFile(f))
		}
	}
	return sb.String(), nil
}

// maxDiffBytes is the largest file Diff compares line by line.
const maxDiffBytes = 1 << 20

func (s *Store) diffFile(f File) string {
	if f.Existed && f.Type == "dir" {
		return ""
	}
	cur, curExists, curErr := readCapped(f.Path)
	before := f.Path + " (now)"
	after := f.Path + " (after undo)"
	switch {
	case curErr != nil:
		return fmt.Sprintf("--- %s\n+++ %s\n@@ cannot read the current file: %v @@\n", before, after, curErr)
	case !f.Existed:
		if !curExists {
			return ""
		}
		return unifiedOrSummary(before, "/dev/null (undo removes it)", cur, nil)
	case f.Skipped != "":
		return fmt.Sprintf("--- %s\n+++ %s\n@@ cannot be restored: %s @@\n", before, after, f.Skipped)
	case f.Type == "symlink":
		if l, err := os.Readlink(f.Path); err == nil && l == f.Link {
			return ""
		}
		return fmt.Sprintf("--- %s\n+++ %s\n@@ undo restores the link to %s @@\n", before, after, f.Link)
	}
	old, _, err := readCapped(s.blobPath(f.Blob))
	if err != nil {
		return fmt.Sprintf("--- %s\n+++ %s\n@@ the kept content is gone: %v @@\n", before, after, err)
	}
	if !curExists {
		before = "/dev/null (missing now)"
	}
	return unifiedOrSummary(before, after, cur, old)
}

// readCapped reads up to maxDiffBytes+1 of a file; exists is false when it
// is missing.
func readCapped(p string) (b []byte, exists bool, err error) {
	f, err := guard.OpenRegular(p)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, false, nil
	}
	if err != nil {
		return nil, false, err
	}
	defer f.Close()
	b, err = io.ReadAll(io.LimitReader(f, maxDiffBytes+1))
	return b, true, err
}

func unifiedOrSummary(aName, bName string, a, b []byte) string {
	if string(a) == string(b) {
		return ""
	}
	if len(a) > maxDiffBytes || len(b) > maxDiffBytes || isBinary(a) || isBinary(b) {
		return fmt.Sprintf("--- %s\n+++ %s\n@@ binary or large content differs (%d bytes now, %d after undo) @@\n", aName, bName, len(a), len(b))
	}
	return unifiedDiff(aName, bName, string(a), string(b))
}

func isBinary(b []byte) bool {
	n := min(len(b), 8000)
	for _, c := range b[:n] {
		if c == 0 {
			return true
		}
	}
	return false
}

// PruneStats reports what Prune removed.
type PruneStats struct {
	Actions    int   `json:"actions"`     // actions whose undo data was dropped
	Blobs      int   `json:"blobs"`       // blob files removed
	BytesFreed int64 `json:"bytes_freed"` // their size
	BytesKept  int64 `json:"bytes_kept"`  // content still kept
}

// Prune drops the undo data of actions kept longer ago than maxAge, then of
// the oldest actions until the content still referenced is at most
// maxBytes, and removes blobs no action refers to. With a shared index it
// prunes what this instance kept (Options.Instance), and the records of what
// other instances kept more than twice maxAge ago (not their blobs). A zero maxAge or
// maxBytes does not limit by that measure.
func (s *Store) Prune(ctx context.Context, maxAge time.Duration, maxBytes int64) (PruneStats, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	var st PruneStats
	all, err := s.all(ctx)
	if err != nil {
		return st, err
	}
	// Only this instance's: another's entries refer to its own blobs, and
	// it prunes them by its own measure. Their index records are dropped
	// here by age alone, at twice maxAge: an instance that no longer runs
	// (or one that kept them before instances had names) never will.
	now := s.opts.Clock.Now()
	drop := map[string]bool{}
	for id, es := range all {
		if len(es) > 0 && es[0].Instance != s.opts.Instance {
			if maxAge > 0 && now.Sub(es[0].At) > 2*maxAge {
				drop[id] = true
			}
			delete(all, id)
		}
	}
	ids := actionOrder(all)
	if maxAge > 0 {
		for _, id := range ids {
			if now.Sub(all[id][0].At) > maxAge {
				drop[id] = true
			}
		}
	}
	blobSize := func(keep func(string) bool) (int64, map[string]int) {
		refs := map[string]int{}
		var total int64
		for _, id := range ids {
			if !keep(id) {
				continue
			}
			for _, e := range all[id] {
				for _, f := range e.Files {
					if f.Blob == "" {
						continue
					}
					if refs[f.Blob] == 0 {
						total += f.Size
					}
					refs[f.Blob]++
				}
			}
		}
		return total, refs
	}
	if maxBytes > 0 {
		total, refs := blobSize(func(id string) bool { return !drop[id] })
		for _, id := range ids {
			if total <= maxBytes {
				break
			}
			if drop[id] {
				continue
			}
			drop[id] = true
			for _, e := range all[id] {
				for _, f := range e.Files {
					if f.Blob == "" {
						continue
					}
					refs[f.Blob]--
					if refs[f.Blob] == 0 {
						total -= f.Size
					}
				}
			}
		}
	}
	var errs []error
	for id := range drop {
		if err := s.st.UpdateState(ctx, Namespace, id, func([]byte) ([]byte, error) { return nil, nil }); err != nil {
			errs = append(errs, err)
			continue
		}
		st.Actions++
	}
	kept, refs := blobSize(func(id string) bool { return !drop[id] })
	st.BytesKept = kept
	grace := time.Now().Add(-s.opts.GCGrace)
	err = filepath.WalkDir(s.blobs, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			errs = append(errs, err)
			return nil
		}
		if d.IsDir() {
			return nil
		}
		rel, _ := filepath.Rel(s.blobs, p)
		h := strings.ReplaceAll(rel, string(filepath.Separator), "")
		if refs[h] > 0 {
			return nil
		}
		info, err := d.Info()
		if err != nil || info.ModTime().After(grace) {
			return nil
		}
		if err := os.Remove(p); err != nil {
			errs = append(errs, err)
			return nil
		}
		st.Blobs++
		st.BytesFreed += info.Size()
		return nil
	})
	if err != nil {
		errs = append(errs, err)
	}
	return st, errors.Join(errs...)
}
