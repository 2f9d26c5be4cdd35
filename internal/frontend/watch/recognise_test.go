package watch

import (
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

// fixtures reads every fixture under testdata/screens.
func fixtures(t testing.TB) map[string]*Fixture {
	t.Helper()
	out := map[string]*Fixture{}
	err := filepath.WalkDir(filepath.Join("testdata", "screens"), func(path string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() || !strings.HasSuffix(path, ".txt") {
			return err
		}
		b, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		f, err := ParseFixture(string(b))
		if err != nil {
			t.Fatalf("%s: %v", path, err)
		}
		rel, _ := filepath.Rel(filepath.Join("testdata", "screens"), path)
		out[filepath.ToSlash(rel)] = f
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(out) == 0 {
		t.Fatal("no fixtures")
	}
	return out
}

func builtinSet(t testing.TB) *Set {
	t.Helper()
	s, err := Builtin()
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// TestFixtures recognises every recorded and crafted screen and compares
// with what the fixture expects.
func TestFixtures(t *testing.T) {
	set := builtinSet(t)
	agents := map[string]bool{}
	for name, f := range fixtures(t) {
		t.Run(name, func(t *testing.T) {
			p, ok := set.Recognise(f.ScreenOf(), f.Process)
			if f.Expect == nil {
				if ok {
					t.Fatalf("recognised %s (%s %v) on a screen with no prompt", p.Recogniser, p.Tool, p.Args)
				}
				return
			}
			if !ok {
				t.Fatalf("no prompt recognised; want %s", f.Expect.Recogniser)
			}
			agents[p.Agent] = true
			if p.Recogniser != f.Expect.Recogniser || p.Tool != f.Expect.Tool {
				t.Errorf("recognised %s tool %q, want %s tool %q", p.Recogniser, p.Tool, f.Expect.Recogniser, f.Expect.Tool)
			}
			if p.Complete() != f.Expect.Complete {
				t.Errorf("complete = %v (%s), want %v; args %v", p.Complete(), p.Incomplete, f.Expect.Complete, p.Args)
			}
			if got := p.AllowOnce >= 0 && p.Selected == p.AllowOnce; got != f.Expect.Answerable {
				t.Errorf("answerable = %v (options %v, selected %d, allow once %d), want %v", got, p.Options, p.Selected, p.AllowOnce, f.Expect.Answerable)
			}
			if f.Expect.Args != nil && !reflect.DeepEqual(p.Args, f.Expect.Args) {
				t.Errorf("args %#v, want %#v", p.Args, f.Expect.Args)
			}
			// Whatever the recogniser says, the process check holds: the
			// same screen in a shell is not an agent's prompt.
			if p.Agent != "terminal" {
				if q, ok := set.Recognise(f.ScreenOf(), "bash"); ok && q.Agent == p.Agent {
					t.Errorf("recognised as %s in a pane running bash", q.Recogniser)
				}
			}
		})
	}
}
