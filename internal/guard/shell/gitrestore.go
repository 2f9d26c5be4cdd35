package shell

import (
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"path"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/overseer-dev/overseer/internal/action"
	"github.com/overseer-dev/overseer/internal/guard"
	"github.com/overseer-dev/overseer/internal/guard/gitread"
	"github.com/overseer-dev/overseer/internal/guard/paths"
	"github.com/overseer-dev/overseer/internal/guard/tracked"
)

// A git command that puts content from the repository into the work tree
// — a stash pushed or popped, a checkout of paths or of another branch, a
// restore, a hard reset, a merge, a rebase, a cherry-pick, a revert, a
// pull — writes the files it changes as surely as a redirection does: a
// tracked hook configuration `overseer init` changed but nobody committed
// goes back to its committed content at `git stash`, and a commit the
// agent made with git's plumbing (hash-object, mktree, commit-tree: no
// file written) holds a settings.json without Overseer's hook that `git
// checkout C -- .claude` puts in place. The files that decide what runs
// later (gitFollowed) are read, from the repository's files and never by
// running git (package gitread: git would read the repository's own
// configuration, which may name programs to run), as they are now and as
// the command leaves them; a change is judged as a write of that content:
// a hook configuration or another control file is a write the paths
// guard blocks, a skill, a task file or a package's scripts are judged by
// the text they will hold (planted.go). A file the command changes to
// content that cannot be known when judged (a three-way merge, a bound
// reached) reaches a person. Files the command leaves as they are say
// nothing: an ordinary `git stash`, `git pull` or `git checkout main`
// stays quiet.

// gitHookConfigs are the agents' hook configurations and server lists, by
// their path in a repository (any directory).
var gitHookConfigs = []string{".claude/settings.json", ".claude/settings.local.json", ".codex/config.toml",
	".codex/hooks.json", ".gemini/settings.json", ".mcp.json", ".cursor/mcp.json"}

// gitControlDirs are directories whose every file decides what runs later.
var gitControlDirs = []string{".githooks/", ".husky/", ".gemini/extensions/", ".claude/agents/"}

// gitWalkDirs are the directories of a commit's tree walked for files
// gitFollowed accepts that the index does not list.
var gitWalkDirs = map[string]bool{".claude": true, ".codex": true, ".gemini": true, ".cursor": true, ".githooks": true,
	".husky": true, ".vscode": true, ".devcontainer": true}

// gitUnborn stands for HEAD in a repository with no commit yet.
const gitUnborn = "\x00unborn"

// maxGitWalk bounds the tree entries walked for one commit.
const maxGitWalk = 512

// gitFollowed reports whether the file rel of the repository at root is
// one whose change a git command is judged for, and whether it is a hook
// configuration or control file (a write of it is blocked).
func gitFollowed(root, rel string) (followed, control bool) {
	lr := strings.ToLower(rel)
	for _, h := range gitHookConfigs {
		if lr == h || strings.HasSuffix(lr, "/"+h) {
			return true, true
		}
	}
	for _, d := range gitControlDirs {
		if strings.HasPrefix(lr, d) || strings.Contains(lr, "/"+d) {
			return true, true
		}
	}
	if kind, dir := plantedKind(path.Join(root, rel)); kind != "" && !dir {
		return true, false
	}
	return false, false
}

// gitMode says how a git command puts a file's new content in place.
type gitMode int

const (
	// gitOverwrite: the file becomes the source's (removed when the
	// source has none and git tracks it).
	gitOverwrite gitMode = iota
	// gitSwitch: the file becomes the source's where HEAD's and the
	// source's differ (a branch checked out).
	gitSwitch
	// gitPick: the change between base and source is made to the file (a
	// stash applied, a commit cherry-picked, a merge).
	gitPick
)

// gitPlan is what a git command puts in the work tree.
type gitPlan struct {
	mode      gitMode
	source    string   // a revision, or "" for the index
	base      string   // gitPick: the revision the change starts from; "" for the merge base with HEAD
	untracked string   // a stash's revision, whose third parent holds untracked files
	paths     []string // pathspecs (absolute), nil for the whole tree
	force     bool     // gitSwitch: local changes are discarded
	unknown   string   // why the source cannot be read
}

// gitRestores judges the files git's subcommand sub (args after it), run
// in dir (absolute), changes among those gitFollowed accepts.
func (a *analyzer) gitRestores(s *segCtx, sub string, args []arg, dir, gitDirOpt, workTreeOpt string) {
	if a.limited || !path.IsAbs(dir) {
		return
	}
	fsys := a.fileSystem()
	at := func(p string) (string, bool) {
		if !path.IsAbs(p) && !strings.HasPrefix(p, "~") {
			p = path.Join(dir, p)
		}
		q, ok := a.fileAbs(p)
		return q, ok && path.IsAbs(q)
	}
	root, gitdir, ok := tracked.RepoOf(fsys, dir)
	if gitDirOpt != "" {
		// git --git-dir=D: D's objects and index, the work tree given
		// by --work-tree or the directory git runs in.
		if gitdir, ok = at(gitDirOpt); !ok {
			return
		}
		root = dir
	}
	if workTreeOpt != "" {
		if root, ok = at(workTreeOpt); !ok {
			return
		}
	}
	if gitdir == "" || root == "" {
		return
	}
	cur := a.cur
	a.cur = s.idx
	defer func() { a.cur = cur }()
	if a.gitMoved != "" {
		// git branch -f x nohook && git switch x: x is not on disk yet.
		a.gitUnknown(fsys, root, gitdir, sub, a.gitMoved+" earlier in this command moves a branch, a tag, HEAD or the index it reads")
		return
	}
	if a.readSpent >= maxReadSpent {
		a.gitUnknown(fsys, root, gitdir, sub, "this command's archives and repositories took the time they may be read for")
		return
	}
	start := time.Now()
	defer func() { a.readSpent += time.Since(start) }()
	repo, err := gitread.Open(a.env.FS, gitdir)
	if err != nil {
		a.gitUnknown(fsys, root, gitdir, sub, err.Error())
		return
	}
	defer repo.Close()
	if !gitPlanned[sub] {
		// An alias of the person's (co = checkout): what it expands to.
		exp := a.gitAlias(repo, sub)
		if exp == "" {
			return
		}
		if strings.HasPrefix(exp, "!") || strings.ContainsAny(exp, "\"'$`\\") {
			return // a shell alias: judged as the command it runs (git -c alias…), or words not read here
		}
		words := strings.Fields(exp)
		if len(words) == 0 || !gitPlanned[words[0]] {
			return
		}
		sub = words[0]
		pre := make([]arg, 0, len(words)-1+len(args))
		for _, w := range words[1:] {
			pre = append(pre, arg{val: w})
		}
		args = append(pre, args...)
	}
	switch sub {
	case "apply", "am":
		a.gitPatches(fsys, root, gitdir, sub, args, dir)
		return
	case "sparse-checkout":
		if len(args) > 0 && !args[0].dyn && (args[0].val == "list" || args[0].val == "disable" || args[0].val == "check-rules") {
			return
		}
		a.gitUnknown(fsys, root, gitdir, sub, "the files a sparse checkout leaves out are removed from the work tree")
		return
	}
	plans := a.gitPlans(repo, sub, args, dir)
	for _, p := range plans {
		if p.unknown != "" {
			a.gitUnknown(fsys, root, gitdir, sub, p.unknown)
			continue
		}
		if err := a.gitApplyPlan(repo, fsys, root, gitdir, sub, p); err != nil {
			a.gitUnknown(fsys, root, gitdir, sub, err.Error())
		}
	}
}

