package shell

import (
	"fmt"
	"path"

	"github.com/overseer-dev/overseer/internal/action"
	"github.com/overseer-dev/overseer/internal/guard"
	"github.com/overseer-dev/overseer/internal/guard/tracked"
)

// trackedDelete puts to a person a deletion of files git tracks — or,
// outside any repository, of source files (not in a scratch directory) —
// with the preview listing them. Untracked build outputs and ignored files
// are left to the other checks. The index is read without running git,
// within bounds (package tracked); what cannot be told in time is asked.
func (a *analyzer) trackedDelete(name, show, abs string, known bool) {
	if !known || !path.IsAbs(abs) {
		return
	}
	r := tracked.Find(a.fileSystem(), abs, a.r.previewLimit)
	if r.Repo == "" && a.scratch(abs) {
		return
	}
	if !r.Any() {
		return
	}
	pv := &action.Preview{Items: r.Files, More: r.Total - len(r.Files)}
	check, what := "shell.rm-tracked", fmt.Sprintf("%d file(s) tracked by git in %s", r.Total, r.Repo)
	if r.Repo == "" {
		check, what = "shell.rm-source-files", fmt.Sprintf("%d source file(s), outside any git repository", r.Total)
	}
	if !r.Complete {
		what = "files that could not all be listed (" + boundText(r.Err) + ")"
		if r.Total > 0 {
			what = fmt.Sprintf("at least %d file(s) people keep (the rest could not be listed: %s)", r.Total, boundText(r.Err))
		}
	}
	pv.Summary = fmt.Sprintf("%s %s would remove %s", name, show, what)
	a.add(guard.Finding{Check: check, Level: action.Confirm, Hard: true,
		Message: fmt.Sprintf("%s %s removes %s", name, show, what), Preview: pv})
}

func boundText(err error) string {
	if err == nil {
		return "the listing stopped at its bound"
	}
	return err.Error()
}
