package paths

import (
	"context"
	"testing"

	"github.com/overseer-dev/overseer/internal/action"
)

// createdBy is a CreatedTracker that knows one session's created paths.
type createdBy struct {
	session string
	dirs    []string
}

func (c createdBy) CreatedBy(_ context.Context, a *action.Action, ps []string) ([]bool, error) {
	out := make([]bool, len(ps))
	if a.Session != c.session {
		return out, nil
	}
	for i, p := range ps {
		for _, d := range c.dirs {
			out[i] = out[i] || action.Within(d, p)
		}
	}
	return out, nil
}

// What the session itself created outside the working directory (its
// scratch) may be read and written; secrets stay secrets.
func TestCreatedBySession(t *testing.T) {
	fx := newFixture(t)
	tr, _ := newTracker(t)
	cfg := fx.config(tr)
	cfg.Created = createdBy{session: "s1", dirs: []string{fx.other}}
	g := New(cfg)
	tests := []struct {
		kind    action.Kind
		session string
		path    string
		want    string
	}{
		{action.KindFileRead, "s1", fx.other + "/notes.txt", "none"},
		{action.KindFileRead, "s2", fx.other + "/notes.txt", "hard:confirm"},
		{action.KindFileWrite, "s1", fx.other + "/new.txt", "soft:notify"},
		{action.KindFileWrite, "s2", fx.other + "/new.txt", "soft:confirm"},
		{action.KindFileRead, "s1", fx.home + "/notes.txt", "hard:confirm"},
	}
	for _, tc := range tests {
		a := fileAction(tc.kind, "claude-code", "Read", fx.proj, tc.path)
		a.Session = tc.session
		fs, err := g.Check(context.Background(), a)
		if err != nil {
			t.Fatal(err)
		}
		if got, check := strictest(fs); got != tc.want {
			t.Errorf("%s %s by %s: %s (%s), want %s", tc.kind, tc.path, tc.session, got, check, tc.want)
		}
	}
}
