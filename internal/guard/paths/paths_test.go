package paths

import (
	"bufio"
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/overseer-dev/overseer/internal/action"
	"github.com/overseer-dev/overseer/internal/clock"
)

type corpusCase struct {
	line                                      int
	kind                                      action.Kind
	agent, tool, cwd, path, want, check, note string
}

func loadCorpus(t testing.TB) []corpusCase {
	t.Helper()
	f, err := os.Open(filepath.Join("testdata", "paths.tsv"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var out []corpusCase
	sc := bufio.NewScanner(f)
	n := 0
	for sc.Scan() {
		n++
		line := sc.Text()
		if strings.TrimSpace(line) == "" || strings.HasPrefix(line, "#") {
			continue
		}
		cols := strings.Split(line, "\t")
		if len(cols) != 8 {
			t.Fatalf("paths.tsv:%d: want 8 tab-separated columns, got %d", n, len(cols))
		}
		out = append(out, corpusCase{line: n, kind: action.Kind(cols[0]), agent: cols[1], tool: cols[2], cwd: cols[3],
			path: cols[4], want: cols[5], check: cols[6], note: cols[7]})
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	return out
}

func TestCorpus(t *testing.T) {
	fx := newFixture(t)
	tr, _ := newTracker(t)
	g := New(fx.config(tr))
	cases := loadCorpus(t)
	if len(cases) < 40 {
		t.Fatalf("corpus has %d cases, want at least 40", len(cases))
	}
	for _, c := range cases {
		t.Run(c.note, func(t *testing.T) {
			cwd := fx.expand(c.cwd)
			if c.cwd == "-" {
				cwd = ""
			}
			a := fileAction(c.kind, c.agent, c.tool, cwd, fx.expand(c.path))
			action.DeriveFileFacts(a)
			fs, err := g.Check(context.Background(), a)
			if err != nil {
				t.Fatalf("line %d: Check: %v", c.line, err)
			}
			got, check := strictest(fs)
			if got != c.want || check != c.check {
				t.Errorf("line %d %s %q: got %s (%s), want %s (%s); findings: %+v", c.line, c.kind, c.path, got, check, c.want, c.check, fs)
			}
		})
	}
}

func TestResolvedFacts(t *testing.T) {
	fx := newFixture(t)
	g := New(fx.config(nil))
	tests := []struct {
		name, cwd, path string
		want            string
		inCwd           bool
	}{
		{"plain", fx.proj, "main.go", fx.proj + "/main.go", true},
		{"relative link", fx.proj, "link-ssh/id_rsa", fx.home + "/.ssh/id_rsa", false},
		{"dotdot after link", fx.proj, "link-ssh/../notes.txt", fx.home + "/notes.txt", false},
		{"link back inside", fx.proj, "sub/back", fx.proj + "/main.go", true},
		{"tilde", fx.proj, "~/notes.txt", fx.home + "/notes.txt", false},
		{"missing tail", fx.proj, "newdir/sub/file.txt", fx.proj + "/newdir/sub/file.txt", true},
		{"missing then dotdot", fx.proj, "nope/../link-other/x", fx.other + "/x", false},
		{"double slash and dot", fx.proj, ".//sub/./a.txt", fx.proj + "/sub/a.txt", true},
		{"cwd through a link", fx.proj + "/up/proj", "main.go", fx.proj + "/main.go", true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			a := fileAction(action.KindFileRead, "claude-code", "Read", tc.cwd, tc.path)
			action.DeriveFileFacts(a)
			if _, err := g.Check(context.Background(), a); err != nil {
				t.Fatal(err)
			}
			if len(a.Facts.Paths) != 1 {
				t.Fatalf("paths = %+v, want one", a.Facts.Paths)
			}
			p := a.Facts.Paths[0]
			if p.Path != tc.want || p.InCwd != tc.inCwd {
				t.Errorf("resolved %q to %q (in_cwd %v), want %q (in_cwd %v)", tc.path, p.Path, p.InCwd, tc.want, tc.inCwd)
			}
		})
	}
}

func TestResolveErrors(t *testing.T) {
	fx := newFixture(t)
	tests := []struct {
		name, home, cwd, path string
		want                  error
	}{
		{"loop", fx.home, fx.proj, "loop1", ErrSymlinkLoop},
		{"self", fx.home, fx.proj, "self/x", ErrSymlinkLoop},
		{"relative without cwd", fx.home, "", "main.go", ErrRelative},
		{"relative cwd", fx.home, "proj", "main.go", ErrRelative},
		{"tilde without home", "", fx.proj, "~/x", ErrNoHome},
		{"empty", fx.home, fx.proj, "", ErrEmpty},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Resolve(tc.home, tc.cwd, tc.path)
			if !errors.Is(err, tc.want) {
				t.Errorf("Resolve(%q) error = %v, want %v", tc.path, err, tc.want)
			}
		})
	}
}

