package ingest

import (
	"bufio"
	"context"
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

	"github.com/fsnotify/fsnotify"

	"github.com/overseer-dev/overseer/internal/action"
	"github.com/overseer-dev/overseer/internal/frontend/hooks"
	"github.com/overseer-dev/overseer/internal/guard"
	"github.com/overseer-dev/overseer/internal/kernel"
)

// DefaultDirs are where the agents keep their transcripts: Claude Code's
// projects and Codex's sessions ($CODEX_HOME, default ~/.codex).
func DefaultDirs() ([]string, error) {
	home, err := os.UserHomeDir()
	if err != nil {
		return nil, err
	}
	codex := os.Getenv("CODEX_HOME")
	if codex == "" {
		codex = filepath.Join(home, ".codex")
	}
	return []string{filepath.Join(home, ".claude", "projects"), filepath.Join(codex, "sessions")}, nil
}

// Finding is a call worth a person's attention: a violation, what it did to
// the agent's trust.
type Finding struct {
	ActionID string              `json:"action_id"`
	Agent    string              `json:"agent"`
	Session  string              `json:"session,omitempty"`
	Tool     string              `json:"tool"`
	Level    string              `json:"level"`
	Summary  string              `json:"summary"`
	Source   string              `json:"source"` // file:line
	Demoted  *kernel.TrustChange `json:"demoted,omitempty"`
}

// Undoable is an ingested write that can be rolled back.
type Undoable struct {
	ActionID string `json:"action_id"`
	Path     string `json:"path"`
}

// Report sums up an ingest.
type Report struct {
	Files      int            `json:"files"`
	Calls      int            `json:"calls"`      // calls read
	New        int            `json:"new"`        // calls recorded now
	Duplicates int            `json:"duplicates"` // calls recorded before
	Results    int            `json:"results"`    // results recorded now
	Levels     map[string]int `json:"levels"`     // verdicts of the new calls
	Violations []Finding      `json:"violations,omitempty"`
	Undoable   []Undoable     `json:"undoable,omitempty"`
	Problems   []Problem      `json:"problems,omitempty"`
}

func (r *Report) add(o *Report) {
	r.Files += o.Files
	r.Calls += o.Calls
	r.New += o.New
	r.Duplicates += o.Duplicates
	r.Results += o.Results
	for l, n := range o.Levels {
		r.Levels[l] += n
	}
	r.Violations = append(r.Violations, o.Violations...)
	r.Undoable = append(r.Undoable, o.Undoable...)
	r.Problems = append(r.Problems, o.Problems...)
}

// Ingester feeds transcripts to the kernel.
type Ingester struct {
	K *kernel.Kernel
	// Format forces a format; empty: Detect per file.
	Format string
	// OnViolation is called for each new violation (notification).
	OnViolation func(ctx context.Context, f Finding)
	// OnProblem is called for each line that could not be read.
	OnProblem func(ctx context.Context, p Problem)

	mu    sync.Mutex
	files map[string]*fileState
}

// fileState is where a followed file was read to.
type fileState struct {
	parser Parser
	format string
	lines  int
	offset int64
}

// Paths ingests files and directories (every *.jsonl below them) once,
// to their end.
func (in *Ingester) Paths(ctx context.Context, paths []string) (*Report, error) {
	files, err := expand(paths)
	if err != nil {
		return nil, err
	}
	rep := &Report{Levels: map[string]int{}}
	for _, f := range files {
		r, err := in.File(ctx, f, false)
		if err != nil {
			return rep, err
		}
		rep.add(r)
	}
	return rep, nil
}

// expand lists the transcript files of paths: files as given, directories
// walked for *.jsonl (symbolic links are not followed into).
func expand(paths []string) ([]string, error) {
	var out []string
	for _, p := range paths {
		fi, err := os.Stat(p)
		if err != nil {
			return nil, err
		}
		if !fi.IsDir() {
			out = append(out, p)
			continue
		}
		err = filepath.WalkDir(p, func(q string, d fs.DirEntry, err error) error {
			if err != nil {
				return err
			}
			if !d.IsDir() && d.Type().IsRegular() && strings.HasSuffix(q, ".jsonl") {
				out = append(out, q)
			}
			return nil
		})
		if err != nil {
			return nil, err
		}
	}
	sort.Strings(out)
	return out, nil
}

