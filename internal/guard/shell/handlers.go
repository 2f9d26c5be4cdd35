package shell

import (
	"io/fs"
	"path"
	"strconv"
	"strings"

	"github.com/overseer-dev/overseer/internal/action"
	"github.com/overseer-dev/overseer/internal/guard"
	"github.com/overseer-dev/overseer/internal/lazyre"
)

// handler judges what the lists cannot: a program's arguments. It returns
// true when it classified the segment itself, so that the lists are not
// consulted.
type handler func(a *analyzer, s *segCtx) bool

var handlers map[string]handler

func init() {
	handlers = map[string]handler{
		"rm": (*analyzer).rmCmd, "rmdir": (*analyzer).rmCmd, "unlink": (*analyzer).rmCmd,
		"shred": (*analyzer).rmCmd, "srm": (*analyzer).rmCmd,
		"find":   (*analyzer).findCmd,
		"dd":     (*analyzer).ddCmd,
		"mke2fs": (*analyzer).diskCmd, "mkswap": (*analyzer).diskCmd, "wipefs": (*analyzer).diskCmd,
		"blkdiscard": (*analyzer).diskCmd, "mkntfs": (*analyzer).diskCmd,
		"chmod": (*analyzer).permCmd, "chown": (*analyzer).permCmd, "chgrp": (*analyzer).permCmd,
		"eval":   (*analyzer).evalCmd,
		"xargs":  (*analyzer).xargsCmd,
		"source": (*analyzer).sourceCmd, ".": (*analyzer).sourceCmd,
		"alias": (*analyzer).aliasCmd,
		"trap":  (*analyzer).trapCmd,
		"ssh":   (*analyzer).sshCmd,
		"su":    (*analyzer).suCmd, "runuser": (*analyzer).suCmd,
		"git":  (*analyzer).gitCmd,
		"psql": (*analyzer).sqlCmd, "mysql": (*analyzer).sqlCmd, "mariadb": (*analyzer).sqlCmd,
		"sqlite3": (*analyzer).sqlCmd, "sqlite": (*analyzer).sqlCmd,
		"tee": (*analyzer).teeCmd,
		"cp":  (*analyzer).copyCmd, "mv": (*analyzer).copyCmd, "install": (*analyzer).copyCmd,
		"ln": (*analyzer).copyCmd, "rsync": (*analyzer).copyCmd,
		"sed": (*analyzer).sedCmd,
		"awk": (*analyzer).awkCmd, "gawk": (*analyzer).awkCmd, "mawk": (*analyzer).awkCmd, "nawk": (*analyzer).awkCmd,
		"sort": (*analyzer).sortCmd,
		"cd":   (*analyzer).cdCmd, "pushd": (*analyzer).cdCmd, "popd": (*analyzer).cdCmd,
		"read": (*analyzer).varsCmd, "mapfile": (*analyzer).varsCmd, "readarray": (*analyzer).varsCmd,
		"getopts": (*analyzer).varsCmd, "unset": (*analyzer).varsCmd,
		"echo": (*analyzer).echoCmd, "printf": (*analyzer).printfCmd,
		"cat":   (*analyzer).catCmd,
		"mkdir": (*analyzer).touchCmd, "touch": (*analyzer).touchCmd, "truncate": (*analyzer).touchCmd,
		"tar": (*analyzer).tarCmd, "unzip": (*analyzer).unzipCmd,
		"curl": (*analyzer).downloadCmd, "wget": (*analyzer).downloadCmd,
		"at": (*analyzer).atCmd, "batch": (*analyzer).atCmd,
		"head": (*analyzer).readCmd, "tail": (*analyzer).readCmd, "less": (*analyzer).readCmd,
		"more": (*analyzer).readCmd, "bat": (*analyzer).readCmd, "nl": (*analyzer).readCmd,
		"od": (*analyzer).readCmd, "xxd": (*analyzer).readCmd, "hexdump": (*analyzer).readCmd,
		"strings": (*analyzer).readCmd, "base64": (*analyzer).readCmd, "wc": (*analyzer).readCmd,
		"file": (*analyzer).readCmd, "stat": (*analyzer).readCmd, "md5sum": (*analyzer).readCmd,
		"sha1sum": (*analyzer).readCmd, "sha256sum": (*analyzer).readCmd, "sha512sum": (*analyzer).readCmd,
		"busybox": (*analyzer).busyboxCmd,
	}
	registerStatic()
}

// operandsOf returns the arguments that are not options. valueOpts are
// options that take the next argument as their value.
func operandsOf(args []arg, valueOpts ...string) []arg {
	var out []arg
	dashdash := false
	for j := 0; j < len(args); j++ {
		x := args[j]
		v := x.val
		switch {
		case dashdash || x.dyn || x.find:
			out = append(out, x)
		case v == "--":
			dashdash = true
		case len(v) > 1 && v[0] == '-':
			for _, o := range valueOpts {
				if v == o {
					j++
					break
				}
			}
		default:
			out = append(out, x)
		}
	}
	return out
}

// optValue returns the value of an option given as "-o v", "-ov",
// "--opt v" or "--opt=v".
func optValue(args []arg, names ...string) (arg, bool) {
	for j, x := range args {
		if x.dyn {
			continue
		}
		v := x.val
		if v == "--" {
			break
		}
		for _, n := range names {
			switch {
			case v == n:
				if j+1 < len(args) {
					return args[j+1], true
				}
				return arg{}, false
			case strings.HasPrefix(n, "--") && strings.HasPrefix(v, n+"="):
				y := x
				y.val = v[len(n)+1:]
				return y, true
			case len(n) == 2 && n[1] != '-' && strings.HasPrefix(v, n) && len(v) > 2:
				y := x
				y.val = v[2:]
				return y, true
			case len(n) == 2 && n[1] != '-' && len(v) > 2 && v[1] != '-' && isLetters(v[1:]) && v[len(v)-1] == n[1]:
				// A group of one-letter flags ending in the option: -sSLo file.
				if j+1 < len(args) {
					return args[j+1], true
				}
				return arg{}, false
			}
		}
	}
	return arg{}, false
}

// rmTarget is a deletion target grouped by why it needs an approval.
type rmTarget struct {
	abs      string
	glob     bool
	show     string
	matches  []string // absolute paths the glob matched
	expanded bool     // matches holds the glob's expansion
}

// globMatches expands a resolved glob pattern against the file system the
// way the shell would (a leading dot is matched only by a dot). ok is false
// when it could not be expanded.
func (a *analyzer) globMatches(pattern string, known bool) ([]string, bool) {
	if !known || !path.IsAbs(pattern) {
		return nil, false
	}
	ms, err := fs.Glob(a.fileSystem(), fsName(pattern))
	if err != nil {
		return nil, false
	}
	out := ms[:0]
	for _, m := range ms {
		if !hiddenSkipped(m, pattern) {
			out = append(out, "/"+m)
		}
	}
	return out, true
}

// followSlash resolves a removal target written with a trailing slash that
// names a symbolic link: "rm -rf link/" removes what the link points to.
func (a *analyzer) followSlash(written, abs string, known bool) (string, bool) {
	if !known || !path.IsAbs(abs) || !strings.HasSuffix(strings.TrimSuffix(written, "."), "/") {
		return "", false
	}
	target := a.follow(abs) // links.go: every link on the way, those the command made too
	return target, target != path.Clean(abs)
}

// rmCmd judges rm, rmdir, unlink, shred and srm.
func (a *analyzer) rmCmd(s *segCtx) bool {
	mild := s.name == "rmdir" // removes only empty directories
	var wild, cwd, src []rmTarget
	ops := operandsOf(s.args)
	if len(ops) == 0 && s.c.extraDyn {
		a.add(guard.Finding{Check: "shell.rm-dynamic", Level: action.Approve, Hard: true,
			Message: s.name + " removes paths that arrive on its input (" + string(s.c.origin) + ") and cannot be previewed"})
	}
	if s.name == "shred" {
		a.add(guard.Finding{Check: "shell.shred", Level: action.Confirm,
			Message: "shred destroys file contents beyond recovery"})
	}
	for _, t := range ops {
		if t.find {
			continue // judged with the find that produces it
		}
		if t.dyn {
			a.add(guard.Finding{Check: "shell.rm-dynamic", Level: action.Approve, Hard: true,
				Message: s.name + " removes a path computed at run time: " + t.val + dynHint(t.val)})
			continue
		}
		p := t.val
		if t.glob {
			p = t.pat
		}
		abs, known := a.abs(p)
		if s.name == "shred" && a.r.blockDevice(abs) {
			a.add(guard.Finding{Check: "shell.device-write", Level: action.Block, Hard: true,
				Message: "shred overwrites the raw disk device " + abs})
			continue
		}
		a.pathFact(abs, known, action.PathDelete)
		if t.glob {
			dir, rest := splitGlob(abs)
			all := len(rest) > 0
			for _, c := range rest {
				all = all && globAll(c)
			}
			dir = a.follow(dir)
			if d := a.danger(dir); all && d != dangerNone && !a.scratch(dir) {
				a.add(guard.Finding{Check: "shell.rm-" + d.check(), Level: action.Block, Hard: true,
					Message: s.name + " " + t.val + " removes everything in " + d.describe(dir)})
				continue
			}
			matches, expanded := a.globMatches(abs, known)
			blocked := false
			for _, m := range matches {
				if d := a.danger(m); d != dangerNone && !a.scratch(m) {
					a.add(guard.Finding{Check: "shell.rm-" + d.check(), Level: action.Block, Hard: true,
						Message: s.name + " " + t.val + " matches and removes " + d.describe(m)})
					blocked = true
					break
				}
			}
			if !mild && !blocked {
				wild = append(wild, rmTarget{abs: abs, glob: true, show: t.val, matches: matches, expanded: expanded})
			}
			continue
		}
		if link, ok := a.followSlash(t.val, abs, known); ok {
			if d := a.danger(link); d != dangerNone {
				a.add(guard.Finding{Check: "shell.rm-" + d.check(), Level: action.Block, Hard: true,
					Message: s.name + " " + t.val + " follows a symbolic link and removes the contents of " + d.describe(link)})
				continue
			}
		}
		if d := a.danger(abs); d != dangerNone {
			a.add(guard.Finding{Check: "shell.rm-" + d.check(), Level: action.Block, Hard: true,
				Message: s.name + " " + t.val + " removes " + d.describe(abs)})
			continue
		}
		if mild {
			a.deleteWhere(s.name, abs, known)
			continue
		}
		base := path.Base(abs)
		switch {
		case isDotPath(t.val) || known && a.cwdKnown && action.Within(abs, a.cwd):
			cwd = append(cwd, rmTarget{abs: abs, show: t.val})
		case a.r.sourceDirs.has(base):
			src = append(src, rmTarget{abs: abs, show: t.val})
		case a.r.secret(abs):
			a.add(guard.Finding{Check: "shell.rm-secret", Level: action.Approve,
				Message: s.name + " removes a credential or key file: " + abs})
		default:
			a.trackedDelete(s.name, t.val, abs, known)
			a.deleteWhere(s.name, abs, known)
		}
	}
	if len(wild) > 0 {
		a.add(guard.Finding{Check: "shell.rm-wildcard", Level: action.Approve, Hard: true,
			Message: s.name + " removes what a wildcard matches: " + shows(wild),
			Preview: a.previewRemoval(s.name, wild)})
	}
	if len(cwd) > 0 {
		a.add(guard.Finding{Check: "shell.rm-cwd", Level: action.Approve, Hard: true,
			Message: s.name + " removes the working directory or a directory that contains it: " + shows(cwd),
			Preview: a.previewRemoval(s.name, cwd)})
	}
	if len(src) > 0 {
		a.add(guard.Finding{Check: "shell.rm-source", Level: action.Approve, Hard: true,
			Message: s.name + " removes a source directory: " + shows(src),
			Preview: a.previewRemoval(s.name, src)})
	}
	return false
}

