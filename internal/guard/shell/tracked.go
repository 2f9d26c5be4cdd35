package shell

import (
	"fmt"
	"io/fs"
	"path"
	"strings"

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

// agentConfigNames are the entries of a project directory where the
// agents keep their project settings: hook configurations, MCP server
// lists, extensions. The paths guard judges which files below them are
// protected (controls.txt); this only finds the ones git would remove.
var agentConfigNames = []string{".claude", ".codex", ".gemini", ".cursor", ".mcp.json"}

// maxUntrackedConfigs bounds the files looked at below one scope.
const maxUntrackedConfigs = 64

// gitRemovesUntracked records, as deletions, the agents' project settings
// that git stash -u|-a and git clean remove because git does not track
// them: a hook configuration `overseer init` just wrote is untracked until
// a person commits it, and git stash --include-untracked took it out of
// the work tree at notify (the next session ran without Overseer). Each
// scope is a directory the command cleans (the working tree's root for
// stash). keepLocal leaves settings.local.json, which Claude Code has git
// ignore, to a clean without -x. A file whose tracking cannot be told is
// recorded too.
func (a *analyzer) gitRemovesUntracked(scopes []string, keepLocal bool) {
	fsys := a.fileSystem()
	for _, d := range scopes {
		n := 0
		for _, name := range agentConfigNames {
			root := path.Join(d, name)
			_ = fs.WalkDir(fsys, strings.TrimPrefix(root, "/"), func(p string, e fs.DirEntry, err error) error {
				if err != nil {
					return nil
				}
				if e.IsDir() {
					return nil
				}
				if n++; n > maxUntrackedConfigs {
					return fs.SkipAll
				}
				abs := "/" + p
				if keepLocal && path.Base(abs) == "settings.local.json" {
					return nil
				}
				if r := tracked.Find(fsys, abs, 1); r.Repo != "" && r.Complete && r.Total > 0 {
					return nil // tracked: git keeps or restores it
				}
				a.effectFact(abs, action.PathDelete)
				return nil
			})
		}
	}
}

// gitUntrackedEffects finds what git stash and git clean remove of the
// agents' project settings (gitRemovesUntracked). args follow the
// subcommand.
func (a *analyzer) gitUntrackedEffects(sub string, args []arg) {
	if !a.cwdKnown {
		return
	}
	switch sub {
	case "stash":
		ops := operandsOf(args)
		if len(ops) > 0 && ops[0].val != "push" && ops[0].val != "save" {
			return // list, show, pop, apply, drop …
		}
		if !hasFlag(args, "-u") && !hasFlag(args, "--include-untracked") && !hasFlag(args, "-a") && !hasFlag(args, "--all") {
			return
		}
		if r := tracked.Find(a.fileSystem(), a.cwd, 1); r.Repo != "" {
			a.gitRemovesUntracked([]string{r.Repo}, false)
		}
	case "clean":
		if hasFlag(args, "-n") || hasFlag(args, "--dry-run") {
			return
		}
		x := hasFlag(args, "-x") || hasFlag(args, "-X")
		var scopes []string
		for _, o := range operandsOf(args) {
			if o.dyn {
				continue
			}
			if p, ok := a.abs(o.val); ok {
				scopes = append(scopes, a.expandHome(p))
			}
		}
		if len(scopes) == 0 {
			scopes = []string{a.cwd}
		}
		a.gitRemovesUntracked(scopes, !x)
	}
}
