package firewall

import (
	"strings"
	"testing"

	"github.com/overseer-dev/overseer/internal/action"
)

// TestPreviewSaysWhatIsUnresolved: a person asked about a command that
// could not be resolved statically is told what and why.
func TestPreviewSaysWhatIsUnresolved(t *testing.T) {
	v := withUnresolved(nil, []action.Reason{
		{Source: action.SourceGuard, Name: "shell.rm-dynamic", Level: action.Approve, Message: "rm removes $X, computed at run time"},
		{Source: action.SourceRule, Name: "shell.rm-dynamic", Level: action.Approve, Message: "a rule, not a guard"},
	}, &action.Action{Tool: "Bash", Kind: action.KindShell})
	if v == nil || !strings.Contains(v.Summary, "Not known before it runs: rm removes $X, computed at run time") || strings.Contains(v.Summary, "a rule") {
		t.Fatalf("preview %+v", v)
	}
	p := &action.Preview{Summary: "removes 3 files"}
	if got := withUnresolved(p, nil, &action.Action{}); got != p {
		t.Errorf("a preview with nothing unresolved changed: %+v", got)
	}
	q := withUnresolved(p, []action.Reason{{Source: action.SourceGuard, Name: "paths.unresolved", Message: "cannot tell where x leads"}}, &action.Action{})
	if q == p || p.Summary != "removes 3 files" || !strings.HasPrefix(q.Summary, "removes 3 files\nNot known") {
		t.Errorf("the guard's preview was changed in place or not extended: %+v %+v", p, q)
	}
}