func shows(ts []rmTarget) string {
	var b strings.Builder
	for i, t := range ts {
		if i > 0 {
			b.WriteString(", ")
		}
		b.WriteString(t.show)
	}
	return b.String()
}

// dynHint warns about a variable that would make the path dangerous when
// empty ("$DIR/" becomes "/").
func dynHint(src string) string {
	if !strings.HasPrefix(src, "$") && !strings.HasPrefix(src, `"$`) {
		return ""
	}
	i := strings.IndexByte(src, '/')
	if i < 0 {
		return ""
	}
	tail := strings.Trim(src[i:], `"'`)
	if strings.ContainsAny(tail, "$`") {
		return ""
	}
	if path.Clean(tail) == "/" || depth(path.Clean(tail)) == 1 || strings.HasPrefix(tail, "/*") {
		return " (if the variable is empty this is " + tail + ")"
	}
	return ""
}

// isDotPath reports whether p names the current or parent directory:
// ".", "./", "..", "foo/..", "./.".
func isDotPath(p string) bool {
	p = strings.TrimRight(p, "/")
	if p == "" {
		return false
	}
	b := path.Base(p)
	return b == "." || b == ".."
}

// deleteWhere classifies a deletion by where it happens.
func (a *analyzer) deleteWhere(name, abs string, known bool) {
	switch a.where(abs, known) {
	case whereHome:
		a.add(guard.Finding{Check: "shell.delete-outside", Level: action.Confirm,
			Message: name + " removes a path outside the working tree: " + abs})
	case whereSystem:
		a.add(guard.Finding{Check: "shell.delete-system", Level: action.Approve,
			Message: name + " removes a path outside the working tree and the home directory: " + abs})
	case whereUnknown:
		if !a.cwdKnown && a.env.Cwd != "" {
			a.add(guard.Finding{Check: "shell.delete-outside", Level: action.Confirm,
				Message: name + " removes " + abs + " after changing to a directory that is not known statically"})
		}
	}
}

// findInfo is what an -exec'd command needs to know about its find.
type findInfo struct {
	starts []arg
}

var findNarrowing1 = makeSet([]string{"-path", "-ipath", "-wholename", "-iwholename", "-regex", "-iregex",
	"-newer", "-anewer", "-cnewer", "-mtime", "-mmin", "-atime", "-amin", "-ctime", "-cmin", "-size", "-user",
	"-group", "-uid", "-gid", "-perm", "-links", "-inum", "-samefile", "-lname", "-ilname", "-used",
	"-fstype", "-context"}, false)

var findNarrowing0 = makeSet([]string{"-empty", "-nouser", "-nogroup", "-executable", "-readable", "-writable"}, false)

var deleters = makeSet([]string{"rm", "rmdir", "unlink", "shred", "srm"}, false)

// findQuery is a find expression simple enough to preview.
type findQuery struct {
	names    []string
	inames   []string
	typ      string
	minDepth int
	maxDepth int
}

// findCmd judges find: -delete, and the commands -exec runs.
func (a *analyzer) findCmd(s *segCtx) bool {
	args := s.args
	j := 0
	// caches is true while the expression only picks regenerable caches
	// by name (findCaches): a deletion of those inside the working tree
	// is notify.
	caches := true
	for j < len(args) {
		v := args[j].val
		if v == "-H" || v == "-L" || v == "-P" || strings.HasPrefix(v, "-O") {
			caches = caches && v != "-L" // links followed out of the tree
			j++
			continue
		}
		if v == "-D" {
			j += 2
			continue
		}
		break
	}
	var starts []arg
	for ; j < len(args); j++ {
		v := args[j].val
		if !args[j].dyn && (strings.HasPrefix(v, "-") || v == "(" || v == "!" || v == ",") {
			break
		}
		starts = append(starts, args[j])
	}
	if len(starts) == 0 {
		starts = []arg{{val: "."}}
	}
	info := &findInfo{starts: starts}
	q := findQuery{minDepth: 0, maxDepth: -1}
	narrowed, simple, deletes := false, true, false
	for j < len(args) {
		x := args[j]
		v := x.val
		if x.dyn {
			simple, caches = false, false
			j++
			continue
		}
		next := func() string {
			if j+1 < len(args) {
				return args[j+1].val
			}
			return ""
		}
		switch {
		case v == "-delete":
			deletes = true
			j++
		case v == "-exec" || v == "-execdir" || v == "-ok" || v == "-okdir":
			k := j + 1
			for k < len(args) && !(!args[k].dyn && (args[k].val == ";" || args[k].val == "+")) {
				k++
			}
			inner := make([]arg, 0, k-j-1)
			for _, y := range args[j+1 : k] {
				if !y.dyn && strings.Contains(y.val, "{}") && y.val != "{}" {
					// {}/.. or {}/../src: a path beside the match, not
					// the cache itself.
					caches = false
				}
				if !y.dyn && strings.Contains(y.val, "{}") {
					y.dyn, y.find, y.glob = true, true, false
				}
				inner = append(inner, y)
			}
			if idx := a.nestedCommand(inner, cmdCtx{origin: OriginFindExec, find: info}, s.idx); idx >= 0 &&
				deleters.has(a.out.Segments[idx].Name) {
				deletes = true
			} else {
				caches = false
			}
			a.cur = s.idx
			j = k + 1
		case v == "-name":
			caches = caches && findCaches[next()]
			q.names = append(q.names, next())
			narrowed = narrowed || !globAll(next()) // -name '*' matches everything
			j += 2
		case v == "-iname":
			caches = caches && findCaches[next()]
			q.inames = append(q.inames, strings.ToLower(next()))
			narrowed = narrowed || !globAll(next())
			j += 2
		case v == "-type":
			if q.typ != "" {
				simple = false
			}
			q.typ = next()
			caches = caches && (q.typ == "d" || q.typ == "f")
			j += 2
		case v == "-prune":
			simple = false // too complex to preview; the caches' names decide
			j++
		case v == "-maxdepth" || v == "-mindepth":
			n, err := strconv.Atoi(next())
			if err != nil {
				simple = false
			} else if v == "-maxdepth" {
				q.maxDepth = n
			} else {
				q.minDepth = n
			}
			j += 2
		case v == "-fprint" || v == "-fprint0" || v == "-fls" || v == "-fprintf":
			if j+1 < len(args) {
				a.writeTarget(args[j+1], "find writes its output to")
			}
			j += 2
			if v == "-fprintf" {
				j++
			}
		case v == "-printf" || v == "-regextype" || v == "-files0-from":
			// -files0-from: the starts are a file's, not the command's.
			caches = caches && v != "-files0-from"
			j += 2
		case v == "-a" || v == "-and" || v == "-print" || v == "-print0" || v == "-ls" || v == "-depth" ||
			v == "-d" || v == "-xdev" || v == "-mount" || v == "-follow" || v == "-noleaf" || v == "-true" ||
			v == "-nowarn" || v == "-warn" || v == "-ignore_readdir_race" || v == "-daystart":
			caches = caches && v != "-follow" && v != "-true"
			j++
		case findNarrowing1.has(v):
			narrowed, simple, caches = true, false, false
			j += 2
		case findNarrowing0.has(v):
			narrowed, simple, caches = true, false, false
			j++
		default:
			// Operators (!, -o, parentheses), -quit and unknown
			// primaries: too complex to preview.
			simple, caches = false, false
			j++
		}
	}
	if deletes && caches && len(q.names)+len(q.inames) > 0 && a.findCachesHere(s, starts) {
		return false
	}
	if deletes {
		a.findDelete(s, starts, narrowed, simple, q)
	}
	return false
}

// findCaches are the names of caches that tools make again when they are
// gone: Python's byte code and its test, type-checking and lint caches.
var findCaches = map[string]bool{"__pycache__": true, "*.pyc": true, "*.pyo": true, ".pytest_cache": true,
	".mypy_cache": true, ".ruff_cache": true}

// findCachesHere judges a find that deletes only what findCaches names,
// every start a directory of the working tree (not above it, not through
// a computed name): notify. It reports whether it judged the deletion.
func (a *analyzer) findCachesHere(s *segCtx, starts []arg) bool {
	var abs []string
	for _, st := range starts {
		p, known := a.abs(st.val)
		if st.dyn || !known || a.where(p, known) != whereTree || a.danger(p) != dangerNone {
			return false
		}
		abs = append(abs, p)
	}
	for _, p := range abs {
		a.pathFact(p, true, action.PathDelete)
	}
	a.class("find-caches", action.Notify, "find "+joinVals(starts)+" deletes them")
	return true
}

