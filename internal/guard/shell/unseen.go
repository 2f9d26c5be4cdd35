package shell

import (
	"io/fs"
	"path"
	"slices"
	"strings"

	"github.com/overseer-dev/overseer/internal/action"
	"github.com/overseer-dev/overseer/internal/guard"
)

// Code a command writes without the guard seeing it, then runs. An archive
// unpacked by the command (tar -x, unzip, python3 -m zipfile -e) puts files
// whose names and content are not known when the command is judged into a
// directory: a program, a script, a makefile or a file sourced from there
// later in the same command does not exist yet, or is not what is on disk
// now (unzip o.zip && ./o approve …, tar xf x.tar && make). Running one is
// confirm: a person sees what unpacked code runs. A download the command
// names by its URL (wget URL, curl -O URL) is downloaded code, as curl -o
// FILE is. A program the project's own code builds (go build -o app) keeps
// the class of a program of the working tree, and so does a file an
// interpreter's script writes (python3 gen.py && ./out.sh: the script is
// the project's code, judged as such).

// markUnseen records that the current segment writes files with names
// and content not known when judged into dir ("" for a directory computed
// at run time).
func (a *analyzer) markUnseen(dir string) {
	if a.cur < 0 || a.cur >= len(a.out.Segments) {
		return
	}
	sg := &a.out.Segments[a.cur]
	if !slices.Contains(sg.unseen, dir) {
		sg.unseen = append(sg.unseen, dir)
	}
}

// unseenIn reports whether the segment sg may have written p without the
// guard seeing what (p is absolute).
func unseenIn(sg *Segment, p string) bool {
	for _, d := range sg.unseen {
		if d == "" || action.Within(d, p) {
			return true
		}
	}
	return false
}

// unseenBefore returns the program of a segment before idx that may have
// written p without the guard seeing what, or "".
func (a *analyzer) unseenBefore(p string, idx int) string {
	if !path.IsAbs(p) {
		return ""
	}
	for i := 0; i < idx && i < len(a.out.Segments); i++ {
		if sg := &a.out.Segments[i]; unseenIn(sg, p) {
			if sg.Name == "" {
				return "a program"
			}
			return sg.Name
		}
	}
	return ""
}

// runsUnseen judges the segment s running the file p (abs, absolute) that
// an earlier segment may have written unseen: confirm. It reports whether
// it was.
func (a *analyzer) runsUnseen(s *segCtx, p, abs string) bool {
	by := a.unseenBefore(abs, s.idx)
	if by == "" {
		return false
	}
	a.cur = s.idx
	what := "runs " + p
	if s.name != "" && s.prog.val != p {
		what = s.name + " runs " + p
	}
	a.add(guard.Finding{Check: "shell.runs-unseen", Level: action.Confirm,
		Message: what + ", which " + by + " earlier in this command may have written: what it holds is not known when judged"})
	return true
}

// unpacksInto records that the segment s unpacks an archive into dir.
func (a *analyzer) unpacksInto(s *segCtx, dir arg) {
	cur := a.cur
	a.cur = s.idx
	defer func() { a.cur = cur }()
	if dir.dyn {
		a.markUnseen("")
		return
	}
	p, known := a.abs(dir.val)
	if !known {
		a.markUnseen("")
		return
	}
	a.markUnseen(a.expandHome(p))
}

// listsOnly reports whether unzip's options only list or test the archive
// (-l, -v, -t, -z, -Z), or print its files to standard output (-p, -c).
func listsOnly(args []arg) bool {
	for _, x := range args {
		v := x.val
		if x.dyn || len(v) < 2 || v[0] != '-' || v[1] == '-' {
			continue
		}
		for _, c := range v[1:] {
			switch c {
			case 'l', 'v', 't', 'z', 'Z', 'p', 'c':
				return true
			}
		}
	}
	return false
}

// moduleUnpacks judges python -m zipfile -e ARCHIVE DIR and python -m
// tarfile -e ARCHIVE [DIR]: an archive unpacked into DIR (the working
// directory when tarfile is given none).
func (a *analyzer) moduleUnpacks(s *segCtx, mod string, rest []arg) {
	if mod != "zipfile" && mod != "tarfile" {
		return
	}
	var ops []arg
	extract := false
	for _, x := range rest {
		switch {
		case !x.dyn && (x.val == "-e" || x.val == "--extract"):
			extract = true
		case !x.dyn && len(x.val) > 1 && x.val[0] == '-':
		default:
			ops = append(ops, x)
		}
	}
	if !extract {
		return
	}
	dir := arg{val: "."}
	if len(ops) > 1 {
		dir = ops[1]
	}
	a.unpacksInto(s, dir)
	if len(ops) > 0 && !dir.dyn {
		a.archiveWrites(s, ops[0], dir, archiveOpts{zip: mod == "zipfile"}) // archives.go
	}
}