// TestShellFacts: path facts another guard derived (a shell rm target) are
// resolved too, and self-protection and secrets apply to them; the sandbox
// classification is left to the shell guard.
func TestShellFacts(t *testing.T) {
	fx := newFixture(t)
	g := New(fx.config(nil))
	tests := []struct {
		name  string
		fact  action.PathFact
		want  string
		check string
		path  string
	}{
		{"rm through link into home", action.PathFact{Path: fx.proj + "/link-ovh", Intent: action.PathDelete}, "hard:block", "paths.self-protection", fx.ovh},
		{"redirect to secret", action.PathFact{Path: fx.proj + "/innocent.txt", Intent: action.PathWrite}, "hard:approve", "paths.secret", fx.proj + "/.env"},
		{"rm outside cwd", action.PathFact{Path: fx.other + "/notes.txt", Intent: action.PathDelete}, "none", "-", fx.other + "/notes.txt"},
		{"rm of a looping link", action.PathFact{Path: fx.proj + "/loop2", Intent: action.PathDelete}, "none", "-", fx.proj + "/loop2"},
		{"write through a loop", action.PathFact{Path: fx.proj + "/loop2", Intent: action.PathWrite}, "hard:block", "paths.symlink-loop", fx.proj + "/loop2"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			a := &action.Action{Agent: "claude-code", Tool: "Bash", Kind: action.KindShell, Cwd: fx.proj,
				Args: map[string]any{"command": "whatever"}, Facts: action.Facts{Paths: []action.PathFact{tc.fact}}}
			fs, err := g.Check(context.Background(), a)
			if err != nil {
				t.Fatal(err)
			}
			got, check := strictest(fs)
			if got != tc.want || check != tc.check {
				t.Errorf("got %s (%s), want %s (%s): %+v", got, check, tc.want, tc.check, fs)
			}
			if a.Facts.Paths[0].Path != tc.path {
				t.Errorf("resolved to %q, want %q", a.Facts.Paths[0].Path, tc.path)
			}
		})
	}
}

func TestReadBeforeEdit(t *testing.T) {
	ctx := context.Background()
	type step func(t *testing.T, fx *fixture, tr *StoreTracker, file string)
	read := func(full bool) step {
		return func(t *testing.T, fx *fixture, tr *StoreTracker, file string) {
			h, mt, err := HashFile(file)
			if err != nil {
				t.Fatal(err)
			}
			if err := tr.RecordRead(ctx, "s1", file, full, mt, h); err != nil {
				t.Fatal(err)
			}
		}
	}
	touch := func(t *testing.T, fx *fixture, tr *StoreTracker, file string) {
		later := time.Now().Add(time.Hour)
		if err := os.Chtimes(file, later, later); err != nil {
			t.Fatal(err)
		}
	}
	change := func(t *testing.T, fx *fixture, tr *StoreTracker, file string) {
		if err := os.WriteFile(file, []byte("package main // changed\n"), 0o644); err != nil {
			t.Fatal(err)
		}
		touch(t, fx, tr, file)
	}
	tests := []struct {
		name   string
		agent  string
		tool   string
		strict bool
		steps  []step
		want   string
		msg    string
	}{
		{"builtin unread", BuiltinAgent, "file_edit", false, nil, "hard:block", "read the file first"},
		{"builtin partial read", BuiltinAgent, "file_edit", false, []step{read(false)}, "hard:block", "only partly read"},
		{"builtin full read", BuiltinAgent, "file_edit", false, []step{read(true)}, "none", ""},
		{"builtin touched only", BuiltinAgent, "file_edit", false, []step{read(true), touch}, "none", ""},
		{"builtin changed", BuiltinAgent, "file_edit", false, []step{read(true), change}, "hard:block", "changed since you read it"},
		{"builtin re-read after change", BuiltinAgent, "file_edit", false, []step{read(true), change, read(true)}, "none", ""},
		{"builtin partial after full", BuiltinAgent, "file_edit", false, []step{read(true), read(false)}, "hard:block", "only partly read"},
		{"foreign unread", "claude-code", "Edit", false, nil, "none", ""},
		{"foreign unread strict", "claude-code", "Edit", true, nil, "hard:confirm", "read the file first"},
		{"foreign partial", "claude-code", "Edit", false, []step{read(false)}, "none", ""},
		{"foreign partial strict", "claude-code", "Edit", true, []step{read(false)}, "hard:confirm", "only partly read"},
		{"foreign partial touched only", "claude-code", "Edit", false, []step{read(false), touch}, "none", ""},
		{"foreign partial changed", "claude-code", "Edit", false, []step{read(false), change}, "hard:block", "changed since you read it"},
		{"foreign changed", "claude-code", "Edit", false, []step{read(true), change}, "hard:block", "changed since you read it"},
		{"other tool of overseer", BuiltinAgent, "apply_patch", false, []step{read(true), change}, "hard:block", "changed since"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			fx := newFixture(t)
			tr, _ := newTracker(t)
			cfg := fx.config(tr)
			cfg.StrictForeignEdits = tc.strict
			g := New(cfg)
			file := filepath.Join(fx.proj, "main.go")
			for _, s := range tc.steps {
				s(t, fx, tr, file)
			}
			a := fileAction(action.KindFileEdit, tc.agent, tc.tool, fx.proj, "main.go")
			fs, err := g.Check(ctx, a)
			if err != nil {
				t.Fatal(err)
			}
			got, _ := strictest(fs)
			if got != tc.want {
				t.Fatalf("got %s, want %s: %+v", got, tc.want, fs)
			}
			if tc.msg != "" && !strings.Contains(fs[len(fs)-1].Message, tc.msg) {
				t.Errorf("message %q does not say %q", fs[len(fs)-1].Message, tc.msg)
			}
		})
	}
}

