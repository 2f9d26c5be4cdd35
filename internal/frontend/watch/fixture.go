package watch

import (
	"encoding/json"
	"errors"
	"fmt"
	"strings"
)

// Fixture is a recorded screen with what the recognisers must make of it,
// kept in testdata/screens (recorded from the real CLIs by the test helper
// in test/watch, so they can be recorded again for new versions).
type Fixture struct {
	// Source says where the screen came from: "<cli> <version>" for a
	// recording, or "crafted from <fixture>: <why>".
	Source  string
	Process string // the pane's foreground command
	Width   int
	Height  int
	CursorX int
	CursorY int
	// Expect is what recognising must give; nil: no prompt.
	Expect *Expect
	Screen string
}

// Expect is a fixture's expected recognition.
type Expect struct {
	Recogniser string         `json:"recogniser"`
	Tool       string         `json:"tool"`
	Args       map[string]any `json:"args,omitempty"`
	Complete   bool           `json:"complete"`
	// Answerable: the selection is on the option that allows once.
	Answerable bool `json:"answerable"`
}

const fixtureMagic = "# overseer watch fixture v1"

// Format writes the fixture.
func (f *Fixture) Format() string {
	var b strings.Builder
	fmt.Fprintf(&b, "%s\n# source: %s\n# process: %s\n# size: %dx%d\n# cursor: %d,%d\n", fixtureMagic,
		f.Source, f.Process, f.Width, f.Height, f.CursorX, f.CursorY)
	if f.Expect == nil {
		b.WriteString("# expect: none\n")
	} else {
		j, _ := json.Marshal(f.Expect)
		fmt.Fprintf(&b, "# expect: %s\n", j)
	}
	b.WriteString("# screen:\n")
	b.WriteString(f.Screen)
	return b.String()
}

// ParseFixture reads a fixture.
func ParseFixture(s string) (*Fixture, error) {
	head, screen, ok := strings.Cut(s, "# screen:\n")
	if !ok || !strings.HasPrefix(head, fixtureMagic+"\n") {
		return nil, errors.New("not a watch fixture")
	}
	f := &Fixture{Screen: screen}
	for _, l := range strings.Split(strings.TrimSpace(head), "\n")[1:] {
		k, v, ok := strings.Cut(strings.TrimPrefix(l, "# "), ": ")
		if !ok {
			return nil, fmt.Errorf("bad header line %q", l)
		}
		var err error
		switch k {
		case "source":
			f.Source = v
		case "process":
			f.Process = v
		case "size":
			_, err = fmt.Sscanf(v, "%dx%d", &f.Width, &f.Height)
		case "cursor":
			_, err = fmt.Sscanf(v, "%d,%d", &f.CursorX, &f.CursorY)
		case "expect":
			if v != "none" {
				f.Expect = &Expect{}
				err = json.Unmarshal([]byte(v), f.Expect)
			}
		default:
			err = fmt.Errorf("unknown header %q", k)
		}
		if err != nil {
			return nil, fmt.Errorf("header %s: %v", k, err)
		}
	}
	return f, nil
}

// ScreenOf is the fixture's screen as a capture would give it.
func (f *Fixture) ScreenOf() *Screen {
	s := NewScreen(f.Screen, f.Width, f.Height)
	s.CursorX, s.CursorY = f.CursorX, f.CursorY
	return s
}
