package paths

import (
	"context"
	"path/filepath"
	"strings"
	"testing"

	"github.com/overseer-dev/overseer/internal/action"
)

// FuzzCheck runs arbitrary paths through the guard on the real fixture
// tree: it must not panic, every resolved path must be absolute and clean,
// and a path it could not resolve must never go without a finding.
func FuzzCheck(f *testing.F) {
	for _, c := range loadCorpus(f) {
		f.Add(c.path, c.cwd != "-")
	}
	f.Add("../../../../../../etc/passwd", true)
	f.Add("~", true)
	f.Add("~user/x", true)
	f.Add("a/../../b/./../loop1/x", true)
	fx := newFixture(f)
	g := New(fx.config(nil))
	f.Fuzz(func(t *testing.T, p string, withCwd bool) {
		cwd := ""
		if withCwd {
			cwd = fx.proj
		}
		a := fileAction(action.KindFileRead, "fuzz", "Read", cwd, fx.expand(p))
		action.DeriveFileFacts(a)
		naive := len(a.Facts.Paths)
		fs, err := g.Check(context.Background(), a)
		if err != nil {
			t.Fatalf("Check(%q): %v", p, err)
		}
		if naive > 0 && len(fs) == 0 {
			for _, pf := range a.Facts.Paths {
				if !filepath.IsAbs(pf.Path) || filepath.Clean(pf.Path) != pf.Path {
					t.Fatalf("Check(%q) left %q unresolved without a finding", p, pf.Path)
				}
				publicKey := filepath.Dir(pf.Path) == filepath.Join(fx.home, ".ssh") && strings.HasSuffix(pf.Path, ".pub")
				if !pf.InCwd && !action.Within(fx.out, pf.Path) && !publicKey {
					t.Fatalf("Check(%q): %q is outside the readable paths but reading it raised nothing", p, pf.Path)
				}
			}
		}
	})
}

// FuzzParseSecrets: any text either parses into patterns that compile and
// match without panicking, or is refused.
func FuzzParseSecrets(f *testing.F) {
	f.Add(builtinSecrets)
	for _, p := range BuiltinSecrets() {
		f.Add(p)
	}
	f.Add("!x\n[a-\n~/b/*/c")
	f.Fuzz(func(t *testing.T, text string) {
		pats, err := ParseSecrets(text)
		if err != nil {
			return
		}
		m, err := compileSecrets("/home/u", pats)
		if err != nil {
			t.Fatalf("validated patterns %q do not compile: %v", pats, err)
		}
		for _, p := range []string{"/home/u/.ssh/id_rsa", "/", "/a/b/c", "/home/u/" + strings.ToLower(text)} {
			m.match(p)
		}
	})
}