// findDelete judges a find that deletes what it matches.
func (a *analyzer) findDelete(s *segCtx, starts []arg, narrowed, simple bool, q findQuery) {
	var roots []string
	why := ""
	if !simple {
		why = "the expression is too complex to preview"
	}
	for _, st := range starts {
		if st.dyn {
			why = "a start directory is computed at run time"
			continue
		}
		abs, known := a.abs(st.val)
		if !known {
			why = "the working directory is not known"
		}
		a.pathFact(abs, known, action.PathDelete)
		if d := a.danger(abs); d != dangerNone && !narrowed {
			a.add(guard.Finding{Check: "shell.rm-" + d.check(), Level: action.Block, Hard: true,
				Message: "find " + st.val + " deletes everything under " + d.describe(abs)})
			why = "it would delete " + d.describe(abs) // blocked: not walked
		}
		roots = append(roots, abs)
	}
	msg := "find deletes what it matches under " + joinVals(starts)
	var pv *action.Preview
	if why == "" && len(roots) > 0 {
		pv = a.previewFind(roots, q)
	} else {
		pv = &action.Preview{Summary: "find's deletions were not previewed: " + why}
	}
	a.add(guard.Finding{Check: "shell.find-delete", Level: action.Approve, Hard: true, Message: msg, Preview: pv})
}

func joinVals(args []arg) string {
	var b strings.Builder
	for i, x := range args {
		if i > 0 {
			b.WriteByte(' ')
		}
		b.WriteString(x.val)
	}
	return b.String()
}

// ddCmd judges dd: writing onto a disk device blocks.
func (a *analyzer) ddCmd(s *segCtx) bool {
	for _, x := range s.args {
		if x.dyn {
			if strings.HasPrefix(x.val, "of=") {
				a.add(guard.Finding{Check: "shell.dd", Level: action.Approve,
					Message: "dd writes to a path computed at run time: " + x.val})
			}
			continue
		}
		if t, ok := strings.CutPrefix(x.val, "of="); ok {
			a.writeTarget(arg{val: t}, "dd writes to")
		}
	}
	a.add(guard.Finding{Check: "shell.dd", Level: action.Confirm, Message: "dd copies raw data: " + describeArgs("dd", s.args)})
	return true
}

// diskCmd judges programs that format or erase disks.
func (a *analyzer) diskCmd(s *segCtx) bool {
	switch {
	case strings.HasPrefix(s.name, "mkfs") || strings.HasPrefix(s.name, "newfs") || s.name == "mke2fs" || s.name == "mkntfs":
		a.add(guard.Finding{Check: "shell.mkfs", Level: action.Block, Hard: true,
			Message: "formats a file system, destroying its contents: " + describeArgs(s.name, s.args)})
	default:
		for _, x := range operandsOf(s.args) {
			if p, _ := a.abs(x.val); !x.dyn && a.r.blockDevice(p) {
				a.add(guard.Finding{Check: "shell.mkfs", Level: action.Block, Hard: true,
					Message: s.name + " erases the disk device " + p})
				return true
			}
		}
		a.add(guard.Finding{Check: "shell.disk", Level: action.Approve,
			Message: s.name + " erases file system data: " + describeArgs(s.name, s.args)})
	}
	return true
}

// permCmd judges chmod, chown and chgrp.
func (a *analyzer) permCmd(s *segCtx) bool {
	recursive := anyFlag(s.args, "-R", "--recursive")
	ops := operandsOf(s.args)
	if _, ref := optValue(s.args, "--reference"); !ref && len(ops) > 0 {
		ops = ops[1:] // the mode or owner
	}
	for _, t := range ops {
		if t.dyn || t.find {
			continue
		}
		p := t.val
		if t.glob {
			p = t.pat
		}
		abs, known := a.abs(p)
		dir := abs
		if t.glob {
			dir, _ = splitGlob(abs)
		}
		if d := a.danger(dir); recursive && d != dangerNone {
			a.add(guard.Finding{Check: "shell.chmod-root", Level: action.Block, Hard: true,
				Message: s.name + " -R changes " + d.describe(dir) + " and everything below it"})
			continue
		}
		a.pathFact(abs, known, action.PathWrite)
		switch a.where(abs, known) {
		case whereHome, whereSystem:
			a.add(guard.Finding{Check: "shell.chmod-outside", Level: action.Confirm,
				Message: s.name + " changes permissions outside the working tree: " + abs})
		}
	}
	return false
}

// evalCmd judges eval: a static string is analysed; anything else is
// obfuscation.
func (a *analyzer) evalCmd(s *segCtx) bool {
	a.bump(action.Auto)
	if len(s.args) == 0 {
		return true
	}
	parts := make([]string, 0, len(s.args))
	for _, x := range s.args {
		if x.dyn {
			a.dynamicCode(x, "eval runs a string computed at run time: "+x.val)
			return true
		}
		if x.decoded {
			a.decodedRuns("eval", x.val)
		}
		parts = append(parts, x.val)
	}
	a.nestedScript(strings.Join(parts, " "), OriginEval, s.idx)
	return true
}

// xargsCmd judges the command xargs runs, with arguments it cannot know.
func (a *analyzer) xargsCmd(s *segCtx) bool {
	a.bump(action.Auto)
	args := s.args
	j := 0
	replace := ""
	valueShort := "adEILnPs"
	for j < len(args) {
		x := args[j]
		v := x.val
		if x.dyn || v == "-" || !strings.HasPrefix(v, "-") {
			break
		}
		if v == "--" {
			j++
			break
		}
		if strings.HasPrefix(v, "--") {
			name, val, eq := strings.Cut(v, "=")
			switch name {
			case "--arg-file", "--delimiter", "--eof", "--max-lines", "--max-args", "--max-procs", "--max-chars", "--process-slot-var":
				if !eq {
					j++
				}
			case "--replace":
				replace = "{}"
				if eq && val != "" {
					replace = val
				}
			}
			j++
			continue
		}
		c := v[1]
		switch {
		case strings.IndexByte(valueShort, c) >= 0:
			val := v[2:]
			if val == "" && j+1 < len(args) {
				val = args[j+1].val
				j++
			}
			if c == 'I' {
				replace = val
			}
		case c == 'i':
			replace = "{}"
			if len(v) > 2 {
				replace = v[2:]
			}
		}
		j++
	}
	inner := args[min(j, len(args)):]
	if len(inner) == 0 {
		inner = []arg{{val: "echo"}}
	}
	if a.xargsStatic(s, args[:min(j, len(args))], inner, replace) {
		return true
	}
	if replace != "" {
		cp := make([]arg, len(inner))
		for k, y := range inner {
			if k > 0 && !y.dyn && strings.Contains(y.val, replace) {
				y.dyn, y.glob = true, false
			}
			cp[k] = y
		}
		inner = cp
	}
	ctx := cmdCtx{origin: OriginXargs, extraDyn: replace == ""}
	if replace == "" {
		ctx.listed = a.listedRoots(s) // refactor.go
	}
	a.nestedCommand(inner, ctx, s.idx)
	return true
}

// sourceCmd judges source and ".".
func (a *analyzer) sourceCmd(s *segCtx) bool {
	ops := operandsOf(s.args)
	if len(ops) == 0 {
		return false
	}
	// The sourced file can set any variable.
	for k := range a.vars {
		a.vars[k] = varState{dyn: true}
	}
	f := ops[0]
	if f.code != nil {
		a.runText(s, *f.code, true)
		return true
	}
	if !f.dyn && (f.val == "/dev/stdin" || f.val == "/proc/self/fd/0" || f.val == "/dev/fd/0") {
		// source /dev/stdin < FILE runs FILE; a document or a pipe runs
		// its text.
		switch in := a.stdinOf(s.c.redirs); in.kind {
		case 'f':
			f = in.file
		case 'd':
			if !in.dyn {
				a.nestedScript(in.text, OriginStdin, s.idx)
				return true
			}
		default:
			a.stdinCode(s, true)
			return true
		}
	}
	if f.dyn {
		a.dynamicCode(f, "source runs a file computed at run time: "+f.val)
		return true
	}
	p, _ := a.abs(f.val)
	if a.downloaded[p] {
		a.add(guard.Finding{Check: "shell.download-exec", Level: action.Approve, Hard: true,
			Message: s.name + " runs " + f.val + ", which this command downloaded"})
		return true
	}
	_ = a.runsUnseen(s, f.val, p) || a.runWritten(p, true, s.idx) || a.runStored(p, true, s.idx) // provenance.go: the file's content
	a.cur = s.idx
	return false
}

// aliasCmd judges the values of aliases as commands.
func (a *analyzer) aliasCmd(s *segCtx) bool {
	for _, x := range s.args {
		if x.dyn {
			a.dynamicCode(x, "alias defines a command computed at run time: "+x.val)
			continue
		}
		if name, val, ok := strings.Cut(x.val, "="); ok && name != "" && val != "" {
			a.nestedScript(val, OriginAlias, s.idx)
		}
	}
	return false
}

// trapCmd judges the handler string of a trap.
func (a *analyzer) trapCmd(s *segCtx) bool {
	ops := operandsOf(s.args)
	if len(ops) < 2 {
		return false
	}
	h := ops[0]
	switch {
	case h.dyn:
		a.dynamicCode(h, "trap runs a string computed at run time: "+h.val)
	case h.val != "" && h.val != "-":
		a.nestedScript(h.val, OriginTrap, s.idx)
	}
	return false
}