// gitPlanned are the subcommands gitPlans reads.
var gitPlanned = map[string]bool{"checkout": true, "switch": true, "restore": true, "reset": true, "stash": true,
	"merge": true, "pull": true, "rebase": true, "cherry-pick": true, "revert": true, "checkout-index": true, "read-tree": true,
	"apply": true, "am": true, "sparse-checkout": true}

// gitAlias returns the alias name's expansion in the repository's, the
// person's or the system's git configuration (the first found), or "".
func (a *analyzer) gitAlias(repo *gitread.Repo, name string) string {
	files := []string{path.Join(repo.Common, "config")}
	if a.env.Home != "" {
		files = append(files, path.Join(a.env.Home, ".gitconfig"), path.Join(a.env.Home, ".config", "git", "config"))
	}
	files = append(files, "/etc/gitconfig")
	for _, f := range files {
		b, err := gitread.ReadFile(a.env.FS, f, 1<<20)
		if err != nil {
			continue
		}
		if v := tracked.ConfigValue(string(b), "alias", strings.ToLower(name)); v != "" {
			return v
		}
	}
	return ""
}

// gitUnknown puts to a person a git command whose effect on the files
// gitFollowed accepts cannot be told: it may change those the repository
// has (in the index or on disk at a hook configuration's place), or add
// one where it has none.
func (a *analyzer) gitUnknown(fsys fs.FS, root, gitdir, sub, why string) {
	var names []string
	_, all, err := tracked.IndexBlobs(fsys, gitdir, func(string) bool { return false })
	for _, rel := range all {
		if ok, _ := gitFollowed(root, rel); ok {
			names = append(names, rel)
		}
	}
	if err != nil {
		names = append(names, "(the index could not be read)")
	}
	for _, h := range gitHookConfigs {
		if _, err := fs.Stat(fsys, fsName(path.Join(root, h))); err == nil && !slices.Contains(names, h) {
			names = append(names, h)
		}
	}
	if len(names) == 0 {
		// None there now: what cannot be read may add one (a
		// settings.local.json that turns the hooks installed for the
		// user off).
		a.add(guard.Finding{Check: "shell.git-restores-unknown", Level: action.Confirm, Hard: true,
			Message: fmt.Sprintf("git %s may add files that decide what runs later (a hook configuration, a skill) with content that cannot be read when judged (%s)", sub, why)})
		return
	}
	if len(names) > 4 {
		names = append(names[:4], "…")
	}
	a.add(guard.Finding{Check: "shell.git-restores-unknown", Level: action.Confirm, Hard: true,
		Message: fmt.Sprintf("git %s may change %s, files that decide what runs later, to content that cannot be read when judged (%s)",
			sub, strings.Join(names, ", "), why)})
}

