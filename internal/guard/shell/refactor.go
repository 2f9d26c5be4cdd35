package shell

// The refactoring loop: the files a search lists, edited in place by the
// command xargs runs (rg -l OLD docs | xargs sed -i 's/OLD/NEW/g'). The
// files lie under the search's roots, so the edit is judged as a write
// under them, as find ROOTS -exec sed -i … {} + is.

import (
	"io/fs"
	"path"
	"strings"

	"github.com/overseer-dev/overseer/internal/action"
	"github.com/overseer-dev/overseer/internal/lazyre"
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

// perlSuffix is the backup suffix of perl -i.SUFFIX.
var perlSuffix = lazyre.New(`^\.[A-Za-z0-9_~-]{1,16}$`)

// perlSubst splits one substitution s/PATTERN/REPLACEMENT/FLAGS (a
// delimiter that is not a bracket, a quote or a word character; flags that
// do not evaluate the replacement, e and ee; a trailing ";") into its
// pattern and replacement.
func perlSubst(code string) (pat, repl string, ok bool) {
	c := strings.TrimSpace(code)
	c = strings.TrimSpace(strings.TrimSuffix(c, ";"))
	if len(c) < 4 || c[0] != 's' || !strings.ContainsRune("/#|!,:%", rune(c[1])) {
		return "", "", false
	}
	d := c[1]
	var parts []string
	start := 2
	for k := 2; k < len(c) && len(parts) < 2; k++ {
		switch c[k] {
		case '\\':
			k++
		case d:
			parts = append(parts, c[start:k])
			start = k + 1
		}
	}
	if len(parts) != 2 || strings.Trim(c[start:], "gimsxnr") != "" {
		return "", "", false
	}
	return parts[0], parts[1], true
}

// perlSubstitute judges perl -pi -e 's/A/B/g' FILES, perl's sed -i: only
// -p, -i (with a plain backup suffix) and one -e whose code is one
// substitution that interpolates nothing but capture groups, on literal
// files whose names perl's <> cannot read as a command. It is then a write
// of each file (sed -i's class); anything else is inline code. It reports
// whether it judged the segment.
func (a *analyzer) perlSubstitute(s *segCtx) bool {
	var code string
	var files []arg
	p, i, e := false, false, false
	for j := 0; j < len(s.args); j++ {
		x := s.args[j]
		if x.dyn || x.glob {
			return false
		}
		v := x.val
		switch {
		case e && code == "" && j > 0 && (s.args[j-1].val == "-e" || s.args[j-1].val == "-pe"):
			code = v
		case (v == "-e" || v == "-pe") && !e:
			e, p = true, p || v == "-pe"
		case v == "-p" || v == "-pi" || v == "-ip" || v == "-i" || strings.HasPrefix(v, "-i.") || strings.HasPrefix(v, "-pi."):
			suffix := strings.TrimPrefix(strings.TrimPrefix(v, "-p"), "-")
			suffix = strings.TrimPrefix(strings.TrimPrefix(suffix, "i"), "p")
			if suffix != "" && !perlSuffix.MatchString(suffix) {
				return false
			}
			p = p || strings.Contains(v, "p")
			i = i || strings.Contains(v, "i")
		case strings.HasPrefix(v, "-"):
			return false
		default:
			if strings.ContainsAny(v, "|<>&;\x00") || strings.TrimSpace(v) != v || v == "" {
				return false // perl's <> opens "cmd |" as a command
			}
			files = append(files, x)
		}
	}
	if !p || !i || code == "" || len(files) == 0 {
		return false
	}
	pat, repl, ok := perlSubst(code)
	if !ok {
		return false
	}
	// Code in a pattern ((?{ }), (??{ }), (*{ })) and interpolation of
	// variables or arrays (${\ system …}, @{[ … ]}) run Perl.
	if strings.Contains(pat, "(?{") || strings.Contains(pat, "(??{") || strings.Contains(pat, "(*{") ||
		strings.Contains(pat, "@") || strings.Contains(repl, "@") {
		return false
	}
	for _, part := range []string{pat, repl} {
		for k := 0; k < len(part); k++ {
			if part[k] == '\\' {
				k++
				continue
			}
			if part[k] != '$' {
				continue
			}
			// $1 … $9 in the replacement; $ at the end of the pattern or
			// before ) or | is an anchor.
			next := byte(0)
			if k+1 < len(part) {
				next = part[k+1]
			}
			if part == repl && next >= '1' && next <= '9' {
				continue
			}
			if part == pat && (next == 0 || next == ')' || next == '|') {
				continue
			}
			return false
		}
	}
	for _, f := range files {
		a.writeTarget(f, "perl -pi edits")
	}
	a.class("dev", action.Notify, "perl -pi s///")
	return true
}