// sshCmd judges the command ssh runs on the other machine.
func (a *analyzer) sshCmd(s *segCtx) bool {
	const valueShort = "bcDEeFIiJLlmOopQRSWwB"
	args := s.args
	j := 0
	for j < len(args) {
		v := args[j].val
		if args[j].dyn || !strings.HasPrefix(v, "-") || v == "-" {
			break
		}
		if v == "--" {
			j++
			break
		}
		last := v[len(v)-1]
		if len(v) == 2 && strings.IndexByte(valueShort, last) >= 0 {
			j++
		}
		j++
	}
	if j >= len(args) {
		return false // no host
	}
	rest := args[j+1:]
	if len(rest) == 0 {
		return false // an interactive login
	}
	parts := make([]string, 0, len(rest))
	for _, x := range rest {
		if x.dyn {
			a.dynamicCode(x, "ssh runs a remote command computed at run time: "+x.val)
			return false
		}
		parts = append(parts, x.val)
	}
	// The remote side has its own working directory and home.
	home, cwd, known, vars := a.env.Home, a.cwd, a.cwdKnown, a.vars
	a.env.Home, a.cwdKnown, a.vars = "", false, nil
	a.nestedScript(strings.Join(parts, " "), OriginRemote, s.idx)
	a.env.Home, a.cwd, a.cwdKnown, a.vars = home, cwd, known, vars
	return false
}

// suCmd judges su and runuser: -c runs a shell string as another user.
func (a *analyzer) suCmd(s *segCtx) bool {
	a.out.Segments[s.idx].flags |= fPrivileged
	if c, ok := optValue(s.args, "-c", "--command"); ok {
		a.bump(action.Auto)
		if c.dyn {
			a.dynamicCode(c, s.name+" -c runs a string computed at run time: "+c.val)
			return true
		}
		wc := a.out.Segments[s.idx].Wrappers
		a.out.Segments[s.idx].Wrappers = append(wc[:len(wc):len(wc)], s.name)
		a.nestedScript(c.val, OriginShellC, s.idx)
		a.out.Segments[s.idx].Wrappers = wc
		return true
	}
	a.add(guard.Finding{Check: "shell.sudo", Level: action.Confirm, Message: s.name + " opens a shell as another user"})
	return true
}

var gitExecKeys = []string{"core.pager", "core.editor", "core.sshcommand", "core.fsmonitor", "core.hookspath",
	"core.gitproxy", "core.askpass", "diff.external", "sequence.editor", "gpg.program", "gpg.ssh.program",
	"credential.helper", "uploadpack.packobjectshook", "include.path", "merge.tool", "diff.tool"}

// gitExecKey reports whether setting key=value makes git run a command.
func gitExecKey(key, value string) bool {
	key = strings.ToLower(key)
	switch {
	case strings.HasPrefix(key, "alias."):
		return strings.HasPrefix(strings.TrimSpace(value), "!")
	case strings.HasPrefix(key, "filter."), strings.HasPrefix(key, "pager."), strings.HasPrefix(key, "includeif."),
		strings.HasSuffix(key, ".textconv"), strings.HasSuffix(key, ".command"), strings.HasSuffix(key, ".cmd"):
		return true
	}
	for _, k := range gitExecKeys {
		if key == k {
			return true
		}
	}
	return false
}

// gitConfigKV judges one key=value of git configuration given to git (by
// -c, the environment or a configuration file the command wrote): a key
// that makes git run a command has its value judged as the command.
func (a *analyzer) gitConfigKV(kv string, dyn bool, idx int, how string) {
	k, val, _ := strings.Cut(kv, "=")
	if !gitExecKey(k, val) {
		return
	}
	a.add(guard.Finding{Check: "shell.git-config-exec", Level: action.Confirm,
		Message: how + kv + " can make git run a command"})
	if cmd := strings.TrimPrefix(strings.TrimSpace(val), "!"); cmd != "" && !dyn {
		a.nestedScript(cmd, OriginGit, idx)
		a.cur = idx
	}
}

// gitExtURLs judges the ext:: URLs among git's arguments: git runs the
// command the URL names (git-remote-ext: "% " is a space, "%%" a percent
// sign).
func (a *analyzer) gitExtURLs(s *segCtx) {
	for _, x := range s.args {
		rest, ok := strings.CutPrefix(x.val, "ext::")
		if !ok {
			continue
		}
		if x.dyn {
			a.dynamicCode(x, "git runs the command of an ext:: URL computed at run time")
			continue
		}
		var words []string
		var b strings.Builder
		for i := 0; i < len(rest); i++ {
			switch {
			case rest[i] == '%' && i+1 < len(rest) && (rest[i+1] == ' ' || rest[i+1] == '%'):
				i++
				b.WriteByte(rest[i])
			case rest[i] == '%' && i+1 < len(rest):
				i++ // %S, %s, %G, %V: placeholders git fills in
				b.WriteString("x")
			case rest[i] == ' ':
				if b.Len() > 0 {
					words = append(words, b.String())
					b.Reset()
				}
			default:
				b.WriteByte(rest[i])
			}
		}
		if b.Len() > 0 {
			words = append(words, b.String())
		}
		if len(words) == 0 {
			continue
		}
		quoted := make([]string, len(words))
		for i, w := range words {
			quoted[i] = shellQuote(w)
		}
		a.add(guard.Finding{Check: "shell.git-config-exec", Level: action.Confirm,
			Message: "git runs the command of the URL " + clip(x.val, 80)})
		a.nestedScript(strings.Join(quoted, " "), OriginGit, s.idx)
		a.cur = s.idx
	}
}

// gitCmd judges what git runs besides itself: configuration that runs
// commands, rebase --exec, bisect run and submodule foreach.
func (a *analyzer) gitCmd(s *segCtx) bool {
	args := s.args
	for j := 0; j < len(args); j++ {
		v := args[j].val
		if !strings.HasPrefix(v, "-") || args[j].dyn {
			break
		}
		var kv string
		switch {
		case v == "-c" && j+1 < len(args):
			kv = args[j+1].val
			j++
		case strings.HasPrefix(v, "--config-env="):
			kv = strings.TrimPrefix(v, "--config-env=")
		case v == "-C" || v == "--git-dir" || v == "--work-tree" || v == "--namespace":
			j++
			continue
		default:
			continue
		}
		if strings.HasPrefix(v, "--config-env") {
			a.add(guard.Finding{Check: "shell.git-config-exec", Level: action.Confirm,
				Message: "git " + v + " can make git run a command"})
			continue
		}
		a.gitConfigKV(kv, args[j].dyn, s.idx, "git -c ")
	}
	a.gitExtURLs(s)
	a.gitForeignRepo(s) // gitrestore.go
	ops := operandsOf(args, "-C", "-c", "--git-dir", "--work-tree", "--namespace")
	if len(ops) == 0 {
		return false
	}
	switch strings.ToLower(ops[0].val) {
	case "rebase":
		if x, ok := optValue(args, "-x", "--exec"); ok {
			if x.dyn {
				a.dynamicCode(x, "git rebase --exec runs a string computed at run time: "+x.val)
			} else {
				a.nestedScript(x.val, OriginGit, s.idx)
			}
		}
	case "bisect":
		if len(ops) > 1 && ops[1].val == "run" {
			for k, x := range args {
				if x.val == "run" && !x.dyn && k+1 < len(args) {
					a.nestedCommand(args[k+1:], cmdCtx{origin: OriginGit}, s.idx)
					break
				}
			}
		}
	case "submodule":
		for k, x := range args {
			if x.val == "foreach" && !x.dyn {
				rest := operandsOf(args[k+1:])
				if len(rest) > 0 {
					if anyDyn(rest) {
						a.dynamicCode(rest[0], "git submodule foreach runs a string computed at run time")
					} else {
						a.nestedScript(joinVals(rest), OriginGit, s.idx)
					}
				}
				break
			}
		}
	case "config":
		kv := ops[1:]
		if len(kv) > 0 && (kv[0].val == "set" || kv[0].val == "replace-all" || kv[0].val == "add") {
			kv = kv[1:] // git 2.46: git config set KEY VALUE
		}
		if len(kv) >= 2 && gitExecKey(kv[0].val, kv[1].val) {
			level, why := action.Confirm, " makes git run a command"
			switch k := strings.ToLower(kv[0].val); {
			case k == "core.fsmonitor" || k == "core.hookspath" || k == "include.path" || strings.HasPrefix(k, "includeif."):
				// Run by every git command, or hooks and configuration taken
				// from elsewhere: a planted control, like writing .git/hooks.
				level, why = action.Block, " makes every later git command run code of the agent's choosing (a control an agent may not set)"
			}
			a.add(guard.Finding{Check: "shell.git-config-exec", Level: level, Hard: level == action.Block,
				Message: "git config " + kv[0].val + why})
			if !kv[1].dyn {
				// The command runs later, at every git call: judge it now.
				a.nestedScript(kv[1].val, OriginGit, s.idx)
			}
		}
	}
	a.cur = s.idx
	return false
}

