package agent

// Environment awareness: the files a task read or wrote are watched
// (fsnotify, on their directories, so that editors' rename-over writes are
// seen too). When one changes, the next prompt carries a notice — once the
// change is confirmed by the file's content hash differing from what the
// task last read or wrote (the task's own writes are recorded as reads,
// so they raise no notice). The read-before-edit check of the paths guard
// refuses an edit of such a file until it is read again; the notice tells
// the model why before it tries.

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"sync"
	"time"

	"github.com/fsnotify/fsnotify"

	"github.com/overseer-dev/overseer/internal/action"
	"github.com/overseer-dev/overseer/internal/guard/paths"
)

// maxWatched bounds the files a task watches.
const maxWatched = 512

// watcher watches the files of one run.
type watcher struct {
	w *fsnotify.Watcher

	mu    sync.Mutex
	dirs  map[string]bool
	files map[string]bool
	dirty map[string]bool
	done  chan struct{}
}

// newWatcher starts a watcher; nil when the platform has none (the run
// goes on without notices: read-before-edit still guards edits).
func newWatcher() *watcher {
	fw, err := fsnotify.NewWatcher()
	if err != nil {
		return nil
	}
	w := &watcher{w: fw, dirs: map[string]bool{}, files: map[string]bool{}, dirty: map[string]bool{}, done: make(chan struct{})}
	go w.loop()
	return w
}

func (w *watcher) loop() {
	defer close(w.done)
	for {
		select {
		case ev, ok := <-w.w.Events:
			if !ok {
				return
			}
			if ev.Op&(fsnotify.Write|fsnotify.Create|fsnotify.Remove|fsnotify.Rename|fsnotify.Chmod) == 0 {
				continue
			}
			name := filepath.Clean(ev.Name)
			w.mu.Lock()
			if w.files[name] {
				w.dirty[name] = true
			}
			w.mu.Unlock()
		case _, ok := <-w.w.Errors:
			if !ok {
				return
			}
		}
	}
}

// close stops the watcher and waits for its goroutine.
func (w *watcher) close() {
	if w == nil {
		return
	}
	_ = w.w.Close()
	<-w.done
}

// watch adds the files a's action read or wrote.
func (w *watcher) watch(a *action.Action) {
	if w == nil {
		return
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	for _, p := range a.Facts.Paths {
		if p.Intent != action.PathRead && p.Intent != action.PathWrite || w.files[p.Path] || len(w.files) >= maxWatched {
			continue
		}
		if fi, err := os.Stat(p.Path); err != nil || !fi.Mode().IsRegular() {
			continue
		}
		dir := filepath.Dir(p.Path)
		if !w.dirs[dir] {
			if err := w.w.Add(dir); err != nil {
				continue
			}
			w.dirs[dir] = true
		}
		w.files[p.Path] = true
	}
}

// notices returns a notice for each watched file that changed since the
// session last read or wrote it, once (the dirty marks are cleared).
func (w *watcher) notices(ctx context.Context, reads paths.ReadTracker, session string) []string {
	if w == nil || reads == nil {
		return nil
	}
	w.mu.Lock()
	var dirty []string
	for p := range w.dirty {
		dirty = append(dirty, p)
	}
	w.dirty = map[string]bool{}
	w.mu.Unlock()
	sort.Strings(dirty)
	var out []string
	for _, p := range dirty {
		ri, ok, err := reads.LastRead(ctx, session, p)
		if err != nil || !ok {
			continue
		}
		// A file larger than any read recorded has changed since (its read
		// was recorded, so it was smaller): it is not read to say so.
		h, err := "", error(nil)
		if fi, serr := os.Stat(p); serr == nil && fi.Size() > paths.MaxRecordedRead {
			h = "(larger than any recorded read)"
		} else {
			h, _, err = paths.HashFile(p)
		}
		switch {
		case os.IsNotExist(err):
			out = append(out, fmt.Sprintf("%s was removed outside this task since you last read or wrote it (at %s).",
				p, ri.At.UTC().Format(time.RFC3339)))
		case err != nil, h == ri.Hash:
		default:
			out = append(out, fmt.Sprintf("%s changed outside this task since you last read or wrote it (at %s): read it again before you rely on it or edit it.",
				p, ri.At.UTC().Format(time.RFC3339)))
		}
	}
	return out
}