// TestFailClosed: every way the guard can fail to judge ends in a finding
// that asks a person (or an error, which the engine turns into approve).
func TestFailClosed(t *testing.T) {
	ctx := context.Background()
	t.Run("tracker store closed", func(t *testing.T) {
		fx := newFixture(t)
		tr, db := newTracker(t)
		g := New(fx.config(tr))
		db.Close()
		for _, agent := range []string{BuiltinAgent, "claude-code"} {
			a := fileAction(action.KindFileEdit, agent, "file_edit", fx.proj, "main.go")
			fs, err := g.Check(ctx, a)
			if err != nil {
				t.Fatal(err)
			}
			got, check := strictest(fs)
			if got != "hard:block" && got != "hard:confirm" || check != "paths.read-before-edit" {
				t.Errorf("%s: got %s (%s), want a hard read-before-edit finding", agent, got, check)
			}
		}
	})
	t.Run("no tracker", func(t *testing.T) {
		fx := newFixture(t)
		g := New(fx.config(nil))
		a := fileAction(action.KindFileEdit, BuiltinAgent, "file_edit", fx.proj, "main.go")
		fs, _ := g.Check(ctx, a)
		if got, _ := strictest(fs); got != "hard:block" {
			t.Errorf("got %s, want hard:block", got)
		}
	})
	t.Run("bad secret pattern", func(t *testing.T) {
		fx := newFixture(t)
		cfg := fx.config(nil)
		cfg.Secrets = []string{"[unclosed"}
		g := New(cfg)
		a := fileAction(action.KindFileRead, "claude-code", "Read", fx.proj, "main.go")
		if _, err := g.Check(ctx, a); err == nil {
			t.Error("Check with a bad pattern succeeded, want an error")
		}
	})
	t.Run("bad output dir", func(t *testing.T) {
		cfg := Config{OutputDir: "relative/out"}
		if err := cfg.Validate(); err == nil {
			t.Error("relative output_dir validated")
		}
		if _, err := New(cfg).Check(ctx, fileAction(action.KindFileRead, "x", "Read", "/", "/x")); err == nil {
			t.Error("Check succeeded with an invalid configuration")
		}
	})
	t.Run("unreadable directory", func(t *testing.T) {
		if os.Geteuid() == 0 {
			t.Skip("root reads every directory")
		}
		fx := newFixture(t)
		locked := filepath.Join(fx.proj, "locked")
		if err := os.MkdirAll(filepath.Join(locked, "in"), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.Chmod(locked, 0); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { os.Chmod(locked, 0o755) })
		g := New(fx.config(nil))
		a := fileAction(action.KindFileRead, "claude-code", "Read", fx.proj, "locked/in/x")
		fs, _ := g.Check(ctx, a)
		if got, check := strictest(fs); got != "hard:approve" || check != "paths.unresolved" {
			t.Errorf("got %s (%s), want hard:approve paths.unresolved", got, check)
		}
	})
	t.Run("no path argument", func(t *testing.T) {
		fx := newFixture(t)
		g := New(fx.config(nil))
		a := &action.Action{Agent: "codex", Tool: "apply_patch", Kind: action.KindFileEdit, Cwd: fx.proj,
			Args: map[string]any{"patch": "*** Begin Patch"}}
		fs, _ := g.Check(ctx, a)
		if got, _ := strictest(fs); got != "soft:confirm" {
			t.Errorf("got %s, want soft:confirm", got)
		}
	})
	t.Run("soft level never below the default", func(t *testing.T) {
		fx := newFixture(t)
		cfg := fx.config(nil)
		cfg.Default = func(action.Kind) action.Level { return action.Approve }
		g := New(cfg)
		a := fileAction(action.KindFileWrite, "claude-code", "Write", fx.proj, fx.other+"/x")
		fs, _ := g.Check(ctx, a)
		if got, _ := strictest(fs); got != "soft:approve" {
			t.Errorf("got %s, want soft:approve", got)
		}
	})
}