// sqlCmd judges database clients by the statements they run.
func (a *analyzer) sqlCmd(s *segCtx) bool {
	var sql []arg
	var script bool
	switch s.name {
	case "psql":
		for j, x := range s.args {
			if (x.val == "-c" || x.val == "--command") && j+1 < len(s.args) {
				sql = append(sql, s.args[j+1])
			} else if v, ok := strings.CutPrefix(x.val, "--command="); ok {
				sql = append(sql, arg{val: v, dyn: x.dyn})
			}
		}
		if f, ok := optValue(s.args, "-f", "--file"); ok {
			script = true
			if psqlFiles(s.args) > 1 {
				// Only the first -f would be read: every file is run.
				break
			}
			// A script of the project's own, read whole, is judged by its
			// text when the database is the project's local one.
			if _, local := a.localPostgres(s); local && !f.dyn && !f.glob && f.val != "-" && !a.writtenHere(f.val) {
				if text, ok := a.projectFileText(f.val, 256<<10); ok {
					sql, script = append(sql, arg{val: text}), false
				}
			}
		}
	case "mysql", "mariadb":
		if x, ok := optValue(s.args, "-e", "--execute"); ok {
			sql = append(sql, x)
		}
	default: // sqlite3
		ops := operandsOf(s.args, "-cmd", "-init", "-separator", "-newline", "-nullvalue", "-A")
		if len(ops) > 1 {
			sql = append(sql, ops[1:]...)
		}
		if x, ok := optValue(s.args, "-cmd"); ok {
			sql = append(sql, x)
		}
		_, script = optValue(s.args, "-init")
	}
	if len(sql) == 0 {
		in := a.stdinOf(s.c.redirs)
		switch {
		case in.kind == 'd' && !in.dyn:
			sql = append(sql, arg{val: in.text})
		case script || in.kind != 0:
			a.add(guard.Finding{Check: "shell.sql-write", Level: action.Approve,
				Message: s.name + " runs an SQL script that cannot be previewed"})
			return true
		case a.pipeIn:
			a.add(guard.Finding{Check: "shell.sql-write", Level: action.Approve,
				Message: s.name + " runs SQL piped into it"})
			return true
		default:
			a.add(guard.Finding{Check: "shell.database", Level: action.Confirm,
				Message: s.name + " opens a database session"})
			return true
		}
	}
	write := false
	for _, x := range sql {
		if x.dyn {
			a.add(guard.Finding{Check: "shell.sql-write", Level: action.Approve,
				Message: s.name + " runs SQL computed at run time: " + x.val})
			return true
		}
		write = write || sqlWrites(x.val)
	}
	if write && s.name == "psql" && !script && pgLocalInserts(joinVals(sql)) {
		if port, ok := a.localPostgres(s); ok { // infra.go
			a.add(guard.Finding{Check: "shell.sql-insert", Level: action.Notify,
				Message: "psql adds rows to the project's local database (port " + strconv.Itoa(port) + "): " + clip(joinVals(sql), 200)})
			return true
		}
	}
	if write {
		a.add(guard.Finding{Check: "shell.sql-write", Level: action.Approve,
			Message: s.name + " runs SQL that changes the database: " + clip(joinVals(sql), 200)})
	} else if s.name == "psql" && !script && pgLocalReads(joinVals(sql)) {
		if port, ok := a.localPostgres(s); ok { // infra.go
			a.add(guard.Finding{Check: "shell.sql-read", Level: action.Notify,
				Message: "psql reads the project's local database (port " + strconv.Itoa(port) + "): " + clip(joinVals(sql), 200)})
			return true
		}
		a.add(guard.Finding{Check: "shell.sql-read", Level: action.Confirm,
			Message: s.name + " reads from a database: " + clip(joinVals(sql), 200)})
	} else if s.name != "psql" && s.name != "mysql" && s.name != "mariadb" && !script && sqliteStaysInside(joinVals(sql)) {
		if db := a.projectSQLite(s); db != "" { // devloop.go
			a.add(guard.Finding{Check: "shell.sql-read", Level: action.Notify,
				Message: s.name + " reads the project's own database " + db + ": " + clip(joinVals(sql), 200)})
			return true
		}
		a.add(guard.Finding{Check: "shell.sql-read", Level: action.Confirm,
			Message: s.name + " reads from a database: " + clip(joinVals(sql), 200)})
	} else {
		a.add(guard.Finding{Check: "shell.sql-read", Level: action.Confirm,
			Message: s.name + " reads from a database: " + clip(joinVals(sql), 200)})
	}
	return true
}

// psqlFiles counts psql's -f/--file options (-fFILE, --file=FILE).
func psqlFiles(args []arg) int {
	n := 0
	for _, x := range args {
		v := x.val
		if v == "--" {
			break
		}
		if v == "-f" || v == "--file" || strings.HasPrefix(v, "--file=") || len(v) > 2 && strings.HasPrefix(v, "-f") ||
			len(v) > 2 && v[0] == '-' && v[1] != '-' && isLetters(v[1:]) && v[len(v)-1] == 'f' {
			n++
		}
	}
	return n
}

func clip(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "…"
}

var sqlWriteWord = lazyre.New(`(?i)\b(insert|update|delete|drop|alter|create|truncate|merge|grant|revoke|copy|call|replace|attach|detach|vacuum|reindex|into|load|lock|rename)\b`)