// gitPlans reads what git's subcommand sub puts in the work tree.
func (a *analyzer) gitPlans(repo *gitread.Repo, sub string, args []arg, dir string) []gitPlan {
	var ops, after []arg
	dashdash := false
	valued := gitValued[sub]
	args = gitUnbundle(args, valued)
	var vals = map[string]string{}
	for k := 0; k < len(args); k++ {
		x := args[k]
		if x.dyn {
			return []gitPlan{{unknown: "an argument computed at run time"}}
		}
		v := x.val
		switch {
		case dashdash:
			after = append(after, x)
		case v == "--":
			dashdash = true
		case v == "-":
			ops = append(ops, x)
		case strings.HasPrefix(v, "--") && strings.Contains(v, "="):
			n, val, _ := strings.Cut(v, "=")
			vals[n] = val
		case valued[v] && k+1 < len(args):
			k++
			if args[k].dyn {
				return []gitPlan{{unknown: "an argument computed at run time"}}
			}
			vals[v] = args[k].val
		case strings.HasPrefix(v, "-"):
			vals[v] = ""
		default:
			ops = append(ops, x)
		}
	}
	// @{u}, @{upstream}, BRANCH@{u}: the remote-tracking branch.
	for i := range ops {
		ops[i].val = a.gitUpstreamRev(repo, ops[i].val)
	}
	for k, v := range vals {
		vals[k] = a.gitUpstreamRev(repo, v)
	}
	has := func(names ...string) bool {
		for _, n := range names {
			if _, ok := vals[n]; ok {
				return true
			}
		}
		return anyFlag(args, names...)
	}
	val := func(names ...string) (string, bool) {
		for _, n := range names {
			if v, ok := vals[n]; ok {
				return v, true
			}
		}
		return "", false
	}
	pathsOf := func(xs []arg) []string {
		if _, ok := val("--pathspec-from-file"); ok {
			return nil
		}
		var out []string
		for _, x := range xs {
			v := x.val
			if strings.HasPrefix(v, ":") || strings.ContainsAny(v, "*?[") {
				return nil // magic or a glob: every file may match
			}
			if strings.HasPrefix(v, "~") || !path.IsAbs(v) {
				v = path.Join(dir, v)
			}
			out = append(out, path.Clean(v))
		}
		return out
	}
	resolves := func(rev string) bool { _, err := repo.Resolve(rev); return err == nil }
	// dwim finds the remote branch a local name checks out (git checkout
	// topic makes topic from origin/topic).
	dwim := func(name string) (string, bool) {
		if strings.HasPrefix(name, "-") || strings.ContainsAny(name, ":^~@{") {
			return "", false
		}
		rs := repo.RemoteBranches(name)
		switch {
		case len(rs) == 1:
			return rs[0], true
		case slices.Contains(rs, "refs/remotes/origin/"+name):
			return "refs/remotes/origin/" + name, true // checkout.defaultRemote's usual value
		case len(rs) > 1:
			return "\x00ambiguous", true
		}
		return "", false
	}
	oddRev := func(rev string) bool {
		return rev == "-" || strings.ContainsAny(rev, "@{}:") || strings.Contains(rev, "..")
	}
	switchTo := func(rev string) []gitPlan {
		if rev == "-" {
			rev = "@{-1}"
		}
		// A branch before a tag of the same name: checkout's order.
		if !strings.HasPrefix(rev, "refs/") && resolves("refs/heads/"+rev) {
			rev = "refs/heads/" + rev
		}
		if resolves(rev) {
			return []gitPlan{{mode: gitSwitch, source: rev, force: has("-f", "--force", "--discard-changes")}}
		}
		if r, ok := dwim(rev); ok {
			if r == "\x00ambiguous" {
				return nil // git refuses a name several remotes have
			}
			return []gitPlan{{mode: gitSwitch, source: r}}
		}
		if oddRev(rev) {
			return []gitPlan{{unknown: "the revision " + rev + " is not read"}}
		}
		return nil // git fails: nothing changes
	}
	switch sub {
	case "checkout":
		if has("-p", "--patch") {
			return []gitPlan{{mode: gitOverwrite, paths: pathsOf(append(ops, after...))}}
		}
		if dashdash {
			if len(ops) == 0 {
				return []gitPlan{{mode: gitOverwrite, paths: pathsOf(after)}}
			}
			return []gitPlan{a.revPaths(repo, ops[0].val, pathsOf(after), has("--no-overlay"))}
		}
		if len(ops) == 0 {
			return nil // checkout -b NAME: a branch made at HEAD
		}
		if len(ops) > 1 && resolves(ops[0].val) {
			return []gitPlan{a.revPaths(repo, ops[0].val, pathsOf(ops[1:]), has("--no-overlay"))}
		}
		if len(ops) == 1 {
			if p := switchTo(ops[0].val); p != nil {
				return p
			}
		}
		// Paths, from the index.
		return []gitPlan{{mode: gitOverwrite, paths: pathsOf(ops)}}
	case "switch":
		if len(ops) == 0 {
			return nil
		}
		return switchTo(ops[0].val)
	case "restore":
		staged, worktree := has("-S", "--staged"), has("-W", "--worktree")
		if staged && !worktree {
			return nil
		}
		src, ok := val("-s", "--source")
		if !ok && staged {
			src = "HEAD"
		}
		ps := pathsOf(append(ops, after...))
		if src == "" {
			return []gitPlan{{mode: gitOverwrite, paths: ps}}
		}
		return []gitPlan{a.revPaths(repo, src, ps, !has("--overlay"))}
	case "reset":
		if !has("--hard", "--merge", "--keep") {
			return nil
		}
		rev := "HEAD"
		if len(ops) > 0 {
			rev = ops[0].val
		}
		return []gitPlan{a.revPaths(repo, rev, nil, true)}
	case "stash":
		verb := "push"
		rest := ops
		if len(ops) > 0 {
			verb, rest = ops[0].val, ops[1:]
		}
		switch verb {
		case "push", "save":
			ps := pathsOf(after)
			if verb == "push" && len(rest) > 0 {
				ps = pathsOf(append(rest, after...))
			}
			if has("-k", "--keep-index") {
				return []gitPlan{{mode: gitOverwrite, paths: ps}}
			}
			return []gitPlan{{mode: gitOverwrite, source: "HEAD", paths: ps}}
		case "pop", "apply", "branch":
			if verb == "branch" && len(rest) > 0 {
				rest = rest[1:]
			}
			rev := "stash@{0}"
			if len(rest) > 0 {
				rev = rest[0].val
				if isDigits(rev) {
					rev = "stash@{" + rev + "}"
				}
			}
			if !resolves(rev) {
				if oddRev(rev) && !strings.HasPrefix(rev, "stash@{") {
					return []gitPlan{{unknown: "the stash " + rev + " is not read"}}
				}
				if _, err := repo.Resolve(rev); errors.Is(err, gitread.ErrNotFound) {
					return nil // no such stash: git fails
				}
				return []gitPlan{{unknown: "the stash " + rev + " is not read"}}
			}
			return []gitPlan{{mode: gitPick, source: rev, base: rev + "^1", untracked: rev}}
		}
		return nil
	case "merge", "pull", "rebase":
		if has("--abort", "--quit", "--continue", "--skip", "--edit-todo", "--show-current-patch") {
			return nil
		}
		if st, _ := val("-s", "--strategy"); st == "ours" {
			return nil // the tree stays HEAD's
		}
		var revs []string
		switch sub {
		case "merge":
			for _, o := range ops {
				revs = append(revs, o.val)
			}
		case "rebase":
			if v, ok := val("--onto"); ok {
				revs = []string{v}
			} else if len(ops) > 0 {
				revs = []string{ops[0].val}
			}
		case "pull":
			// What the fetch brings is not known when judged: the branch
			// as last fetched stands for it.
			remote, branch := "", ""
			if len(ops) > 0 {
				remote = ops[0].val
			}
			if len(ops) > 1 {
				branch, _, _ = strings.Cut(strings.TrimPrefix(ops[1].val, "+"), ":")
			}
			if r := a.gitUpstream(repo, remote, branch); r != "" {
				revs = []string{r}
			} else {
				return nil
			}
		}
		if len(revs) == 0 {
			r := a.gitUpstream(repo, "", "")
			if r == "" {
				return nil // no upstream: git fails
			}
			revs = []string{r}
		}
		var out []gitPlan
		for _, r := range revs {
			if !resolves(r) {
				if oddRev(r) {
					out = append(out, gitPlan{unknown: "the revision " + r + " is not read"})
				}
				continue
			}
			out = append(out, gitPlan{mode: gitPick, source: r})
		}
		return out
	case "checkout-index":
		// Files from the index (one changed with git update-index
		// --cacheinfo, no file written).
		if has("-n", "--no-create") {
			return nil
		}
		if has("-a", "--all") {
			return []gitPlan{{mode: gitOverwrite}}
		}
		return []gitPlan{{mode: gitOverwrite, paths: pathsOf(append(ops, after...))}}
	case "read-tree":
		if !has("-u") || len(ops) == 0 {
			return nil
		}
		return []gitPlan{a.revPaths(repo, ops[len(ops)-1].val, nil, true)}
	case "cherry-pick", "revert":
		if has("--abort", "--quit", "--continue", "--skip") {
			return nil
		}
		parent := "1"
		if v, ok := val("-m", "--mainline"); ok && isDigits(v) {
			parent = v
		}
		var out []gitPlan
		for _, o := range ops {
			from, to := o.val+"^"+parent, o.val
			if x, y, ok := strings.Cut(o.val, ".."); ok && !strings.Contains(y, ".") {
				from, to = x, y
				if from == "" {
					from = "HEAD"
				}
				if to == "" {
					to = "HEAD"
				}
			} else if oddRev(o.val) {
				out = append(out, gitPlan{unknown: "the revision " + o.val + " is not read"})
				continue
			}
			if sub == "revert" {
				from, to = to, from
			}
			if !resolves(from) || !resolves(to) {
				if strings.HasPrefix(o.val, "-") {
					continue
				}
				out = append(out, gitPlan{unknown: "the revision " + o.val + " is not read"})
				continue
			}
			out = append(out, gitPlan{mode: gitPick, source: to, base: from})
		}
		return out
	}
	return nil
}