// unpackers records the writes of programs other than tar and unzip that
// put files whose content is not known when judged where a later segment
// may run them: git clone (the repository's files), 7z and unrar x (an
// archive), cpio -i, jar x, and the decompressors (gunzip o.gz writes o).
func (a *analyzer) unpackers(s *segCtx) {
	ops := func(from int, valued map[string]bool) ([]arg, bool) {
		var out []arg
		for j := from; j < len(s.args); j++ {
			x := s.args[j]
			if x.dyn {
				return nil, false
			}
			if len(x.val) > 1 && x.val[0] == '-' {
				if valued[x.val] {
					j++
				}
				continue
			}
			out = append(out, x)
		}
		return out, true
	}
	first := func() (string, int) {
		for j, x := range s.args {
			if x.dyn {
				return "", -1
			}
			if !strings.HasPrefix(x.val, "-") {
				return x.val, j
			}
		}
		return "", -1
	}
	switch s.name {
	case "git":
		// git [-C DIR] [-c k=v] … clone [options] URL [DIR]
		sub, j, base := "", -1, ""
		elsewhere := false // --git-dir or --work-tree: a tree not the one -C names
		gitDirOpt, workTreeOpt := "", ""
		for k := 0; k < len(s.args); k++ {
			x := s.args[k]
			if x.dyn {
				break
			}
			switch v := x.val; {
			case v == "-C" && k+1 < len(s.args):
				k++
				if s.args[k].dyn {
					base = "\x00" // computed: anywhere
				} else if base == "" || base == "\x00" || path.IsAbs(s.args[k].val) {
					base = s.args[k].val
				} else {
					base = path.Join(base, s.args[k].val)
				}
			case (v == "-c" || v == "--git-dir" || v == "--work-tree" || v == "--namespace") && k+1 < len(s.args):
				if v != "-c" {
					elsewhere = true
				}
				k++
				val := s.args[k].val
				if s.args[k].dyn {
					val = "\x00"
				}
				switch v {
				case "--git-dir":
					gitDirOpt = val
				case "--work-tree":
					workTreeOpt = val
				}
			case strings.HasPrefix(v, "--git-dir="):
				elsewhere, gitDirOpt = true, v[len("--git-dir="):]
			case strings.HasPrefix(v, "--work-tree="):
				elsewhere, workTreeOpt = true, v[len("--work-tree="):]
			case strings.HasPrefix(v, "-"):
			default:
				sub, j = v, k
			}
			if sub != "" {
				break
			}
		}
		if sub != "" && gitMovesRefs(sub, s.args[j+1:]) {
			defer func() { a.gitMoved = "git " + sub }() // gitrestore.go
		}
		if sub != "clone" {
			if sub != "" && gitChangesTree(sub, s.args[j+1:]) {
				// GIT_DIR and GIT_WORK_TREE do what the options do.
				for _, e := range []struct {
					name string
					opt  *string
				}{{"GIT_DIR", &gitDirOpt}, {"GIT_WORK_TREE", &workTreeOpt}} {
					if *e.opt != "" {
						continue
					}
					for _, m := range []map[string]envVal{a.cmdEnv, a.envSet} {
						if v, ok := m[e.name]; ok {
							*e.opt = v.val
							if v.dyn {
								*e.opt = "\x00"
							}
							break
						}
					}
				}
				if base != "\x00" && gitDirOpt != "\x00" && workTreeOpt != "\x00" {
					if d, ok := a.gitDir(base); ok {
						a.gitRestores(s, sub, s.args[j+1:], d, gitDirOpt, workTreeOpt) // gitrestore.go
					}
				}
				if elsewhere {
					base = "\x00" // another work tree: not placed here
				}
				a.gitTreeUnseen(s, base)
			}
			return
		}
		into := func(d arg) {
			switch {
			case base == "\x00":
				a.unpacksInto(s, arg{dyn: true})
			case base != "" && !d.dyn && !path.IsAbs(d.val) && !strings.HasPrefix(d.val, "~"):
				a.unpacksInto(s, arg{val: path.Join(base, d.val)})
			default:
				a.unpacksInto(s, d)
			}
		}
		o, ok := ops(j+1, map[string]bool{"-b": true, "--branch": true, "-o": true, "--origin": true, "--depth": true,
			"-c": true, "--config": true, "--reference": true, "--template": true, "-u": true, "--upload-pack": true,
			"-j": true, "--jobs": true, "--filter": true, "--separate-git-dir": true, "--shallow-since": true,
			"--shallow-exclude": true, "--reference-if-able": true, "--server-option": true})
		switch {
		case !ok || len(o) == 0:
			a.unpacksInto(s, arg{dyn: true})
		case len(o) > 1:
			into(o[1])
		default:
			u := strings.TrimRight(o[0].val, "/")
			if i := strings.LastIndexAny(u, "/:"); i >= 0 {
				u = u[i+1:]
			}
			u = strings.TrimSuffix(u, ".git")
			if u == "" || u == "." || u == ".." {
				a.unpacksInto(s, arg{dyn: true})
				return
			}
			into(arg{val: u})
		}
	case "patch":
		// patch changes the files its diff names, below -d DIR.
		if anyFlag(s.args, "--dry-run") {
			return
		}
		dir, ok := optValue(s.args, "-d", "--directory")
		if !ok {
			dir = arg{val: "."}
		}
		a.unpacksInto(s, dir)
	case "curl", "wget":
		// A file named by the server (curl -J, wget --content-disposition,
		// --trust-server-names) or many (wget -r, -i LIST): not known.
		named := false
		for _, x := range s.args {
			v := x.val
			switch {
			case x.dyn:
			case v == "--remote-header-name", v == "--content-disposition", v == "--trust-server-names",
				v == "-r", v == "--recursive", v == "-m", v == "--mirror", v == "-i", v == "--input-file",
				strings.HasPrefix(v, "--input-file="), strings.HasPrefix(v, "--content-disposition="):
				named = true
			case s.name == "curl" && len(v) > 1 && v[0] == '-' && v[1] != '-' && strings.ContainsRune(v, 'J'):
				named = true
			case s.name == "wget" && len(v) > 1 && v[0] == '-' && v[1] != '-' && isLetters(v[1:]) && strings.ContainsAny(v[1:], "rm"):
				named = true
			}
		}
		if !named {
			return
		}
		dir, ok := optValue(s.args, "--output-dir", "-P", "--directory-prefix")
		if !ok {
			dir = arg{val: "."}
		}
		a.unpacksInto(s, dir)
	case "rsync", "scp":
		// A remote source (host:path) copied here is downloaded content.
		o, ok := ops(0, map[string]bool{"-e": true, "--rsh": true, "-P": s.name == "scp", "-i": true, "-o": true,
			"-F": true, "-c": true, "-l": true, "-J": true, "-S": true, "--exclude": true, "--include": true,
			"--filter": true, "-f": true, "--exclude-from": true, "--include-from": true, "--files-from": true})
		if !ok {
			// A computed source: a copy of a program from a computed path
			// is judged when it runs (selfapprove.go), as cp's is.
			return
		}
		if len(o) < 2 {
			return
		}
		for _, x := range o[:len(o)-1] {
			if remoteSpec(x.val) {
				a.unpacksInto(s, o[len(o)-1])
				return
			}
		}
		a.copiesUnseen(s, o[:len(o)-1], o[len(o)-1], recursiveFlag(s.args, "ra"))
	case "cp", "mv":
		o, ok := ops(0, map[string]bool{"-t": true, "--target-directory": true, "-S": true, "--suffix": true})
		dest, hasT := optValue(s.args, "-t", "--target-directory")
		switch {
		case !ok:
			return // a computed source or destination: see rsync's
		case hasT:
		case len(o) < 2:
			return
		default:
			dest, o = o[len(o)-1], o[:len(o)-1]
		}
		a.copiesUnseen(s, o, dest, s.name == "mv" || recursiveFlag(s.args, "rRa"))
	case "docker", "podman":
		// docker cp CONTAINER:SRC DEST: the container's files.
		sub, j := first()
		if sub != "cp" {
			return
		}
		o, ok := ops(j+1, nil)
		if !ok || len(o) != 2 {
			return
		}
		if strings.Contains(o[0].val, ":") && !strings.HasPrefix(o[0].val, "/") && !strings.HasPrefix(o[0].val, ".") {
			a.unpacksInto(s, o[1])
		}
	case "7z", "7za", "7zr", "unrar", "jar":
		sub, _ := first()
		if sub != "x" && sub != "e" && !(s.name == "jar" && strings.HasPrefix(sub, "x")) && !(s.name == "jar" && anyFlag(s.args, "-x", "--extract")) {
			return
		}
		dir := arg{val: "."}
		for _, x := range s.args {
			if strings.HasPrefix(x.val, "-o") && len(x.val) > 2 && (s.name == "7z" || s.name == "7za" || s.name == "7zr") {
				dir = arg{val: x.val[2:], dyn: x.dyn}
			}
		}
		a.unpacksInto(s, dir)
		if s.name != "unrar" && s.name != "jar" && !dir.dyn {
			a.sevenZipWrites(s, sub == "e", dir) // archives.go
		}
	case "cpio":
		if anyFlag(s.args, "-i", "--extract") || len(s.args) > 0 && !s.args[0].dyn && strings.HasPrefix(s.args[0].val, "-i") {
			dir, ok := optValue(s.args, "-D", "--directory")
			if !ok {
				dir = arg{val: "."}
			}
			a.unpacksInto(s, dir)
		}
	case "gunzip", "bunzip2", "unxz", "unlzma", "unzstd", "uncompress", "gzip", "bzip2", "xz", "lzma", "zstd", "lz4", "brotli":
		if !decompressors[s.name] && !anyFlag(s.args, "-d", "--decompress", "--uncompress") {
			return
		}
		if anyFlag(s.args, "-c", "--stdout", "--to-stdout", "-l", "--list", "-t", "--test") {
			return
		}
		o, ok := ops(0, map[string]bool{"-S": true, "--suffix": true, "-o": true})
		if !ok {
			a.unpacksInto(s, arg{dyn: true})
			return
		}
		for _, x := range o {
			out := x.val
			if i := strings.LastIndexByte(out, '.'); i > strings.LastIndexByte(out, '/')+1 {
				out = out[:i]
			}
			if strings.HasSuffix(x.val, ".tgz") {
				out += ".tar"
			}
			a.unpacksInto(s, arg{val: out})
		}
	}
}

