package shell

// The refactoring loop: the files a search lists, edited in place by the
// command xargs runs (rg -l OLD docs | xargs sed -i 's/OLD/NEW/g'). The
// files lie under the search's roots, so the edit is judged as a write
// under them, as find ROOTS -exec sed -i … {} + is.

import (
	"io/fs"
	"path"
	"strings"
)

// listerValueOpts are the options of rg, grep and git grep that take a
// value as the next word; a lister with an option not known keeps its
// output unknown.
var listerValueOpts = setOf("-e", "--regexp", "-f", "--file", "-g", "--glob", "--iglob", "-t", "--type", "-T",
	"--type-not", "-m", "--max-count", "-A", "-B", "-C", "--max-depth", "-d", "-M", "--max-columns", "-E",
	"--encoding", "--sort", "--sortr", "-j", "--threads", "--color", "--colour", "--max-filesize", "--include",
	"--exclude", "--exclude-dir", "--ignore-file", "--type-add")

// listerFlags are their flags that change which files are listed or how,
// never where the search goes.
var listerFlags = setOf("-l", "--files-with-matches", "-i", "--ignore-case", "-S", "--smart-case", "-w",
	"--word-regexp", "-F", "--fixed-strings", "-P", "--pcre2", "-U", "--multiline", "-s", "--no-messages", "-u",
	"--unrestricted", "--hidden", "--no-ignore", "-0", "--null", "-z", "-r", "--recursive", "-I", "-E",
	"--extended-regexp", "-x", "--line-regexp", "-v", "--invert-match", "-a", "--text", "--no-ignore-vcs",
	"--untracked", "--cached", "-c", "--count")

// listedRoots returns the roots under which lie the files xargs gets on its
// input when the stage before it in the pipeline is a search that lists
// files: rg -l, grep -rl, git grep -l, with static arguments, one
// pattern, and no option that follows links (rg -L, grep -R) or is not
// known. nil otherwise.
func (a *analyzer) listedRoots(s *segCtx) *findInfo {
	if !a.pipeIn || s.idx < 1 || s.idx > len(a.out.Segments) {
		return nil
	}
	prev := a.out.Segments[s.idx-1]
	if prev.Dynamic || prev.Origin != s.c.origin && prev.Origin != OriginPipe {
		return nil
	}
	args := prev.Args
	lists, recursive := false, true
	switch prev.Name {
	case "rg":
	case "grep", "egrep", "fgrep":
		recursive = false
	case "git":
		if len(args) == 0 || args[0] != "grep" {
			return nil
		}
		args = args[1:]
	default:
		return nil
	}
	var ops []string
	pattern := false // given by -e or -f
	dashdash := false
	for j := 0; j < len(args); j++ {
		v := args[j]
		if dashdash || !strings.HasPrefix(v, "-") || v == "-" {
			ops = append(ops, v)
			continue
		}
		if v == "--" {
			dashdash = true
			continue
		}
		name, _, hasVal := strings.Cut(v, "=")
		if listerValueOpts[name] {
			pattern = pattern || name == "-e" || name == "--regexp" || name == "-f" || name == "--file"
			if !hasVal {
				j++
			}
			continue
		}
		if !strings.HasPrefix(v, "--") && len(v) > 2 {
			// A group of one-letter flags: -rl, -il.
			for _, c := range v[1:] {
				f := "-" + string(c)
				if !listerFlags[f] || f == "-e" || f == "-f" {
					return nil
				}
				lists = lists || f == "-l"
				recursive = recursive || f == "-r"
			}
			continue
		}
		if !listerFlags[v] {
			return nil // -L (rg: follow links), -R, -O, --pre …
		}
		lists = lists || v == "-l" || v == "--files-with-matches"
		recursive = recursive || v == "-r" || v == "--recursive"
	}
	if !lists || !recursive {
		return nil
	}
	if !pattern {
		if len(ops) == 0 {
			return nil
		}
		ops = ops[1:]
	}
	if len(ops) == 0 {
		ops = []string{"."}
	}
	info := &findInfo{}
	for _, o := range ops {
		if strings.ContainsAny(o, "*?[") || !a.namesPlain(o) {
			return nil
		}
		info.starts = append(info.starts, arg{val: o})
	}
	return info
}

// maxListedEntries bounds the entries namesPlain reads under a root.
const maxListedEntries = 20000

// namesPlain reports whether every name under root (as it is on disk, and
// not written by the command first) is free of blanks, quotes and
// backslashes: xargs splits its input at them, so a directory named
// "x .." listed as "docs/x ../.bashrc" would hand sed "../.bashrc", a
// file outside the roots.
func (a *analyzer) namesPlain(root string) bool {
	abs, ok := a.abs(root)
	if !ok || !path.IsAbs(abs) || a.writtenHere(root) {
		return false
	}
	n := 0
	plain := true
	err := fs.WalkDir(a.fileSystem(), fsName(abs), func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		n++
		if n > maxListedEntries || strings.ContainsAny(d.Name(), " \t\n\r\v\f'\"\\") {
			plain = false
			return fs.SkipAll
		}
		return nil
	})
	return err == nil && plain
}