// gitValued are the options of git's subcommands that take a value in the
// next word.
var gitValued = map[string]map[string]bool{
	"checkout":    {"-b": true, "-B": true, "--orphan": true, "--conflict": true},
	"switch":      {"-c": true, "-C": true, "--create": true, "--force-create": true, "--orphan": true, "--conflict": true},
	"restore":     {"-s": true, "--source": true, "--conflict": true},
	"stash":       {"-m": true, "--message": true},
	"merge":       {"-m": true, "-s": true, "--strategy": true, "-X": true, "--strategy-option": true, "-F": true, "--file": true, "--into-name": true},
	"pull":        {"-s": true, "--strategy": true, "-X": true, "--strategy-option": true, "--depth": true, "--deepen": true, "--shallow-since": true, "--shallow-exclude": true, "-j": true, "--jobs": true, "-o": true, "--server-option": true, "--upload-pack": true},
	"rebase":      {"--onto": true, "-s": true, "--strategy": true, "-X": true, "--strategy-option": true, "-x": true, "--exec": true},
	"cherry-pick": {"-m": true, "--mainline": true, "-s": false, "-X": true, "--strategy-option": true, "--strategy": true},
	"revert":      {"-m": true, "--mainline": true, "-X": true, "--strategy-option": true, "--strategy": true},
}

// gitPatches judges git apply and git am: the files their patches name
// (as diff --git, ---, +++, rename to and copy to lines give them, under
// every number of leading components stripped and --directory's prefix)
// among those gitFollowed accepts reach a person, as their new content is
// not read here; a patch read from the standard input, written or changed
// earlier in the same command, or unreadable is not known, and reaches a
// person when the repository has followed files (gitUnknown).
func (a *analyzer) gitPatches(fsys fs.FS, root, gitdir, sub string, args []arg, dir string) {
	var files []string
	prefix := ""
	dashdash := false
	for k := 0; k < len(args); k++ {
		x := args[k]
		if x.dyn {
			a.gitUnknown(fsys, root, gitdir, sub, "an argument computed at run time")
			return
		}
		v := x.val
		switch {
		case dashdash || !strings.HasPrefix(v, "-") || v == "-":
			files = append(files, v)
		case v == "--":
			dashdash = true
		case strings.HasPrefix(v, "--directory="):
			prefix = strings.TrimPrefix(v, "--directory=")
		case v == "--directory" && k+1 < len(args):
			k++
			prefix = args[k].val
		case (v == "--exclude" || v == "--include" || v == "--whitespace" || v == "--build-fake-ancestor" ||
			v == "-C" || v == "-p" || v == "-S" || v == "--patch-format" || v == "--resolvemsg" || v == "--quoted-cr") && k+1 < len(args):
			k++
		case sub == "am" && (v == "--continue" || v == "--skip" || v == "--abort" || v == "--quit" || v == "--show-current-patch" || v == "-r" || v == "--resolved"):
			if v == "--continue" || v == "-r" || v == "--resolved" {
				a.gitUnknown(fsys, root, gitdir, sub, "the patch being applied is not read")
			}
			return
		}
	}
	if len(files) == 0 || slices.Contains(files, "-") {
		a.gitUnknown(fsys, root, gitdir, sub, "a patch read from the standard input")
		return
	}
	var hit []string
	for _, f := range files {
		if !path.IsAbs(f) && !strings.HasPrefix(f, "~") {
			f = path.Join(dir, f)
		}
		abs, ok := a.fileAbs(f)
		if !ok {
			a.gitUnknown(fsys, root, gitdir, sub, "a patch whose name is not known")
			return
		}
		var text string
		if w, ok := a.written[abs]; ok {
			t, known := a.writtenContent(w)
			if !known {
				a.gitUnknown(fsys, root, gitdir, sub, "a patch this command writes")
				return
			}
			text = t
		} else if by := a.unseenBefore(abs, a.cur); by != "" {
			a.gitUnknown(fsys, root, gitdir, sub, "a patch "+by+" writes")
			return
		} else {
			b, err := readRegularIn(a.env.FS, fsName(abs), 16<<20)
			if err != nil {
				if errors.Is(err, fs.ErrNotExist) {
					continue // git fails
				}
				a.gitUnknown(fsys, root, gitdir, sub, "a patch that could not be read")
				return
			}
			text = string(b)
		}
		for _, rel := range patchPaths(text) {
			for cand := rel; cand != ""; {
				full := path.Clean(path.Join(prefix, cand))
				if ok, _ := gitFollowed(root, full); ok && !slices.Contains(hit, full) {
					hit = append(hit, full)
				}
				_, rest, found := strings.Cut(cand, "/")
				if !found {
					break
				}
				cand = rest
			}
		}
	}
	if len(hit) == 0 {
		return
	}
	if len(hit) > 4 {
		hit = append(hit[:4], "…")
	}
	a.add(guard.Finding{Check: "shell.git-restores-unknown", Level: action.Confirm, Hard: true,
		Message: fmt.Sprintf("git %s patches %s, files that decide what runs later", sub, strings.Join(hit, ", "))})
}

