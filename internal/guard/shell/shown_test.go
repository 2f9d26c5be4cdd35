package shell

import (
	"fmt"
	"strings"
	"testing"
)

func fmtShown(ss []Shown) string {
	var parts []string
	for _, s := range ss {
		switch {
		case s.Tail > 0:
			parts = append(parts, fmt.Sprintf("%s last %d", s.Path, s.Tail))
		default:
			parts = append(parts, fmt.Sprintf("%s %d-%d", s.Path, s.First, s.Last))
		}
	}
	return strings.Join(parts, "; ")
}

// TestShownFiles covers what a shell command prints to the agent: the
// forms agents use to read files (Codex reads with sed -n and nl | sed),
// and their twins that show nothing — output redirected or filtered,
// words computed at run time, commands that may not run.
func TestShownFiles(t *testing.T) {
	for _, tc := range []struct{ cmd, want string }{
		{"cat a.go", "/p/a.go 1-0"},
		{"cat -n a.go b.go", "/p/a.go 1-0; /p/b.go 1-0"},
		{"cat /etc/hosts", "/etc/hosts 1-0"},
		{"cat -- -x", "/p/-x 1-0"},
		{"nl -ba a.go", "/p/a.go 1-0"},
		{"head a.go", "/p/a.go 1-10"},
		{"head -n 50 a.go", "/p/a.go 1-50"},
		{"head -n50 a.go", "/p/a.go 1-50"},
		{"head -50 a.go", "/p/a.go 1-50"},
		{"head --lines=7 a.go", "/p/a.go 1-7"},
		{"tail a.go", "/p/a.go last 10"},
		{"tail -n 30 a.go", "/p/a.go last 30"},
		{"tail -n +1 a.go", "/p/a.go 1-0"},
		{"tail -n +5 a.go", "/p/a.go 5-0"},
		{"sed -n '1,200p' a.go", "/p/a.go 1-200"},
		{"sed -n 1,200p a.go", "/p/a.go 1-200"},
		{"sed -n '10,$p' a.go", "/p/a.go 10-0"},
		{"sed -n 'p' a.go", "/p/a.go 1-0"},
		{"sed -n '5p' a.go", "/p/a.go 5-5"},
		{"sed -n -e '1,20p' a.go", "/p/a.go 1-20"},
		{"sed -n '1,200p' -- a.go", "/p/a.go 1-200"},
		{"nl -ba a.go | sed -n '1,120p'", "/p/a.go 1-120"},
		{"cat -n a.go | head -n 40", "/p/a.go 1-40"},
		{"cat a.go | tail -n 5", "/p/a.go last 5"},
		{`bash -lc "sed -n '1,200p' src/main.rs"`, "/p/src/main.rs 1-200"},
		{`'bash' '-lc' 'cat README.md'`, "/p/README.md 1-0"},
		{"sh -c 'cat a'", "/p/a 1-0"},
		{"cd sub && cat a.go", "/p/sub/a.go 1-0"},
		{"cd /x && cd y && sed -n '1,9p' z", "/x/y/z 1-9"},
		{`bash -lc "cd sub && nl -ba a.go | sed -n '1,80p'"`, "/p/sub/a.go 1-80"},
		{"cat a.go; cat b.go", "/p/a.go 1-0; /p/b.go 1-0"},
		{"cat a.go 2>/dev/null", "/p/a.go 1-0"},
		{"cat a.go 2>&1", "/p/a.go 1-0"},
		{"echo ---; cat a.go", "/p/a.go 1-0"},
		{"ls && cat a.go", ""},
		{"cat a.go || true", "/p/a.go 1-0"},
		{"cat a.go && cat b.go", "/p/a.go 1-0"},
		{"cat \"a b.go\"", "/p/a b.go 1-0"},

		// Nothing shown: output elsewhere or filtered.
		{"cat a.go > b.go", ""},
		{"cat a.go >> b.go", ""},
		{"cat a.go &> log", ""},
		{"cat a.go 1>/dev/null", ""},
		{"cat a.go >&2", ""},
		{"cat a.go | grep x", ""},
		{"cat a.go | wc -l", ""},
		{"grep -n x a.go", ""},
		{"wc -l a.go", ""},
		{"cp a.go b.go", ""},
		{"x=$(cat a.go)", ""},
		{"echo $(cat a.go)", ""},
		{"cat a.go &", ""},
		{"! cat a.go", ""},
		{"(cat a.go)", ""},
		{"{ cat a.go; } > out", ""},
		{"for f in a; do cat $f; done", ""},
		{"cat < a.go", ""},
		{"cat", ""},
		{"cat -", ""},
		{"bat a.go", ""},
		{"less a.go", ""},
		{`bash -lc "cat a.go" > out`, ""},

		// Not a plain display: options not known, several files to sed.
		{"cat -x a.go", ""},
		{"head -c 100 a.go", ""},
		{"head -n -5 a.go", ""},
		{"tail -f a.go", ""},
		{"sed 's/a/b/' a.go", ""},
		{"sed -n 's/a/b/p' a.go", ""},
		{"sed -i -n '1,2p' a.go", ""},
		{"sed '1,200p' a.go", ""},
		{"sed -n '1,200p' a.go b.go", ""},
		{"nl a.go", "/p/a.go 1-0"},
		{"nl -v 5 a.go", ""},
		{"cat -s a.go | sed -n 1,5p", ""},
		{"cat a.go b.go | head", ""},

		// Words computed at run time, globs.
		{"cat $F", ""},
		{"cat *.go", ""},
		{"cat ~/.bashrc", ""},
		{`cat "$HOME/x"`, ""},
		{"cat a{1,2}.go", ""},
		{`cat a\.go`, ""},

		// What may not run, or runs elsewhere.
		{"false && cat a.go", ""},
		{"test -e x && cat a.go", ""},
		{"false || cd /tmp; cat a.go", ""},
		{"cd $D && cat a.go", ""},
		{"cd - && cat a.go", ""},
		{"exit 0; cat a.go", ""},
		{"eval x; cat a.go", ""},
		{"pushd /x; cat a.go", ""},
		{"X=1 cat a.go", ""},
		{"$P a.go; cat b.go", ""},
		{"f() { cd /; }; f; cat a.go", ""},
		{"cat 'a.go", ""},
		{"cd /x; (cd /y); cat a.go", ""},
	} {
		got := fmtShown(ShownFiles(tc.cmd, "/p"))
		if got != tc.want {
			t.Errorf("%q: got %q, want %q", tc.cmd, got, tc.want)
		}
	}
	// No working directory: relative paths are dropped.
	if got := fmtShown(ShownFiles("cat a.go /abs/b.go", "")); got != "/abs/b.go 1-0" {
		t.Errorf("without a cwd: %q", got)
	}
}

