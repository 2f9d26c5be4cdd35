package watch

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"
)

// PanesDir is the directory under Overseer's home where each running
// watcher publishes its panes view (one file per watcher process), for
// `overseer watch panes` and the daemon's GET /api/v1/watch/panes.
const PanesDir = "watch"

// PaneSet is one watcher's published view.
type PaneSet struct {
	PID     int        `json:"pid"`
	Server  string     `json:"server,omitempty"` // the tmux server it watches ("" the default)
	Updated time.Time  `json:"updated"`
	Panes   []PaneView `json:"panes"`
}

// publishEvery is how often an unchanged view is written again, so a
// reader can tell a live watcher from a stale file.
const publishEvery = 10 * time.Second

// Publisher writes a watcher's view to home/watch/panes-<pid>.json when it
// changes (and every publishEvery).
type Publisher struct {
	Home   string
	Server string
	last   []byte
	at     time.Time
}

func (p *Publisher) path() string {
	return filepath.Join(p.Home, PanesDir, "panes-"+strconv.Itoa(os.Getpid())+".json")
}

// Publish writes views if they changed.
func (p *Publisher) Publish(views []PaneView, now time.Time) error {
	b, err := json.Marshal(views)
	if err != nil {
		return err
	}
	if string(b) == string(p.last) && now.Sub(p.at) < publishEvery {
		return nil
	}
	set := PaneSet{PID: os.Getpid(), Server: p.Server, Updated: now, Panes: views}
	out, err := json.Marshal(set)
	if err != nil {
		return err
	}
	if err := os.MkdirAll(filepath.Join(p.Home, PanesDir), 0o700); err != nil {
		return err
	}
	tmp := p.path() + ".tmp"
	if err := os.WriteFile(tmp, out, 0o600); err != nil {
		return err
	}
	if err := os.Rename(tmp, p.path()); err != nil {
		return err
	}
	p.last, p.at = b, now
	return nil
}

// Close removes the published view.
func (p *Publisher) Close() { _ = os.Remove(p.path()) }

// ReadPanes reads the views of the watchers running on this machine; files
// of watchers that stopped publishing (gone without removing their file)
// are skipped.
func ReadPanes(home string, now time.Time) ([]PaneSet, error) {
	ents, err := os.ReadDir(filepath.Join(home, PanesDir))
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	var out []PaneSet
	for _, e := range ents {
		name := e.Name()
		if !strings.HasPrefix(name, "panes-") || !strings.HasSuffix(name, ".json") {
			continue
		}
		b, err := os.ReadFile(filepath.Join(home, PanesDir, name))
		if err != nil {
			continue
		}
		var s PaneSet
		if json.Unmarshal(b, &s) != nil || s.PID <= 0 {
			continue
		}
		if now.Sub(s.Updated) > 3*publishEvery {
			continue
		}
		out = append(out, s)
	}
	slices.SortFunc(out, func(a, b PaneSet) int { return a.PID - b.PID })
	return out, nil
}

// FormatPanes writes the panes view as a table.
func FormatPanes(sets []PaneSet, now time.Time) string {
	var b strings.Builder
	if len(sets) == 0 {
		return "no watcher is running (start one with: overseer watch tmux)\n"
	}
	for _, s := range sets {
		server := s.Server
		if server == "" {
			server = "default tmux server"
		}
		fmt.Fprintf(&b, "watcher pid %d (%s), %d panes\n", s.PID, server, len(s.Panes))
		fmt.Fprintf(&b, "  %-6s %-16s %-12s %-18s %-8s %s\n", "PANE", "TARGET", "AGENT", "STATE", "FOR", "LAST PROMPT")
		for _, v := range s.Panes {
			last := v.Prompt
			if v.Args != "" {
				last += " " + v.Args
			}
			if v.Answer != "" {
				last += " → " + v.Answer
			}
			fmt.Fprintf(&b, "  %-6s %-16s %-12s %-18s %-8s %s\n", v.ID, v.Target, orDash(v.Agent), v.State,
				now.Sub(v.Since).Round(time.Second), orDash(short(last, 80)))
		}
	}
	return b.String()
}

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

func short(s string, n int) string {
	if r := []rune(s); len(r) > n {
		return string(r[:n-1]) + "…"
	}
	return s
}