// patchPaths returns the paths a patch's headers name (with their a/ b/
// prefixes; quoted names unquoted only of their quotes).
func patchPaths(text string) []string {
	var out []string
	for _, l := range strings.Split(text, "\n") {
		l = strings.TrimRight(l, "\r")
		var rest []string
		switch {
		case strings.HasPrefix(l, "diff --git "):
			rest = strings.Fields(l[len("diff --git "):])
		case strings.HasPrefix(l, "+++ "), strings.HasPrefix(l, "--- "):
			p, _, _ := strings.Cut(l[4:], "\t")
			rest = []string{p}
		case strings.HasPrefix(l, "rename to "), strings.HasPrefix(l, "copy to "),
			strings.HasPrefix(l, "rename from "), strings.HasPrefix(l, "copy from "):
			_, p, _ := strings.Cut(l, " to ")
			if p == "" {
				_, p, _ = strings.Cut(l, " from ")
			}
			rest = []string{"x/" + p}
		default:
			continue
		}
		for _, p := range rest {
			p = strings.TrimSpace(p)
			if u, err := strconv.Unquote(p); err == nil && strings.HasPrefix(p, "\"") {
				p = u // git's C-style quoting: "a/.cl\141ude/…"
			}
			p = strings.Trim(p, "\"")
			if p != "" && p != "/dev/null" {
				out = append(out, p)
			}
		}
	}
	return out
}

// gitMovesRefs reports whether git's subcommand sub (args after it) moves
// or makes a branch or a tag at another commit, moves HEAD without the
// work tree (reset --soft, --mixed to a revision), or changes the index
// (read-tree without -u, update-index): what a later git command of the
// same command puts in the work tree is not what the repository on disk
// says. A branch or a tag made at HEAD, a listing and a deletion are not.
func gitMovesRefs(sub string, args []arg) bool {
	var ops []string
	flags := map[string]bool{}
	for _, x := range args {
		if x.dyn {
			return true
		}
		if strings.HasPrefix(x.val, "-") && x.val != "-" {
			for _, f := range gitUnbundle([]arg{x}, nil) {
				flags[f.val] = true
			}
			flags[x.val] = true
			continue
		}
		ops = append(ops, x.val)
	}
	has := func(fs ...string) bool {
		for _, f := range fs {
			if flags[f] {
				return true
			}
		}
		return false
	}
	switch sub {
	case "branch":
		if has("-d", "-D", "--delete", "-l", "--list", "-a", "-r", "--show-current", "--contains", "--merged", "--no-merged", "--points-at") {
			return false
		}
		return len(ops) > 1 || len(ops) > 0 && has("-f", "--force", "-m", "-M", "-c", "-C", "--move", "--copy", "--set-upstream-to", "-u")
	case "tag":
		if has("-d", "--delete", "-l", "--list", "-v", "--verify", "--contains", "--points-at") {
			return false
		}
		return len(ops) > 1 || len(ops) > 0 && has("-f", "--force")
	case "reset":
		return !has("--hard") && len(ops) > 0 && ops[0] != "HEAD" && ops[0] != "@"
	case "update-ref", "update-index", "replace", "filter-branch":
		return true
	case "symbolic-ref":
		return len(ops) > 1
	case "read-tree":
		return !has("-u")
	}
	return false
}

// gitUnbundle splits groups of one-letter options as git's option parser
// reads them: -qC x is -q -C x, -snohook is -s nohook (a letter that takes
// a value takes the rest of the group, or the next word).
func gitUnbundle(args []arg, valued map[string]bool) []arg {
	var out []arg
	for k, x := range args {
		v := x.val
		if x.dyn || v == "--" {
			return append(out, args[k:]...)
		}
		if len(v) < 3 || v[0] != '-' || v[1] == '-' {
			out = append(out, x)
			continue
		}
		for i := 1; i < len(v); i++ {
			f := "-" + v[i:i+1]
			out = append(out, arg{val: f})
			if valued[f] {
				if i+1 < len(v) {
					out = append(out, arg{val: v[i+1:]})
				}
				break
			}
		}
	}
	return out
}

// revPaths is the plan of a checkout of paths from the revision rev
// (overwrite; files rev lacks are removed when removes).
func (a *analyzer) revPaths(repo *gitread.Repo, rev string, paths []string, removes bool) gitPlan {
	if _, err := repo.Resolve(rev); err != nil {
		if errors.Is(err, gitread.ErrNotFound) && !strings.ContainsAny(rev, "@{}:") {
			return gitPlan{mode: gitOverwrite, source: "HEAD", paths: []string{}} // git fails: nothing
		}
		return gitPlan{unknown: fmt.Sprintf("the revision %s is not read: %v", rev, err)}
	}
	p := gitPlan{mode: gitOverwrite, source: rev, paths: paths}
	if !removes {
		p.base = "\x00keep" // files the revision lacks are kept
	}
	return p
}