// File ingests what is new in one file since it was last read by this
// Ingester. With partial, a last line without its newline is left for
// later (the agent is still writing it).
func (in *Ingester) File(ctx context.Context, path string, partial bool) (*Report, error) {
	abs, err := filepath.Abs(path)
	if err != nil {
		return nil, err
	}
	in.mu.Lock()
	defer in.mu.Unlock()
	if in.files == nil {
		in.files = map[string]*fileState{}
	}
	// Opened without blocking, and only a regular file: the transcripts'
	// directories are the agents' to write, and a named pipe made there
	// would otherwise hold the ingester (and its lock) until a writer came.
	f, err := guard.OpenRegular(abs)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	st := in.files[abs]
	if fi, err := f.Stat(); err == nil && st != nil && fi.Size() < st.offset {
		st = nil // truncated or replaced: read it again (keys dedupe)
	}
	if st == nil {
		format := in.Format
		if format == "" {
			first, _ := bufio.NewReader(io.LimitReader(f, 1<<20)).ReadBytes('\n')
			format = Detect(abs, first)
			if _, err := f.Seek(0, io.SeekStart); err != nil {
				return nil, err
			}
		}
		p, err := NewParser(format, abs)
		if err != nil {
			return nil, err
		}
		st = &fileState{parser: p, format: format}
		in.files[abs] = st
	}
	if _, err := f.Seek(st.offset, io.SeekStart); err != nil {
		return nil, err
	}
	parsed, err := ReadAll(st.parser, abs, f, st.lines, partial)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", abs, err)
	}
	st.lines = parsed.Lines
	st.offset += parsed.Offset
	rep := &Report{Files: 1, Levels: map[string]int{}, Problems: parsed.Problems}
	for _, ev := range parsed.Events {
		if ev.Call != nil {
			if err := in.call(ctx, ev.Call, rep); err != nil {
				return rep, err
			}
		}
		if ev.Result != nil {
			if err := in.result(ctx, ev.Result, rep); err != nil {
				return rep, err
			}
		}
	}
	if in.OnProblem != nil {
		for _, p := range rep.Problems {
			in.OnProblem(ctx, p)
		}
	}
	return rep, nil
}

// ActionOf builds the canonical action of a recorded call, exactly as the
// agent's hook would have (the same tool table, the same correlation id).
func ActionOf(c *Call) *action.Action {
	ev := &hooks.Event{Agent: c.Agent, SessionID: c.Session, Cwd: c.Cwd, ToolName: c.Tool,
		ToolUseID: c.Origin.ToolUseID, ToolInput: c.Input}
	if c.Origin.SubAgent != "" && c.Origin.SubAgent != "sidechain" {
		ev.AgentID = c.Origin.SubAgent // as Claude Code's hooks name the sub-agent
	}
	a := (*hooks.Table)(nil).Action(ev)
	if c.Kind != "" {
		a.Kind = action.Kind(c.Kind)
	}
	if !c.Origin.Time.IsZero() {
		a.Time = c.Origin.Time
	}
	return a
}

func source(o Origin, key string) kernel.IngestSource {
	return kernel.IngestSource{Key: key, Format: o.Format, File: o.File, Line: o.Line, SubAgent: o.SubAgent,
		ToolUseID: o.ToolUseID, At: o.Time}
}

func (in *Ingester) call(ctx context.Context, c *Call, rep *Report) error {
	rep.Calls++
	a := ActionOf(c)
	out, err := in.K.IngestCall(ctx, a, source(c.Origin, c.Key()))
	if out == nil {
		return err
	}
	if out.Duplicate {
		rep.Duplicates++
		return err
	}
	rep.New++
	rep.Levels[out.Verdict.Level.String()]++
	if out.Violation {
		f := Finding{ActionID: out.ActionID, Agent: a.Agent, Session: a.Session, Tool: a.Tool, Level: out.Verdict.Level.String(),
			Summary: out.Verdict.Summary(), Source: fmt.Sprintf("%s:%d", c.Origin.File, c.Origin.Line), Demoted: out.Demoted}
		rep.Violations = append(rep.Violations, f)
		if in.OnViolation != nil {
			in.OnViolation(ctx, f)
		}
	}
	return err
}