func TestShownCovers(t *testing.T) {
	for _, tc := range []struct {
		s     Shown
		lines int
		want  bool
	}{
		{Shown{First: 1}, 5000, true},
		{Shown{First: 1, Last: 200}, 150, true},
		{Shown{First: 1, Last: 200}, 200, true},
		{Shown{First: 1, Last: 200}, 201, false},
		{Shown{First: 2}, 10, false},
		{Shown{First: 2}, 0, false},
		{Shown{First: 1, Last: 10}, 0, true},
		{Shown{Tail: 10}, 10, true},
		{Shown{Tail: 10}, 11, false},
	} {
		if got := tc.s.Covers(tc.lines); got != tc.want {
			t.Errorf("%+v covers %d lines: %v, want %v", tc.s, tc.lines, got, tc.want)
		}
	}
}

// FuzzShownFiles: any command string, never a panic, and every file shown
// is an absolute path under the working directory or given absolute.
func FuzzShownFiles(f *testing.F) {
	for _, s := range []string{"cat a", "sed -n '1,200p' a", "nl -ba a | sed -n 1,5p", `bash -lc "cd x && cat y"`,
		"cd a && cd b && head -n 3 c", "cat a > b", "false || cd x; cat y"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, cmd string) {
		for _, s := range ShownFiles(cmd, "/p") {
			if !strings.HasPrefix(s.Path, "/") {
				t.Fatalf("%q: relative path %q", cmd, s.Path)
			}
			if s.Tail < 0 || s.First < 0 || s.Last < 0 {
				t.Fatalf("%q: negative span %+v", cmd, s)
			}
		}
	})
}