// gitUpstreamRev turns REV@{u} and REV@{upstream} (REV a branch, HEAD,
// @ or nothing) into the remote-tracking reference it names; other
// revisions are returned as they are.
func (a *analyzer) gitUpstreamRev(repo *gitread.Repo, rev string) string {
	for _, suf := range []string{"@{u}", "@{upstream}", "@{U}", "@{UPSTREAM}"} {
		b, ok := strings.CutSuffix(rev, suf)
		if !ok {
			continue
		}
		if b == "" || b == "HEAD" || b == "@" {
			if r := a.gitUpstream(repo, "", ""); r != "" {
				return r
			}
			return rev
		}
		cfg, _ := gitread.ReadFile(a.env.FS, path.Join(repo.Common, "config"), 1<<20)
		remote := tracked.ConfigSubValue(string(cfg), "branch", b, "remote")
		merge := strings.TrimPrefix(tracked.ConfigSubValue(string(cfg), "branch", b, "merge"), "refs/heads/")
		switch {
		case remote == "" || merge == "":
			return rev
		case remote == ".":
			return "refs/heads/" + merge
		}
		return "refs/remotes/" + remote + "/" + merge
	}
	return rev
}

// gitUpstream returns the remote-tracking reference git pull (remote,
// branch: "" for the configured ones) merges, or "".
func (a *analyzer) gitUpstream(repo *gitread.Repo, remote, branch string) string {
	cfg, _ := gitread.ReadFile(a.env.FS, path.Join(repo.Common, "config"), 1<<20)
	cur := repo.HeadBranch()
	if branch == "" && cur != "" {
		branch = strings.TrimPrefix(tracked.ConfigSubValue(string(cfg), "branch", cur, "merge"), "refs/heads/")
	}
	if remote == "" && cur != "" {
		remote = tracked.ConfigSubValue(string(cfg), "branch", cur, "remote")
	}
	if branch == "" || remote == "" {
		return ""
	}
	if remote == "." {
		return "refs/heads/" + branch
	}
	return "refs/remotes/" + remote + "/" + branch
}