// decompressors decompress without an option; gzip, xz … do with -d.
var decompressors = map[string]bool{"gunzip": true, "bunzip2": true, "unxz": true, "unlzma": true, "unzstd": true, "uncompress": true}

// remoteSpec reports whether an rsync or scp operand names another host
// (host:path, user@host:path, rsync://…, scp://…), not a local path (a
// Windows drive's C:, ./a:b).
func remoteSpec(v string) bool {
	if strings.Contains(v, "://") {
		return true
	}
	i := strings.IndexByte(v, ':')
	if i <= 1 {
		return false
	}
	return !strings.Contains(v[:i], "/")
}

// recursiveFlag reports whether args hold --recursive, --archive or a
// group of short flags with one of the letters.
func recursiveFlag(args []arg, letters string) bool {
	for _, x := range args {
		v := x.val
		switch {
		case x.dyn:
		case v == "--recursive" || v == "--archive":
			return true
		case len(v) > 1 && v[0] == '-' && v[1] != '-' && isLetters(v[1:]) && strings.ContainsAny(v[1:], letters):
			return true
		}
	}
	return false
}

// copiesUnseen records the destination of a copy or move as written
// unseen when what it brings is not known when judged: a source an
// earlier segment unpacked, or a directory copied whole (or a file moved)
// that is not there when judged and that no earlier program of the
// command makes. A single file copied is followed as written (effects.go),
// and a directory on disk is walked.
func (a *analyzer) copiesUnseen(s *segCtx, srcs []arg, dest arg, recursive bool) {
	for _, x := range srcs {
		if x.dyn {
			continue // judged when it runs (selfapprove.go)
		}
		p, known := a.abs(x.val)
		if !known || !path.IsAbs(p) {
			a.unpacksInto(s, dest)
			return
		}
		if a.unseenBefore(p, s.idx) != "" {
			a.unpacksInto(s, dest)
			return
		}
		if _, ok := a.written[p]; ok || !recursive || a.changedBefore(p, s.idx) {
			// Written earlier in the command (its text is followed), a
			// single file (followed as written: effects.go), or made by an
			// earlier program the guard knows (go build -o out/app).
			continue
		}
		if _, err := fs.Stat(a.fileSystem(), fsName(p)); err != nil {
			a.unpacksInto(s, dest) // not there when judged, and nothing here makes it
			return
		}
	}
}