func (in *Ingester) result(ctx context.Context, r *Result, rep *Report) error {
	ir := kernel.IngestedResult{Source: source(r.Origin, r.CallKey()), IsError: r.IsError, Text: r.Text}
	if c := r.Change; c != nil {
		ir.Change = &kernel.FileChange{Path: c.Path, Before: c.Before, After: c.After, Patch: c.Patch}
	}
	id, fresh, err := in.K.IngestResult(ctx, ir)
	switch {
	case errors.Is(err, kernel.ErrNotIngested):
		rep.Problems = append(rep.Problems, Problem{File: r.Origin.File, Line: r.Origin.Line,
			Err: "a result of call " + r.Origin.ToolUseID + ", which was not read"})
		return nil
	case err != nil:
		return err
	}
	if fresh {
		rep.Results++
		if ir.Change != nil {
			rep.Undoable = append(rep.Undoable, Undoable{ActionID: id, Path: ir.Change.Path})
		}
	}
	return nil
}

// Follow ingests paths, then watches them and ingests what the agents
// append, within about a second, until ctx ends. Directories are watched
// with everything below them; new sub-directories are added as they
// appear. A rescan every interval catches what the watcher missed.
func (in *Ingester) Follow(ctx context.Context, paths []string, interval time.Duration, each func(*Report)) error {
	w, err := fsnotify.NewWatcher()
	if err != nil {
		return err
	}
	defer w.Close()
	var dirs []string
	for _, p := range paths {
		fi, err := os.Stat(p)
		if err != nil {
			if errors.Is(err, fs.ErrNotExist) {
				if err := os.MkdirAll(p, 0o700); err != nil {
					return err
				}
				fi, err = os.Stat(p)
			}
			if err != nil {
				return err
			}
		}
		if fi.IsDir() {
			dirs = append(dirs, p)
			if err := watchTree(w, p); err != nil {
				return err
			}
		} else if err := w.Add(filepath.Dir(p)); err != nil {
			return err
		}
	}
	scan := func() {
		files, err := expand(paths)
		if err != nil {
			in.report(ctx, Problem{Err: err.Error()})
			return
		}
		for _, f := range files {
			in.followFile(ctx, f, each)
		}
		for _, d := range dirs {
			_ = watchTree(w, d)
		}
	}
	scan()
	tick := time.NewTicker(interval)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-tick.C:
			scan()
		case ev, ok := <-w.Events:
			if !ok {
				return nil
			}
			if ev.Has(fsnotify.Create) {
				if fi, err := os.Lstat(ev.Name); err == nil && fi.IsDir() {
					_ = watchTree(w, ev.Name)
					scan()
					continue
				}
			}
			if strings.HasSuffix(ev.Name, ".jsonl") && (ev.Has(fsnotify.Write) || ev.Has(fsnotify.Create)) {
				in.followFile(ctx, ev.Name, each)
			}
		case err, ok := <-w.Errors:
			if !ok {
				return nil
			}
			in.report(ctx, Problem{Err: "watching: " + err.Error()})
		}
	}
}

func (in *Ingester) followFile(ctx context.Context, f string, each func(*Report)) {
	if in.unchanged(f) {
		return // the rescan of a large history stats, it does not read
	}
	rep, err := in.File(ctx, f, true)
	if err != nil {
		in.report(ctx, Problem{File: f, Err: err.Error()})
	}
	if rep != nil && each != nil && (rep.Calls > 0 || rep.Results > 0 || len(rep.Problems) > 0) {
		each(rep)
	}
}

// unchanged reports whether f was read to its current size already.
func (in *Ingester) unchanged(f string) bool {
	abs, err := filepath.Abs(f)
	if err != nil {
		return false
	}
	fi, err := os.Stat(abs)
	if err != nil {
		return false
	}
	in.mu.Lock()
	defer in.mu.Unlock()
	st := in.files[abs]
	return st != nil && fi.Size() == st.offset
}

func (in *Ingester) report(ctx context.Context, p Problem) {
	if in.OnProblem != nil {
		in.OnProblem(ctx, p)
	}
}

// watchTree watches dir and every directory below it.
func watchTree(w *fsnotify.Watcher, dir string) error {
	return filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return nil // gone meanwhile
		}
		if d.IsDir() {
			return w.Add(p)
		}
		return nil
	})
}