// gitApplyPlan judges one plan: each followed file whose content it
// changes.
func (a *analyzer) gitApplyPlan(repo *gitread.Repo, fsys fs.FS, root, gitdir, sub string, p gitPlan) error {
	if p.paths != nil && len(p.paths) == 0 {
		return nil
	}
	index, names, err := tracked.IndexBlobs(fsys, gitdir, func(n string) bool { ok, _ := gitFollowed(root, n); return ok })
	if err != nil {
		return err
	}
	head, headErr := repo.Head()
	if errors.Is(headErr, gitread.ErrNotFound) {
		head, headErr = gitUnborn, nil // no commit yet: HEAD's tree is empty
	}
	resolve := func(rev string) (string, error) {
		if rev == "HEAD" || rev == gitUnborn {
			return head, headErr
		}
		return repo.Resolve(rev)
	}
	// The candidates: followed files the index lists, and those of the
	// commits read.
	cands := map[string]bool{}
	for _, n := range names {
		if ok, _ := gitFollowed(root, n); ok {
			cands[n] = true
		}
	}
	revs := []string{}
	if p.source != "" {
		revs = append(revs, p.source)
	}
	if p.untracked != "" {
		if u, err := repo.Resolve(p.untracked + "^3"); err == nil {
			revs = append(revs, u)
		}
	}
	for _, r := range revs {
		h, err := resolve(r)
		if err != nil {
			return err
		}
		if h == gitUnborn {
			continue
		}
		if err := a.gitWalk(repo, root, h, cands); err != nil {
			return err
		}
	}
	inScope := func(rel string) bool {
		if p.paths == nil {
			return true
		}
		abs := path.Join(root, rel)
		for _, s := range p.paths {
			if action.Within(s, abs) {
				return true
			}
		}
		return false
	}
	// blobAt reads rev's file rel: its content and whether it has one.
	blobAt := func(rev, rel string) ([]byte, bool, error) {
		if rev == "" {
			h, ok := index[rel]
			if !ok {
				return nil, false, nil
			}
			b, err := repo.Blob(h)
			return b, err == nil, err
		}
		h, err := resolve(rev)
		if err != nil {
			return nil, false, err
		}
		if h == gitUnborn {
			return nil, false, nil
		}
		e, ok, err := repo.Lookup(h, rel)
		if err != nil || !ok || e.IsTree() {
			return nil, false, err
		}
		if e.Mode == 0o160000 {
			return nil, false, nil
		}
		b, err := repo.Blob(e.Hash)
		return b, err == nil, err
	}
	keys := make([]string, 0, len(cands))
	for k := range cands {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	for _, rel := range keys {
		if !inScope(rel) {
			continue
		}
		abs := path.Join(root, rel)
		disk, onDisk := a.diskContent(abs)
		var text []byte
		var has, known bool
		switch p.mode {
		case gitOverwrite:
			b, ok, err := blobAt(p.source, rel)
			if err != nil {
				return err
			}
			_, inIndex := index[rel]
			switch {
			case ok:
				text, has, known = b, true, true
			case p.base == "\x00keep" || !inIndex:
				continue // kept: the checkout keeps what its source lacks, and git leaves untracked files
			default:
				has, known = false, true
			}
		case gitSwitch:
			if headErr != nil {
				return headErr
			}
			hb, hok, err := blobAt(head, rel)
			if err != nil {
				return err
			}
			b, ok, err := blobAt(p.source, rel)
			if err != nil {
				return err
			}
			if hok == ok && bytes.Equal(hb, b) && !p.force {
				continue // the same in both commits: local changes are kept
			}
			text, has, known = b, ok, true
		case gitPick:
			base := p.base
			if base == "" {
				if headErr != nil {
					return headErr
				}
				s, err := resolve(p.source)
				if err != nil {
					return err
				}
				if head == gitUnborn {
					return errors.New("a merge into a branch with no commit")
				}
				mb, err := repo.MergeBase(head, s)
				if err != nil {
					return err
				}
				base = mb
			}
			bb, bok, err := blobAt(base, rel)
			if err != nil {
				return err
			}
			b, ok, err := blobAt(p.source, rel)
			if err != nil {
				return err
			}
			if p.untracked != "" && !ok {
				// A stash's untracked file: its third parent holds it.
				if u, err := repo.Resolve(p.untracked + "^3"); err == nil {
					if ub, uok, err := blobAt(u, rel); err == nil && uok && !onDisk {
						text, has, known = ub, true, true
						break
					}
				}
			}
			if bok == ok && bytes.Equal(bb, b) {
				continue // the change does not touch the file
			}
			text, has = b, ok
			// The change's result is the source's when the file is as the
			// base had it; otherwise it is merged, and not known.
			known = bok == onDisk && bytes.Equal(bb, disk)
		}
		if has && p.source != "" && known {
			if link, err := a.gitLinkAt(repo, resolve, p.source, rel); err != nil {
				return err
			} else if link {
				if a.diskLink(abs) == string(text) {
					continue // the same link is there
				}
				// A link is judged by the file of the same commit it
				// leads to; one that leads out of the tree, to a
				// directory or to another link is not known.
				known = false
				to := path.Join(path.Dir(rel), string(text))
				if !path.IsAbs(string(text)) && to != ".." && !strings.HasPrefix(to, "../") {
					chain, err := a.gitLinkAt(repo, resolve, p.source, to)
					if err != nil {
						return err
					}
					if b, ok, err := blobAt(p.source, to); err != nil {
						return err
					} else if ok && !chain {
						text, known = b, true
					}
				}
			}
		}
		if known && has == onDisk && bytes.Equal(text, disk) {
			continue // left as it is
		}
		_, control := gitFollowed(root, rel)
		switch {
		case !known:
			a.add(guard.Finding{Check: "shell.git-restores-unknown", Level: action.Confirm, Hard: true,
				Message: fmt.Sprintf("git %s changes %s, which decides what runs later, to merged content that cannot be known when judged", sub, a.display(abs))})
			if !control {
				a.effectFact(abs, action.PathWrite)
			}
		case !has:
			a.effectFact(abs, action.PathDelete)
		default:
			if a.written == nil {
				a.written = map[string]writtenFile{}
			}
			a.written[abs] = writtenFile{text: string(text), known: true, path: abs, at: a.cur}
			a.effectFact(abs, action.PathWrite)
			if control {
				a.add(guard.Finding{Check: "shell.git-restores", Level: action.Confirm, Hard: true,
					Message: fmt.Sprintf("git %s writes %s, which decides what runs later, with other content (%d bytes from the repository)", sub, a.display(abs), len(text))})
			}
		}
	}
	return nil
}

// gitLinkAt reports whether the revision rev's entry rel is a symbolic
// link (mode 120000).
func (a *analyzer) gitLinkAt(repo *gitread.Repo, resolve func(string) (string, error), rev, rel string) (bool, error) {
	h, err := resolve(rev)
	if err != nil || h == gitUnborn {
		return false, err
	}
	e, ok, err := repo.Lookup(h, rel)
	return ok && e.Mode == 0o120000, err
}

// diskLink returns the target of the symbolic link abs, or "" when it is
// not one.
func (a *analyzer) diskLink(abs string) string {
	rfs, ok := a.fileSystem().(fs.ReadLinkFS)
	if !ok {
		return ""
	}
	t, err := rfs.ReadLink(fsName(abs))
	if err != nil {
		return "\x00"
	}
	return t
}

// diskContent reads the file abs as it is now (bounded): its content and
// whether there is a regular file. A file too large or not regular reads
// as one with content no commit has.
func (a *analyzer) diskContent(abs string) ([]byte, bool) {
	b, err := readRegularIn(a.env.FS, fsName(abs), 4<<20)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, false
	}
	if err != nil {
		return []byte("\x00unreadable"), true
	}
	return b, true
}

// gitWalk adds to cands the followed files of the commit h's tree: those
// at its root, and those below the directories of gitWalkDirs.
func (a *analyzer) gitWalk(repo *gitread.Repo, root, h string, cands map[string]bool) error {
	t, err := repo.TreeOf(h)
	if err != nil {
		return err
	}
	es, err := repo.Tree(t)
	if err != nil {
		return err
	}
	n := 0
	var walk func(prefix string, es []gitread.Entry, depth int) error
	walk = func(prefix string, es []gitread.Entry, depth int) error {
		for _, e := range es {
			if n++; n > maxGitWalk {
				return gitread.ErrBound
			}
			rel := path.Join(prefix, e.Name)
			if e.Mode == 0o120000 && (depth > 0 || gitWalkDirs[strings.ToLower(e.Name)]) {
				// A link: what it leads to is what the agent reads
				// (.claude/skills/y/SKILL.md -> ../../../docs/notes.md).
				cands[rel] = true
				continue
			}
			if e.IsTree() {
				if depth == 0 && !gitWalkDirs[strings.ToLower(e.Name)] || depth > 4 {
					continue
				}
				sub, err := repo.Tree(e.Hash)
				if err != nil {
					return err
				}
				if err := walk(rel, sub, depth+1); err != nil {
					return err
				}
				continue
			}
			if ok, _ := gitFollowed(root, rel); ok {
				cands[rel] = true
			}
		}
		return nil
	}
	return walk("", es, 0)
}

// gitDir returns the directory git runs in: base (its -C, "" for none)
// against the working directory.
func (a *analyzer) gitDir(base string) (string, bool) {
	if base == "" {
		base = "."
	}
	if !path.IsAbs(base) && !a.cwdKnown {
		return "", false
	}
	p, ok := a.fileAbs(base)
	if !ok || !path.IsAbs(p) {
		return "", false
	}
	return p, true
}