// gitChangesTree reports whether git's subcommand sub with its arguments
// may change the work tree's files to content the guard has not read:
// another commit checked out (checkout, switch, reset --hard, restore,
// bisect, worktree add), commits or patches brought in (pull, merge,
// rebase, cherry-pick, revert, am, apply), a stash applied or the tree put
// back to HEAD (stash). A branch made at HEAD (checkout -b NAME, switch -c
// NAME) and the read-only forms (stash list, apply --check) leave it.
func gitChangesTree(sub string, args []arg) bool {
	var ops []arg
	for k := 0; k < len(args); k++ {
		x := args[k]
		if x.dyn {
			return true
		}
		switch v := x.val; {
		case v == "--":
			ops = append(ops, args[k+1:]...)
			k = len(args)
		case (sub == "checkout" && (v == "-b" || v == "-B" || v == "--orphan")) ||
			(sub == "switch" && (v == "-c" || v == "-C" || v == "--create" || v == "--force-create" || v == "--orphan")):
			k++ // the new branch's name: not a commit to check out
		case strings.HasPrefix(v, "-"):
		default:
			ops = append(ops, x)
		}
	}
	switch sub {
	case "checkout", "switch":
		// Any operand is a commit or paths: the tree changes to it.
		return len(ops) > 0 || anyFlag(args, "--detach", "-")
	case "stash":
		if len(ops) == 0 {
			return true // git stash: push, the tree put back to HEAD
		}
		switch ops[0].val {
		case "list", "show", "create", "store", "drop", "clear":
			return false
		}
		return true
	case "apply":
		return !anyFlag(args, "--check", "--stat", "--numstat", "--summary", "--cached")
	case "reset":
		return anyFlag(args, "--hard", "--merge", "--keep")
	case "restore":
		return !anyFlag(args, "--staged", "-S") || anyFlag(args, "--worktree", "-W")
	case "worktree":
		return len(ops) > 0 && ops[0].val == "add"
	case "submodule":
		return len(ops) > 0 && ops[0].val == "update"
	case "pull", "merge", "rebase", "cherry-pick", "revert", "am", "bisect", "read-tree", "checkout-index",
		"sparse-checkout", "lfs":
		return true
	}
	// Not one of git's own commands that leave the tree: an alias (git co
	// other, [alias] co = checkout) or an external git-NAME program, which
	// may do anything.
	return !gitKeepsTree[sub]
}