func TestReadablePaths(t *testing.T) {
	fx := newFixture(t)
	cfg := fx.config(nil)
	cfg.ReadablePaths = []string{".", "~/notes.txt", fx.other}
	g := New(cfg)
	tests := []struct {
		path, want string
	}{
		{"main.go", "none"},
		{"~/notes.txt", "none"},
		{fx.other + "/notes.txt", "none"},
		{fx.out + "/existing.txt", "hard:confirm"}, // an explicit list replaces the default
		{"~/.kube/config", "hard:approve"},
	}
	for _, tc := range tests {
		t.Run(tc.path, func(t *testing.T) {
			a := fileAction(action.KindFileRead, "claude-code", "Read", fx.proj, tc.path)
			fs, err := g.Check(context.Background(), a)
			if err != nil {
				t.Fatal(err)
			}
			if got, _ := strictest(fs); got != tc.want {
				t.Errorf("got %s, want %s: %+v", got, tc.want, fs)
			}
		})
	}
}

func TestSecretPatterns(t *testing.T) {
	home := "/home/u"
	m, err := compileSecrets(home, append(BuiltinSecrets(), "/srv/vault", "*.secret", "!public.secret"))
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		path string
		want bool
	}{
		{"/home/u/.ssh/id_rsa", true},
		{"/home/u/.ssh", true},
		{"/home/u/.sshx", false},
		{"/home/u/.ssh/id_rsa.pub", false},
		{"/home/u/.aws/config", true},
		{"/home/u/.config/gcloud/application_default_credentials.json", true},
		{"/home/u/.config/other", false},
		{"/p/.env", true},
		{"/p/.env.local", true},
		{"/p/.env.example", false},
		{"/p/.environment", false},
		{"/p/tls.KEY", true},
		{"/p/keyboard.go", false},
		{"/etc/ssh/ssh_host_ed25519_key", true},
		{"/etc/ssh/ssh_host_ed25519_key.pub", false},
		{"/srv/vault/x/y", true},
		{"/srv/vaults", false},
		{"/p/db.secret", true},
		{"/p/public.secret", false},
		{"/p/main.go", false},
	}
	for _, tc := range tests {
		t.Run(tc.path, func(t *testing.T) {
			if _, got := m.match(tc.path); got != tc.want {
				t.Errorf("secret(%q) = %v, want %v", tc.path, got, tc.want)
			}
		})
	}
	bad := []string{"", "!", "!!x", "~", "/", "*", "a/b", "[x", "x\x00"}
	for _, p := range bad {
		t.Run("bad "+p, func(t *testing.T) {
			if err := ValidatePattern(p); !errors.Is(err, ErrBadPattern) {
				t.Errorf("ValidatePattern(%q) = %v, want ErrBadPattern", p, err)
			}
		})
	}
}

func TestStoreTrackerPrune(t *testing.T) {
	ctx := context.Background()
	tr, _ := newTracker(t)
	old := time.Date(2020, 1, 1, 0, 0, 0, 0, time.UTC)
	clk := clock.NewFake(old)
	tr.clock = clk
	if err := tr.RecordRead(ctx, "s", "/a", true, old, "h"); err != nil {
		t.Fatal(err)
	}
	clk.Advance(48 * time.Hour)
	if err := tr.RecordRead(ctx, "s", "/b", true, old, "h"); err != nil {
		t.Fatal(err)
	}
	n, err := tr.Prune(ctx, old.Add(24*time.Hour))
	if err != nil || n != 1 {
		t.Fatalf("Prune = %d, %v; want 1", n, err)
	}
	if _, ok, _ := tr.LastRead(ctx, "s", "/a"); ok {
		t.Error("/a survived pruning")
	}
	if _, ok, _ := tr.LastRead(ctx, "s", "/b"); !ok {
		t.Error("/b was pruned")
	}
	// Sessions do not share reads, and keys cannot collide.
	if _, ok, _ := tr.LastRead(ctx, "s:", "/b"); ok {
		t.Error("another session saw the read")
	}
}

func TestTrackingContext(t *testing.T) {
	if _, ok := TrackingFrom(context.Background()); ok {
		t.Error("empty context has tracking")
	}
	tr, _ := newTracker(t)
	ctx := WithTracking(context.Background(), Tracking{Reads: tr, Session: "s9"})
	got, ok := TrackingFrom(ctx)
	if !ok || got.Session != "s9" {
		t.Errorf("TrackingFrom = %+v, %v", got, ok)
	}
}