// A repository git is pointed at that is not a work tree's .git — a bare
// repository named by --git-dir, GIT_DIR or found by git in the directory
// it runs in (git -C /tmp/x.git log) — brings its own configuration and
// hooks, which the paths guard does not protect (it protects .git/config
// and .git/hooks): core.fsmonitor, core.pager, an alias with !, a filter
// or core.hooksPath written there make git run a command. That
// configuration is read (bounded) and judged as git -c would be; hooks in
// it reach a person.

// gitForeignRepo judges the repository git's arguments point at, when it
// is not a work tree's .git.
func (a *analyzer) gitForeignRepo(s *segCtx) {
	base, gitdir := "", ""
	for j := 0; j < len(s.args); j++ {
		x := s.args[j]
		if x.dyn {
			return
		}
		v := x.val
		switch {
		case v == "-C" && j+1 < len(s.args):
			j++
			if s.args[j].dyn {
				return
			}
			if base == "" || path.IsAbs(s.args[j].val) {
				base = s.args[j].val
			} else {
				base = path.Join(base, s.args[j].val)
			}
		case v == "--git-dir" && j+1 < len(s.args):
			j++
			if s.args[j].dyn {
				return
			}
			gitdir = s.args[j].val
		case strings.HasPrefix(v, "--git-dir="):
			gitdir = v[len("--git-dir="):]
		case (v == "-c" || v == "--work-tree" || v == "--namespace" || v == "--exec-path") && j+1 < len(s.args):
			j++
		case strings.HasPrefix(v, "-"):
		default:
			j = len(s.args)
		}
	}
	dir, ok := a.gitDir(base)
	if !ok {
		return
	}
	if gitdir != "" {
		if !path.IsAbs(gitdir) && !strings.HasPrefix(gitdir, "~") {
			gitdir = path.Join(dir, gitdir)
		}
		p, ok := a.fileAbs(gitdir)
		if !ok {
			return
		}
		a.gitForeignConfig(s, p)
		return
	}
	// git's own discovery: the nearest directory up from dir that has a
	// .git (a work tree: its configuration is protected) or is a bare
	// repository.
	fsys := a.fileSystem()
	for d, i := dir, 0; i < 64; d, i = path.Dir(d), i+1 {
		if _, err := fs.Stat(fsys, fsName(path.Join(d, ".git"))); err == nil {
			return
		}
		if a.isBareRepo(d) {
			a.gitForeignConfig(s, d)
			return
		}
		if d == "/" {
			return
		}
	}
}

// isBareRepo reports whether d looks like a repository git would use as
// one: HEAD, config and objects in it.
func (a *analyzer) isBareRepo(d string) bool {
	if _, ok := a.written[path.Join(d, "config")]; ok && path.Base(d) != ".git" {
		return true // its configuration written by this command
	}
	fsys := a.fileSystem()
	for _, f := range []string{"HEAD", "config", "objects"} {
		if _, err := fs.Stat(fsys, fsName(path.Join(d, f))); err != nil {
			return false
		}
	}
	return true
}

// gitForeignConfig judges the configuration and hooks of the git directory
// gitdir (absolute) unless the paths guard protects them (a work tree's
// .git).
func (a *analyzer) gitForeignConfig(s *segCtx, gitdir string) {
	if !path.IsAbs(gitdir) {
		return
	}
	cfg := path.Join(gitdir, "config")
	if paths.IsControlFile(a.env.Home, cfg) {
		return // .git/config: protected, the person's own
	}
	cur := a.cur
	a.cur = s.idx
	defer func() { a.cur = cur }()
	shown := a.display(gitdir)
	if w, ok := a.written[cfg]; ok {
		// Written by this command (git init --bare d && printf … >>
		// d/config): what it wrote is judged, and the rest, not known
		// when judged, reaches a person.
		text, known := a.writtenContent(w)
		if !known {
			text = w.text
			a.add(guard.Finding{Check: "shell.git-config-exec", Level: action.Confirm,
				Message: fmt.Sprintf("git uses the repository %s, whose configuration this command writes: it may make git run a command", shown)})
		}
		for _, kv := range gitConfigText(text) {
			a.gitConfigKV(kv, false, s.idx, "the configuration of the repository "+shown+" sets ")
		}
		return
	}
	if a.unseenBefore(cfg, s.idx) != "" {
		a.add(guard.Finding{Check: "shell.git-config-exec", Level: action.Confirm,
			Message: fmt.Sprintf("git uses the repository %s, whose configuration this command may have written unseen", shown)})
		return
	}
	b, err := readRegularIn(a.env.FS, fsName(cfg), 1<<20)
	switch {
	case errors.Is(err, fs.ErrNotExist):
	case err != nil:
		a.add(guard.Finding{Check: "shell.git-config-exec", Level: action.Confirm,
			Message: fmt.Sprintf("git uses the repository %s, whose configuration could not be read (%v): it may make git run a command", shown, err)})
	default:
		for _, kv := range gitConfigText(string(b)) {
			a.gitConfigKV(kv, false, s.idx, "the configuration of the repository "+shown+" sets ")
		}
	}
	hooks := path.Join(gitdir, "hooks")
	if hp := tracked.ConfigValue(string(b), "core", "hookspath"); hp != "" {
		return // judged above as core.hooksPath
	}
	if paths.IsControlFile(a.env.Home, hooks) {
		return
	}
	es, err := fs.ReadDir(a.fileSystem(), fsName(hooks))
	if err != nil {
		return
	}
	var found []string
	for _, e := range es {
		if e.IsDir() || strings.HasSuffix(e.Name(), ".sample") {
			continue
		}
		found = append(found, e.Name())
	}
	if len(found) > 0 {
		if len(found) > 4 {
			found = append(found[:4], "…")
		}
		a.add(guard.Finding{Check: "shell.git-foreign-hooks", Level: action.Confirm, Hard: true,
			Message: fmt.Sprintf("git uses the repository %s, whose hooks (%s) run commands outside Overseer's view", shown, strings.Join(found, ", "))})
	}
}