// sqlWrites reports whether an SQL text (statements, psql meta-commands or
// sqlite dot-commands) may change anything. Unknown statements count as
// writes.
func sqlWrites(sql string) bool {
	for _, st := range sqlStatements(stripSQLComments(sql)) {
		st = strings.TrimSpace(st)
		if st == "" {
			continue
		}
		words := strings.FieldsFunc(st, func(r rune) bool { return r == ' ' || r == '\t' || r == '\r' || r == '(' })
		if len(words) == 0 {
			continue
		}
		first := strings.ToLower(words[0])
		switch {
		case first == "select" || first == "with" || first == "explain" || first == "values" || first == "table":
			if sqlWriteWord.MatchString(st) {
				return true
			}
		case first == "show" || first == "describe" || first == "desc" || first == "begin" || first == "commit" ||
			first == "rollback" || first == "start" || first == "end" || first == "use":
		case first == "pragma":
			if strings.Contains(st, "=") {
				return true
			}
		case strings.HasPrefix(first, `\`):
			switch {
			case strings.HasPrefix(first, `\i`), strings.HasPrefix(first, `\!`), strings.HasPrefix(first, `\o`),
				strings.HasPrefix(first, `\copy`), strings.HasPrefix(first, `\w`), strings.HasPrefix(first, `\g`),
				strings.HasPrefix(first, `\set`), strings.HasPrefix(first, `\lo_`):
				return true
			}
		case strings.HasPrefix(first, "."):
			switch first {
			case ".tables", ".schema", ".indexes", ".indices", ".mode", ".headers", ".header", ".dump", ".databases",
				".show", ".help", ".width", ".separator", ".timer", ".quit", ".exit", ".fullschema", ".dbinfo",
				".stats", ".eqp", ".nullvalue", ".print", ".changes":
			default:
				return true
			}
		default:
			return true
		}
	}
	return false
}

// sqlStatements splits SQL text into its statements (ended by ';', and
// spanning lines) and its meta-commands (a line that starts with a
// backslash or, for sqlite, a dot: each is one).
func sqlStatements(sql string) []string {
	var out []string
	for _, chunk := range strings.Split(sql, ";") {
		var st []string
		for _, line := range strings.Split(chunk, "\n") {
			l := strings.TrimSpace(line)
			switch {
			case l == "":
			case strings.HasPrefix(l, `\`) || strings.HasPrefix(l, "."):
				out = append(out, l)
			default:
				st = append(st, l)
			}
		}
		if len(st) > 0 {
			out = append(out, strings.Join(st, " "))
		}
	}
	return out
}

func stripSQLComments(s string) string {
	if !strings.Contains(s, "--") && !strings.Contains(s, "/*") {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		switch {
		case strings.HasPrefix(s[i:], "--"):
			for i < len(s) && s[i] != '\n' {
				i++
			}
			b.WriteByte('\n')
		case strings.HasPrefix(s[i:], "/*"):
			end := strings.Index(s[i+2:], "*/")
			if end < 0 {
				return b.String()
			}
			i += end + 3
			b.WriteByte(' ')
		default:
			b.WriteByte(s[i])
		}
	}
	return b.String()
}

// teeCmd judges the files tee writes.
func (a *analyzer) teeCmd(s *segCtx) bool {
	in, known := a.inputText(s)
	for _, t := range operandsOf(s.args) {
		a.writeTarget(t, "tee writes to")
		if !t.dyn {
			text := ""
			if known {
				text = in.text // printf … | tee x.sh: x.sh holds the text
			}
			a.markWritten(t.val, text, hasFlag(s.args, "-a") || hasFlag(s.args, "--append"))
		}
	}
	return false
}

// copyCmd judges cp, mv, install, ln and rsync: what they write, and what
// mv and rsync remove.
func (a *analyzer) copyCmd(s *segCtx) bool {
	valueOpts := []string{"-S", "--suffix", "-t", "--target-directory", "-m", "--mode", "-o", "--owner", "-g", "--group",
		"-e", "--rsh", "--exclude", "--include", "--exclude-from", "--include-from", "--filter", "-f", "--files-from",
		"--backup-dir", "--partial-dir", "--temp-dir", "-T", "--chmod", "--chown", "--rsync-path", "--port", "--password-file"}
	if s.name == "cp" || s.name == "mv" || s.name == "ln" || s.name == "install" {
		valueOpts = []string{"-S", "--suffix", "-t", "--target-directory", "-m", "--mode", "-o", "--owner", "-g", "--group"}
	}
	ops := operandsOf(s.args, valueOpts...)
	var dest arg
	var sources []arg
	if t, ok := optValue(s.args, "-t", "--target-directory"); ok && s.name != "rsync" {
		dest, sources = t, ops
	} else if len(ops) >= 2 || s.name == "ln" && len(ops) == 1 {
		dest, sources = ops[len(ops)-1], ops[:len(ops)-1]
		if len(ops) == 1 {
			dest, sources = arg{val: "."}, ops
		}
	} else {
		return false
	}
	remote := func(x arg) bool {
		if x.dyn {
			return false
		}
		i := strings.IndexByte(x.val, ':')
		_, win := windowsPath(x.val)
		return i > 0 && !win && !strings.Contains(x.val[:i], "/")
	}
	verb := s.name + " writes to"
	if !remote(dest) {
		if s.name == "rsync" && anyFlag(s.args, "--delete", "--delete-before", "--delete-after", "--delete-during", "--delete-excluded") {
			if p, _ := a.abs(dest.val); !dest.dyn && a.danger(p) != dangerNone {
				a.add(guard.Finding{Check: "shell.rm-" + a.danger(p).check(), Level: action.Block, Hard: true,
					Message: "rsync --delete removes everything in " + a.danger(p).describe(p) + " that the source lacks"})
			}
		}
		facts := len(a.out.Paths)
		a.writeTarget(dest, verb)
		defer a.templateCopy(s, sources, dest, facts) // devloop.go
	}
	symbolic := s.name == "ln" && anyFlag(s.args, "-s", "--symbolic")
	for _, src := range sources {
		if src.dyn || remote(src) {
			continue
		}
		p, known := a.abs(src.val)
		if symbolic {
			if len(sources) == 1 {
				a.recordLink(dest, src)
			}
			if d := a.danger(p); d != dangerNone {
				a.add(guard.Finding{Check: "shell.ln-danger", Level: action.Approve,
					Message: "ln -s links to " + d.describe(p) + ": removing through the link would remove it"})
			}
			continue
		}
		if s.name == "mv" || s.name == "rsync" && hasFlag(s.args, "--remove-source-files") {
			if d := a.danger(p); d != dangerNone && !src.glob {
				a.add(guard.Finding{Check: "shell.rm-" + d.check(), Level: action.Block, Hard: true,
					Message: s.name + " moves away " + d.describe(p)})
				continue
			}
			a.pathFact(p, known, action.PathDelete)
			if w := a.where(p, known); w == whereSystem || w == whereHome {
				a.add(guard.Finding{Check: "shell.delete-outside", Level: action.Confirm,
					Message: s.name + " moves a path from outside the working tree: " + p})
			}
		} else {
			a.pathFact(p, known, action.PathRead)
		}
	}
	return false
}

// sedCmd judges sed: in-place edits write files, and the e and w commands
// run commands or write files.
func (a *analyzer) sedCmd(s *segCtx) bool {
	inPlace := false
	var scripts []arg
	var files []arg
	scriptFile := false
	args := s.args
	dashdash := false
	for j := 0; j < len(args); j++ {
		x := args[j]
		v := x.val
		switch {
		case dashdash || x.dyn || !strings.HasPrefix(v, "-") || v == "-":
			files = append(files, x)
		case v == "--":
			dashdash = true
		case v == "-e" || v == "--expression":
			if j+1 < len(args) {
				scripts = append(scripts, args[j+1])
				j++
			}
		case strings.HasPrefix(v, "--expression="):
			scripts = append(scripts, arg{val: strings.TrimPrefix(v, "--expression=")})
		case v == "-f" || v == "--file":
			scriptFile = true
			j++
		case strings.HasPrefix(v, "--file="):
			scriptFile = true
		case v == "-i" || strings.HasPrefix(v, "--in-place") || strings.HasPrefix(v, "-i") ||
			!strings.HasPrefix(v, "--") && isLetters(v[1:]) && strings.ContainsAny(v[1:], "iI"):
			inPlace = true
		case v == "-l" || v == "--line-length":
			j++
		}
	}
	if len(scripts) == 0 && !scriptFile && len(files) > 0 {
		scripts, files = files[:1], files[1:]
	}
	for _, sc := range scripts {
		if sc.dyn {
			continue
		}
		runs, reads, writes := sedScan(sc.val)
		if runs {
			a.add(guard.Finding{Check: "shell.sed-exec", Level: action.Confirm,
				Message: "the sed script runs commands or writes files: " + clip(sc.val, 120)})
		}
		// sed '1r ~/.overseer/token' README.md printed the token at auto.
		for _, f := range reads {
			if f != "/dev/stdin" {
				a.candidate(arg{val: f}, inRead, false)
			}
		}
		for _, f := range writes {
			if f != "/dev/stdout" && f != "/dev/stderr" {
				a.writeTarget(arg{val: f}, "the sed script writes")
				a.candidate(arg{val: f}, inWrite, false)
			}
		}
	}
	if scriptFile {
		a.add(guard.Finding{Check: "shell.sed-exec", Level: action.Confirm, Message: "sed runs a script file"})
	}
	if inPlace {
		if len(files) == 0 && s.c.extraDyn {
			if s.c.listed != nil {
				a.findWrites(s.c.listed, "sed -i edits files the search lists under")
			} else {
				a.add(guard.Finding{Check: "shell.write-dynamic", Level: action.Confirm,
					Message: "sed -i edits files that arrive on its input (" + string(s.c.origin) + ")"})
			}
		}
		for _, f := range files {
			if f.find && s.c.find != nil {
				a.findWrites(s.c.find, "sed -i edits files found under")
				continue
			}
			if f.glob {
				f.val = f.pat
			}
			a.writeTarget(f, "sed -i edits")
		}
	}
	return false
}

// sedRunsOrWrites reports whether a sed script uses the e, w or W
// commands, or the e or w flags of s.
func sedRunsOrWrites(sc string) bool {
	runs, _, _ := sedScan(sc)
	return runs
}

// sedScan reads a sed script: whether it uses the e, w or W commands or
// the e or w flags of s, and the files its r and R commands read and its
// w and W commands and w flags write (GNU sed: the file name runs to the
// end of the line).
func sedScan(sc string) (runs bool, reads, writes []string) {
	i := 0
	n := len(sc)
	skipTo := func(stop string) {
		for i < n && strings.IndexByte(stop, sc[i]) < 0 {
			i++
		}
	}
	fileName := func() string {
		for i < n && (sc[i] == ' ' || sc[i] == '\t') {
			i++
		}
		start := i
		skipTo("\n")
		return sc[start:i]
	}
	delimited := func() bool { // reads d…d…d starting at the delimiter; false if unterminated
		if i >= n {
			return false
		}
		d := sc[i]
		i++
		for parts := 0; parts < 2; parts++ {
			for i < n && sc[i] != d {
				if sc[i] == '\\' {
					i++
				}
				i++
			}
			if i >= n {
				return false
			}
			i++
		}
		return true
	}
	for i < n {
		for i < n && strings.IndexByte(" \t\n;{}!", sc[i]) >= 0 {
			i++
		}
		if i >= n {
			break
		}
		// Address: numbers, $, /re/, \cREc, first~step, ranges.
		for i < n {
			c := sc[i]
			switch {
			case c >= '0' && c <= '9' || c == '$' || c == ',' || c == '~' || c == '+' || c == ' ' || c == '!':
				i++
				continue
			case c == '/':
				i++
				for i < n && sc[i] != '/' {
					if sc[i] == '\\' {
						i++
					}
					i++
				}
				i++
				for i < n && (sc[i] == 'I' || sc[i] == 'M') {
					i++
				}
				continue
			case c == '\\' && i+1 < n:
				d := sc[i+1]
				i += 2
				for i < n && sc[i] != d {
					i++
				}
				i++
				continue
			}
			break
		}
		if i >= n {
			break
		}
		c := sc[i]
		i++
		switch c {
		case 'e':
			runs = true
			skipTo("\n")
		case 'w', 'W':
			runs = true
			if f := fileName(); f != "" {
				writes = append(writes, f)
			}
		case 'r', 'R':
			if f := fileName(); f != "" {
				reads = append(reads, f)
			}
		case 's':
			if !delimited() {
				return runs, reads, writes
			}
			for i < n && strings.IndexByte(";\n}", sc[i]) < 0 {
				if sc[i] == 'e' {
					runs = true
				}
				if sc[i] == 'w' {
					runs = true
					i++
					if f := fileName(); f != "" {
						writes = append(writes, f)
					}
					break
				}
				i++
			}
		case 'y':
			if !delimited() {
				return runs, reads, writes
			}
		case 'a', 'i', 'c', 'b', 't', 'T', ':', 'q', 'Q', 'l', 'L', 'v', 'F', 'z':
			skipTo("\n;")
		case '{', '}', ';':
		default:
		}
	}
	return runs, reads, writes
}

// awkRuns finds what makes an awk program run commands or write files:
// system(), pipes to or from commands (print | "cmd", "cmd" | getline,
// print | var), and output redirection (print > "file").
var awkRuns = lazyre.New(`\bsystem\s*\(|\|\s*(getline|"|&)|\|\s*[A-Za-z_]\w*\s*($|[;}\n])|\bprintf?\b[^;{}\n]*>`)

// awkCmd judges awk programs that run commands or write files.
func (a *analyzer) awkCmd(s *segCtx) bool {
	if _, ok := optValue(s.args, "-f", "--file"); ok {
		a.add(guard.Finding{Check: "shell.awk-exec", Level: action.Confirm, Message: s.name + " runs a program file"})
		return false
	}
	var prog arg
	progs := 0
	for j := 0; j < len(s.args); j++ {
		x := s.args[j]
		switch {
		case x.val == "-e" || x.val == "--source":
			if j+1 < len(s.args) {
				prog = s.args[j+1]
				progs++
				j++
			}
		case x.val == "-F" || x.val == "-v" || x.val == "--assign" || x.val == "--field-separator":
			j++
		case strings.HasPrefix(x.val, "-") && !x.dyn && len(x.val) > 1:
		default:
			if progs == 0 {
				prog = x
				progs++
			}
		}
	}
	switch {
	case prog.dyn:
		a.add(guard.Finding{Check: "shell.awk-exec", Level: action.Confirm,
			Message: s.name + " runs a program computed at run time"})
	case awkRuns.MatchString(prog.val):
		a.add(guard.Finding{Check: "shell.awk-exec", Level: action.Confirm,
			Message: "the " + s.name + " program runs commands or writes files: " + clip(prog.val, 120)})
		a.inlineCode(s.name, prog.val, s.idx) // inline.go: system("…")
	}
	return false
}

// sortCmd judges sort -o.
func (a *analyzer) sortCmd(s *segCtx) bool {
	if x, ok := optValue(s.args, "-o", "--output"); ok {
		a.writeTarget(x, "sort writes to")
	}
	return false
}

// cdCmd follows the working directory.
func (a *analyzer) cdCmd(s *segCtx) bool {
	if s.name == "popd" {
		a.cwdKnown = false
		return false
	}
	ops := operandsOf(s.args)
	switch {
	case len(ops) == 0:
		if s.name == "cd" && a.env.Home != "" {
			a.cwd, a.cwdKnown = a.env.Home, true
		} else if s.name == "cd" {
			a.cwdKnown = false
		}
	case ops[0].dyn || ops[0].val == "-" || strings.HasPrefix(ops[0].val, "+"):
		a.cwdKnown = false
	default:
		if p, ok := a.cdPath(ops[0].val); ok {
			a.cwd, a.cwdKnown = p, true
			return false
		}
		if p, ok := a.abs(ops[0].val); ok {
			if _, win := windowsPath(p); !win && !strings.HasPrefix(p, "~") {
				a.cwd, a.cwdKnown = p, true
				return false
			}
		}
		a.cwdKnown = false
	}
	return false
}

// cdPath resolves a relative cd target through CDPATH when the command sets
// it (CDPATH=~ cd .overseer lands in ~/.overseer): the first entry that
// holds the directory wins, as in bash. ok is false when CDPATH is not set
// in the command or does not apply.
func (a *analyzer) cdPath(dir string) (string, bool) {
	st, set := a.vars["CDPATH"]
	if !set || dir == "" || strings.HasPrefix(dir, "/") || strings.HasPrefix(dir, "./") || strings.HasPrefix(dir, "../") || dir == "." || dir == ".." {
		return "", false
	}
	if st.dyn {
		return "", false
	}
	for _, e := range strings.Split(st.val, ":") {
		if e == "" {
			e = "."
		}
		base, ok := a.abs(e)
		if !ok {
			continue
		}
		p := path.Join(a.expandHome(base), dir)
		if a.isDir(p) {
			return p, true
		}
	}
	return "", false
}

// varsCmd forgets the variables read, mapfile, getopts and unset set.
func (a *analyzer) varsCmd(s *segCtx) bool {
	switch s.name {
	case "read":
		ops := operandsOf(s.args, "-d", "-n", "-N", "-p", "-t", "-u", "-i", "-a")
		if x, ok := optValue(s.args, "-a"); ok {
			a.setVar(x.val, "", true)
		}
		// read X <<< WORD: X is the word's first line (a plain read of
		// static text; several names split it at blanks).
		in := a.stdinOf(s.c.redirs)
		_, hasD := optValue(s.args, "-d")
		if in.kind == 'd' && !in.dyn && !hasD && !anyDyn(ops) && len(ops) > 0 {
			line, _, _ := strings.Cut(in.text, "\n")
			if !hasFlag(s.args, "-r") && strings.Contains(line, `\`) {
				line = strings.ReplaceAll(line, `\`, "") // not followed: escapes are removed
			}
			fields := strings.Fields(line)
			for i, x := range ops {
				switch {
				case i == len(ops)-1 && i < len(fields):
					rest := strings.TrimSpace(line)
					for k := 0; k < i; k++ {
						rest = strings.TrimSpace(strings.TrimPrefix(rest, fields[k]))
					}
					a.setVar(x.val, rest, false)
				case i < len(fields):
					a.setVar(x.val, fields[i], false)
				default:
					a.setVar(x.val, "", false)
				}
			}
			break
		}
		for _, x := range ops {
			a.setVar(x.val, "", true)
		}
		a.setVar("REPLY", "", true)
	case "mapfile", "readarray":
		ops := operandsOf(s.args, "-d", "-n", "-O", "-s", "-u", "-C", "-c")
		for _, x := range ops {
			a.setVar(x.val, "", true)
		}
	default:
		for _, x := range operandsOf(s.args) {
			a.setVar(x.val, "", true)
		}
	}
	return false
}

// echoCmd records the static text echo prints, for a shell it may feed.
func (a *analyzer) echoCmd(s *segCtx) bool {
	args := s.args
	escapes, newline := false, true
	for len(args) > 0 && len(args[0].val) > 1 && args[0].val[0] == '-' && strings.Trim(args[0].val[1:], "neE") == "" {
		escapes = escapes || strings.Contains(args[0].val, "e")
		newline = newline && !strings.Contains(args[0].val, "n")
		args = args[1:]
	}
	if anyDyn(args) {
		return false
	}
	t := joinVals(args)
	if escapes && strings.Contains(t, `\`) {
		if strings.Contains(t, `\c`) {
			return false
		}
		t = ansiC(t)
	}
	if newline {
		t += "\n"
	}
	a.setText(s.idx, t)
	return false
}

// printfCmd records the static text printf prints, and forgets printf -v.
func (a *analyzer) printfCmd(s *segCtx) bool {
	if x, ok := optValue(s.args, "-v"); ok {
		// printf -v X FORMAT ARGS: X is the text printf would print.
		ops := operandsOf(s.args, "-v")
		if len(ops) > 0 && !anyDyn(ops) && !x.dyn {
			if t, ok := printfText(ops[0].val, vals(ops[1:])); ok {
				a.setVar(x.val, t, false)
				return false
			}
		}
		a.setVar(x.val, "", true)
		return false
	}
	ops := operandsOf(s.args)
	if len(ops) == 0 || anyDyn(ops) {
		return false
	}
	if t, ok := printfText(ops[0].val, vals(ops[1:])); ok {
		a.setText(s.idx, t)
	}
	return false
}

// catCmd records a here-document cat prints.
func (a *analyzer) catCmd(s *segCtx) bool {
	ops := operandsOf(s.args)
	if len(ops) == 0 || len(ops) == 1 && ops[0].val == "-" {
		a.passText(s, func(t string) (string, bool) { return t, true })
	}
	for _, x := range ops {
		if !x.dyn {
			p, known := a.abs(x.val)
			a.pathFact(p, known, action.PathRead)
		}
	}
	return false
}

func (a *analyzer) setText(idx int, t string) {
	a.out.Segments[idx].flags |= fText
	a.out.Segments[idx].text = t
}

// touchCmd judges mkdir, touch and truncate by where they write.
func (a *analyzer) touchCmd(s *segCtx) bool {
	for _, t := range operandsOf(s.args, "-m", "--mode", "-d", "--date", "-t", "-r", "--reference", "-s", "--size", "-o") {
		if t.glob {
			t.val = t.pat
		}
		a.writeTarget(t, s.name+" writes")
	}
	return false
}

// tarCmd judges where tar extracts and whether it runs commands.
func (a *analyzer) tarCmd(s *segCtx) bool {
	if anyFlag(s.args, "--to-command", "--checkpoint-action", "--info-script", "--new-volume-script", "-F", "--rsh-command") {
		a.add(guard.Finding{Check: "shell.tar-exec", Level: action.Confirm, Message: "tar runs a command: " + describeArgs("tar", s.args)})
		a.tarRuns(s) // foreign.go
	}
	extract := anyFlag(s.args, "-x", "--extract", "--get")
	if len(s.args) > 0 && !s.args[0].dyn && !strings.HasPrefix(s.args[0].val, "-") && strings.Contains(s.args[0].val, "x") {
		extract = true
	}
	if !extract {
		return false
	}
	dir, ok := optValue(s.args, "-C", "--directory")
	if !ok {
		dir = arg{val: "."}
	}
	a.unpacksInto(s, dir) // unseen.go
	if dir.dyn {
		a.add(guard.Finding{Check: "shell.write-dynamic", Level: action.Confirm, Message: "tar extracts into a directory computed at run time"})
		return false
	}
	file, o, ok := tarArchive(s.args)
	if !ok || !file.dyn && file.val == "-" {
		// No -f, or -f -: the standard input (tar x < a.tar reads a.tar).
		if in := a.stdinOf(s.c.redirs); in.kind == 'f' && !in.dyn {
			file, ok = in.file, true
		}
	}
	if ok {
		a.archiveWrites(s, file, dir, o) // archives.go
	}
	p, known := a.abs(dir.val)
	if d := a.danger(p); d != dangerNone {
		a.add(guard.Finding{Check: "shell.tar-overwrite", Level: action.Approve,
			Message: "tar extracts into " + d.describe(p) + " and may overwrite its files"})
		return false
	}
	a.writeTarget(arg{val: dir.val}, "tar extracts into")
	_ = known
	return false
}

// busyboxCmd judges "busybox APPLET args" as the applet.
func (a *analyzer) busyboxCmd(s *segCtx) bool {
	if len(s.args) == 0 || s.args[0].val == "--help" || s.args[0].val == "--list" {
		return false
	}
	a.bump(action.Auto)
	wc := a.out.Segments[s.idx].Wrappers
	a.out.Segments[s.idx].Wrappers = append(wc[:len(wc):len(wc)], "busybox")
	a.nestedCommand(s.args, cmdCtx{origin: s.c.origin, redirs: s.c.redirs, extraDyn: s.c.extraDyn}, s.idx)
	a.out.Segments[s.idx].Wrappers = wc
	return true
}

// netSend judges a program that sends data: a secret among its arguments,
// on its standard input, or read by a substitution in its arguments is
// leaked.
func (a *analyzer) netSend(s *segCtx) {
	for _, x := range s.args {
		if !x.dyn && a.isSecretArg(x.val) {
			a.add(guard.Finding{Check: "shell.secret-exfil", Level: action.Approve, Hard: true,
				Message: s.name + " sends the secret file " + x.val + " over the network"})
			return
		}
		if x.sub[1] > x.sub[0] && a.secretIn(x.sub[0], x.sub[1]) {
			a.add(guard.Finding{Check: "shell.secret-exfil", Level: action.Approve, Hard: true,
				Message: s.name + " sends the contents of a secret file over the network: " + x.val})
			return
		}
	}
	if in := a.stdinOf(s.c.redirs); in.kind == 'f' && !in.dyn {
		if p, _ := a.abs(in.file.val); a.r.secret(p) {
			a.add(guard.Finding{Check: "shell.secret-exfil", Level: action.Approve, Hard: true,
				Message: s.name + " sends the secret file " + in.file.val + " over the network"})
		}
	}
}

// shellCmd judges a shell: -c strings are analysed, script files run, and
// code read from standard input is judged by where it comes from.
func (a *analyzer) shellCmd(s *segCtx) bool {
	args := s.args
	cmode, stdinMode := false, false
	j := 0
	for j < len(args) {
		x := args[j]
		v := x.val
		if x.dyn {
			break
		}
		if v == "--" || v == "-" {
			j++
			stdinMode = stdinMode || v == "-"
			break
		}
		if strings.HasPrefix(v, "--") {
			if v == "--rcfile" || v == "--init-file" {
				j++
			}
			if v == "--version" || v == "--help" {
				a.class("readonly", action.Auto, s.name+" "+v)
				return true
			}
			j++
			continue
		}
		if len(v) > 1 && (v[0] == '-' || v[0] == '+') {
			for k := 1; k < len(v); k++ {
				switch v[k] {
				case 'c':
					cmode = true
				case 's':
					stdinMode = true
				case 'o', 'O':
					j++
				}
			}
			j++
			continue
		}
		break
	}
	rest := args[min(j, len(args)):]
	switch {
	case cmode:
		a.bump(action.Auto)
		if len(rest) == 0 {
			return true
		}
		if rest[0].dyn {
			a.dynamicCode(rest[0], s.name+" -c runs a string computed at run time: "+rest[0].val)
			return true
		}
		if rest[0].decoded {
			a.decodedRuns(s.name, rest[0].val)
		}
		// The words after the string are $0, $1, …
		pos, known := a.pos, a.posKnown
		a.pos, a.posKnown = nil, true
		if len(rest) > 1 {
			a.pos = append([]arg(nil), rest[2:]...)
		}
		a.nestedScript(rest[0].val, OriginShellC, s.idx)
		a.pos, a.posKnown = pos, known
	case len(rest) > 0 && !stdinMode:
		a.scriptFile(s, rest[0])
	default:
		a.stdinCode(s, true)
	}
	return true
}

// interpCmd judges an interpreter: inline code needs a confirmation (the
// guard does not parse other languages), scripts and modules run as
// development commands.
func (a *analyzer) interpCmd(s *segCtx, inline []string) bool {
	if s.name == "perl" && a.perlSubstitute(s) { // refactor.go
		return true
	}
	args := s.args
	ps := s.name == "pwsh" || s.name == "powershell"
	ranSub := false
	for j := 0; j < len(args); j++ {
		x := args[j]
		v := x.val
		lv := strings.ToLower(v)
		if x.dyn {
			a.dynamicCode(x, s.name+" runs code computed at run time: "+v)
			return true
		}
		code, inl, attached := arg{}, false, false
		for _, o := range inline {
			if lv == o {
				inl = true
				break
			}
			// A group is an option (-ne): a script's name ending in the
			// letter (node app, python3 magic) is not inline code.
			if len(o) != 2 || o[1] == '-' || ps || len(lv) <= 2 || lv[0] != '-' || strings.HasPrefix(lv, "--") {
				continue
			}
			if isLetters(lv[1:]) && len(lv) <= 6 && lv[len(lv)-1] == o[1] {
				inl = true // a group ending in the option: perl -ne 'code'
				break
			}
			if strings.HasPrefix(lv, o) {
				inl, attached = true, true
				code = arg{val: v[2:]}
				break
			}
		}
		if inl {
			if !attached {
				if j+1 >= len(args) {
					return true
				}
				code = args[j+1]
			}
			if code.dyn {
				a.dynamicCode(code, s.name+" runs code computed at run time: "+code.val)
			} else {
				level := action.Confirm
				if len(args) == 2 && j == 0 && !attached && !code.decoded && a.cwdKnown && a.filterReads(s.name, code.val) { // jsonfilter.go
					level = action.Notify
				}
				a.add(guard.Finding{Check: "shell.inline-code", Level: level,
					Message: s.name + " runs inline code: " + clip(code.val, 160)})
				if code.decoded {
					a.decodedRuns(s.name, code.val)
				}
				if !ps || !a.foreignScript(code.val, OriginInline, s.idx) {
					a.inlineCode(s.name, code.val, s.idx) // inline.go
				}
			}
			return true
		}
		if ps && (lv == "-encodedcommand" || lv == "-enc" || lv == "-ec" || lv == "-e" || lv == "-en" || lv == "-encoded") {
			a.add(guard.Finding{Check: "shell.obfuscated", Level: action.Approve, Hard: true,
				Message: s.name + " runs an encoded command that cannot be read"})
			return true
		}
		switch {
		case lv == "-m" && strings.HasPrefix(s.name, "python") || lv == "-m" && s.name == "pypy":
			mod := "?"
			if j+1 < len(args) {
				mod = args[j+1].val
				a.moduleUnpacks(s, mod, args[j+2:]) // unseen.go
			}
			a.class("dev", action.Notify, s.name+" -m "+mod)
			// A module of the working directory runs as a script would
			// (python -m tools.sync): judged by what its code names.
			if f, ok := a.pythonModuleFile(a.cwdPath(), mod); ok {
				a.interpScript(s, f)
			}
			return true
		case lv == "--version" || lv == "-v" || lv == "-version" || lv == "--help" || lv == "-h":
			a.class("readonly", action.Auto, s.name+" "+v)
			return true
		case v == "-":
			a.stdinCode(s, false)
			return true
		case strings.HasPrefix(v, "-"):
			if (v == "-W" || v == "-X" || v == "-r" || v == "--require" || v == "--import" || v == "--loader" || v == "-I") && j+1 < len(args) {
				j++
			}
			continue
		case v == "run" && (s.name == "deno" || s.name == "bun") && !ranSub:
			// deno run FILE, bun run FILE: the file is the script.
			ranSub = true
			continue
		}
		a.scriptFile(s, x)
		return true
	}
	a.stdinCode(s, false)
	return true
}

// scriptFile judges a shell or interpreter running a script file.
func (a *analyzer) scriptFile(s *segCtx, f arg) {
	if f.code != nil {
		a.runText(s, *f.code, a.r.shells.has(s.name))
		return
	}
	if f.dyn {
		a.dynamicCode(f, s.name+" runs a script computed at run time: "+f.val)
		return
	}
	p, known := a.abs(f.val)
	if a.downloaded[p] {
		a.add(guard.Finding{Check: "shell.download-exec", Level: action.Approve, Hard: true,
			Message: s.name + " runs " + f.val + ", which this command downloaded"})
		return
	}
	if a.runsUnseen(s, f.val, p) {
		a.class("dev", action.Notify, s.name+" "+f.val)
		return
	}
	if a.r.shells.has(s.name) && a.runWritten(p, true, s.idx) {
		a.cur = s.idx
		a.class("dev", action.Notify, s.name+" "+f.val)
		return
	}
	if a.r.shells.has(s.name) {
		a.runStored(p, true, s.idx) // provenance.go: judged by its content
	} else {
		if w, ok := a.written[p]; ok && !a.known(w) {
			a.add(guard.Finding{Check: "shell.runs-unseen", Level: action.Confirm,
				Message: s.name + " runs " + f.val + ", which this command wrote with content not known before it runs"})
		}
		a.interpScript(s, p) // effects.go: the paths and deletions its code names
	}
	switch a.where(p, known) {
	case whereTree, whereUnknown:
		a.class("dev", action.Notify, s.name+" "+f.val)
	default:
		a.add(guard.Finding{Check: "shell.script-outside", Level: action.Confirm,
			Message: s.name + " runs a script from outside the working tree: " + p})
	}
}

// stdinCode judges a shell (or an interpreter) that reads its code from
// standard input.
func (a *analyzer) stdinCode(s *segCtx, isShell bool) {
	in := a.stdinOf(s.c.redirs)
	switch in.kind {
	case 'd':
		switch {
		case in.dyn:
			a.dynamicCode(arg{val: "<<", sub: in.sub}, s.name+" runs a here-document computed at run time")
		case isShell:
			a.bump(action.Auto)
			a.nestedScript(in.text, OriginStdin, s.idx)
		default:
			a.add(guard.Finding{Check: "shell.inline-code", Level: action.Confirm,
				Message: s.name + " runs inline code: " + clip(in.text, 160)})
			a.inlineCode(s.name, in.text, s.idx) // inline.go
		}
		return
	case 'f':
		a.scriptFile(s, in.file)
		return
	}
	if s.c.in != nil {
		a.runText(s, *s.c.in, isShell)
		return
	}
	if a.pipeIn {
		a.bump(action.Auto)
		a.out.Segments[s.idx].flags |= fExecStdin
		return
	}
	if isShell {
		a.add(guard.Finding{Check: "shell.interactive", Level: action.Confirm,
			Message: s.name + " starts an interactive shell"})
		return
	}
	a.class("dev", action.Notify, s.name)
}

// unzipCmd judges where unzip extracts.
func (a *analyzer) unzipCmd(s *segCtx) bool {
	dir, ok := optValue(s.args, "-d")
	if !ok {
		dir = arg{val: "."}
	}
	if !listsOnly(s.args) {
		a.unpacksInto(s, dir) // unseen.go
		if file, o, found := unzipArchive(s.args); found && !dir.dyn {
			a.archiveWrites(s, file, dir, o) // archives.go
		}
	}
	if !ok {
		return false
	}
	if dir.dyn {
		a.add(guard.Finding{Check: "shell.write-dynamic", Level: action.Confirm, Message: "unzip extracts into a directory computed at run time"})
		return false
	}
	if p, _ := a.abs(dir.val); a.danger(p) != dangerNone {
		a.add(guard.Finding{Check: "shell.tar-overwrite", Level: action.Approve,
			Message: "unzip extracts into " + a.danger(p).describe(p) + " and may overwrite its files"})
		return false
	}
	a.writeTarget(dir, "unzip extracts into")
	return false
}

// downloadCmd remembers the files curl and wget save, so that running one
// later in the command counts as running downloaded code.
func (a *analyzer) downloadCmd(s *segCtx) bool {
	if a.localDevSend(s) { // devloop.go
		a.class("dev-send", action.Notify, "curl to the project's dev server")
		return true
	}
	names := []string{"-o", "--output"}
	if s.name == "wget" {
		names = []string{"-O", "--output-document"}
	}
	if x, ok := optValue(s.args, names...); ok && !x.dyn && x.val != "-" {
		a.writeTarget(x, s.name+" saves to")
		a.markDownloaded(x.val)
	}
	return false
}

// atCmd judges at and batch, which run shell code later: the code comes
// from standard input or a file (-f).
func (a *analyzer) atCmd(s *segCtx) bool {
	a.add(guard.Finding{Check: "shell.schedule", Level: action.Confirm,
		Message: s.name + " schedules commands to run later"})
	if f, ok := optValue(s.args, "-f"); ok {
		a.scriptFile(s, f)
		return true
	}
	if hasFlag(s.args, "-l") || hasFlag(s.args, "-r") || hasFlag(s.args, "-d") || hasFlag(s.args, "-c") {
		return true
	}
	a.stdinCode(s, true)
	return true
}

// readCmd records the files a reading command reads.
func (a *analyzer) readCmd(s *segCtx) bool {
	for _, x := range operandsOf(s.args, "-n", "-c", "-s", "-l", "-o", "-t", "-w", "-f", "--lines", "--bytes") {
		if !x.dyn && !x.glob && x.val != "-" {
			p, known := a.abs(x.val)
			a.pathFact(p, known, action.PathRead)
		}
	}
	return false
}

// findWrites judges a command that find -exec runs on the files it finds:
// the writes happen under find's start directories.
func (a *analyzer) findWrites(f *findInfo, how string) {
	for _, st := range f.starts {
		if st.glob {
			st.val = st.pat
		}
		a.writeTarget(st, how)
	}
}