// gitKeepsTree are git's commands that do not change the files of the work
// tree to content the guard has not read (add, mv and rm name the files
// they touch; clean only deletes).
var gitKeepsTree = map[string]bool{"add": true, "status": true, "log": true, "diff": true, "show": true,
	"branch": true, "fetch": true, "commit": true, "push": true, "tag": true, "remote": true, "config": true,
	"rev-parse": true, "rev-list": true, "ls-files": true, "ls-tree": true, "ls-remote": true, "blame": true,
	"grep": true, "describe": true, "shortlog": true, "reflog": true, "init": true, "cat-file": true,
	"whatchanged": true, "notes": true, "mv": true, "rm": true, "clean": true, "gc": true, "fsck": true,
	"count-objects": true, "help": true, "version": true, "var": true, "archive": true, "bundle": true,
	"format-patch": true, "diff-tree": true, "diff-files": true, "diff-index": true, "for-each-ref": true,
	"show-ref": true, "symbolic-ref": true, "update-ref": true, "name-rev": true, "merge-base": true,
	"check-ignore": true, "check-attr": true, "hash-object": true, "write-tree": true, "commit-tree": true,
	"mktree": true, "verify-commit": true, "verify-tag": true, "range-diff": true, "annotate": true,
	"cherry": true, "stage": true, "stripspace": true, "prune": true, "repack": true, "maintenance": true,
	"update-index": true, "show-branch": true, "difftool": true, "request-pull": true, "shortstat": true,
	"check-ref-format": true, "column": true, "credential": true, "mergetool": true, "citool": true,
	"gui": true, "gitk": true, "send-email": true, "count": true, "pack-refs": true, "replace": true,
	"-h": true, "--help": true, "--version": true, "clone": true}

// gitTreeUnseen records that git, run in base (its -C directory, "" for
// the working directory, "\x00" for one computed at run time), changes
// its repository's work tree: the files of the whole repository (the
// directory up from base that holds .git) are not known when judged.
func (a *analyzer) gitTreeUnseen(s *segCtx, base string) {
	switch {
	case base == "\x00":
		a.unpacksInto(s, arg{dyn: true})
		return
	case base == "":
		base = "."
	}
	p, ok := a.fileAbs(base)
	if !ok {
		a.unpacksInto(s, arg{dyn: true})
		return
	}
	for d := p; ; d = path.Dir(d) {
		if _, err := fs.Stat(a.fileSystem(), fsName(path.Join(d, ".git"))); err == nil {
			p = d
			break
		}
		if d == "/" || d == "." {
			break // not in a repository found here: the directory itself
		}
	}
	a.unpacksInto(s, arg{val: p})
}
