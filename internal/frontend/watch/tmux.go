package watch

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"os/exec"
	"strconv"
	"strings"
)

// Tmux runs tmux commands against one server.
type Tmux struct {
	// Bin is the tmux program ("tmux" when empty).
	Bin string
	// Server selects the server: e.g. ["-L", "name"] or ["-S", "/path"];
	// empty: the default server (as $TMUX or tmux itself chooses).
	Server []string
}

// Pane is one pane as listed.
type Pane struct {
	ID      string // %N, stable for the pane's life
	Session string
	Target  string // session:window.pane, for people
	Command string // the foreground process
	Path    string // its current directory
	Dead    bool
}

// Capture is one pane's screen with its state at capture time.
type Capture struct {
	Pane
	Screen *Screen
	// InMode: the pane shows a copy or view mode; keys would not reach
	// the program.
	InMode bool
}

func (t *Tmux) run(ctx context.Context, args ...string) ([]byte, error) {
	bin := t.Bin
	if bin == "" {
		bin = "tmux"
	}
	cmd := exec.CommandContext(ctx, bin, append(append([]string{}, t.Server...), args...)...)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return nil, fmt.Errorf("tmux %s: %w: %s", args[0], err, strings.TrimSpace(stderr.String()))
	}
	return out, nil
}

const paneFormat = "#{pane_id}\t#{session_name}\t#{session_name}:#{window_index}.#{pane_index}\t#{pane_dead}\t#{pane_current_command}\t#{pane_current_path}"

// Panes lists the panes of session, or of every session when it is empty.
func (t *Tmux) Panes(ctx context.Context, session string) ([]Pane, error) {
	args := []string{"list-panes", "-a", "-F", paneFormat}
	if session != "" {
		args = []string{"list-panes", "-s", "-t", "=" + session, "-F", paneFormat}
	}
	out, err := t.run(ctx, args...)
	if err != nil {
		return nil, err
	}
	var ps []Pane
	for _, l := range strings.Split(strings.TrimRight(string(out), "\n"), "\n") {
		f := strings.SplitN(l, "\t", 6)
		if len(f) != 6 || !strings.HasPrefix(f[0], "%") {
			continue
		}
		ps = append(ps, Pane{ID: f[0], Session: f[1], Target: f[2], Dead: f[3] == "1", Command: f[4], Path: f[5]})
	}
	return ps, nil
}

// Capture captures the given panes with one tmux command. Each screen is
// preceded by a header line carrying a fresh random nonce, so nothing a
// pane prints can pass for the boundary between two panes.
func (t *Tmux) Capture(ctx context.Context, panes []Pane) ([]Capture, error) {
	if len(panes) == 0 {
		return nil, nil
	}
	var nb [12]byte
	if _, err := rand.Read(nb[:]); err != nil {
		return nil, err
	}
	nonce := "ovs-" + hex.EncodeToString(nb[:])
	var args []string
	for i, p := range panes {
		if i > 0 {
			args = append(args, ";")
		}
		args = append(args, "display-message", "-p", "-t", p.ID,
			nonce+" #{pane_id} #{pane_width} #{pane_height} #{cursor_x} #{cursor_y} #{pane_in_mode}",
			";", "capture-pane", "-p", "-t", p.ID)
	}
	out, err := t.run(ctx, args...)
	if err != nil {
		return nil, err
	}
	return parseCaptures(string(out), nonce, panes)
}

// parseCaptures splits the output of Capture.
func parseCaptures(out, nonce string, panes []Pane) ([]Capture, error) {
	byID := make(map[string]Pane, len(panes))
	for _, p := range panes {
		byID[p.ID] = p
	}
	var caps []Capture
	var cur *Capture
	var body []string
	flush := func() {
		if cur != nil {
			cur.Screen = newScreenLines(body, cur.Screen)
			caps = append(caps, *cur)
		}
		body = nil
	}
	for _, l := range strings.Split(out, "\n") {
		if rest, ok := strings.CutPrefix(l, nonce+" "); ok {
			flush()
			f := strings.Fields(rest)
			if len(f) != 6 {
				return nil, errors.New("tmux: unexpected capture header")
			}
			p, ok := byID[f[0]]
			if !ok {
				return nil, errors.New("tmux: capture of an unknown pane")
			}
			n := make([]int, 4)
			for i := range n {
				v, err := strconv.Atoi(f[i+1])
				if err != nil {
					return nil, errors.New("tmux: unexpected capture header")
				}
				n[i] = v
			}
			cur = &Capture{Pane: p, InMode: f[5] != "0",
				Screen: &Screen{Width: n[0], Height: n[1], CursorX: n[2], CursorY: n[3]}}
			continue
		}
		body = append(body, l)
	}
	flush()
	if len(caps) != len(panes) {
		return nil, fmt.Errorf("tmux: %d screens for %d panes", len(caps), len(panes))
	}
	return caps, nil
}

// newScreenLines makes a screen from captured lines, keeping the size and
// cursor of s. capture-pane prints one line per row; the last newline
// leaves an empty element.
func newScreenLines(lines []string, s *Screen) *Screen {
	if len(lines) > s.Height && s.Height > 0 {
		lines = lines[:s.Height]
	}
	ns := NewScreen(strings.Join(lines, "\n"), s.Width, s.Height)
	ns.CursorX, ns.CursorY = s.CursorX, s.CursorY
	return ns
}

// Send types keys into a pane. A key that is a tmux key name (Enter,
// Escape, Up, …) is sent as that key; anything else is sent literally.
func (t *Tmux) Send(ctx context.Context, paneID string, keys []string) error {
	for _, k := range keys {
		args := []string{"send-keys", "-t", paneID}
		if keyName(k) {
			args = append(args, k)
		} else {
			args = append(args, "-l", k)
		}
		if _, err := t.run(ctx, args...); err != nil {
			return err
		}
	}
	return nil
}

func keyName(k string) bool {
	switch k {
	case "Enter", "Escape", "Tab", "BTab", "Up", "Down", "Left", "Right", "Space", "BSpace":
		return true
	}
	return false
}
