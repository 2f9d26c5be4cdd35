package shell

import (
	"encoding/json"
	"path"
	"slices"
	"strings"

	"github.com/overseer-dev/overseer/internal/lazyre"
)

// The local modules a script imports run with it: a script that only
// imports a helper beside it (import helper; helper.go()) runs the
// helper's code as its own. interpScript judges the modules it can find
// the way it judges the script on disk — the absolute and home-relative
// paths their literals name, and what blocks — so that moving the code
// that reads a secret one import away does not hide it. Modules found on
// the interpreter's own path (the standard library, installed packages)
// are not followed: they are not the agent's to write unseen (writing
// them is judged as a write there).

// maxModules bounds the local modules followed from one script; a script
// that imports more reaches a person (what is not read is not judged).
const maxModules = 64

// moduleLang is the import syntax an interpreter's code uses: "python",
// "node", or "" for one whose imports are not followed.
func moduleLang(interp string) string {
	switch {
	case strings.HasPrefix(interp, "python"), interp == "pypy", interp == "pypy3":
		return "python"
	case interp == "node", interp == "nodejs", interp == "bun", interp == "deno", interp == "tsx", interp == "ts-node":
		return "node"
	}
	return ""
}

var (
	// pyImport matches `import a.b as c, d`, `from .a import b, c`,
	// `from . a import b` and `from a import (b,\n c)` at the start of a
	// line (or after a semicolon). Lines continued by a backslash are
	// joined first.
	pyImport = lazyre.New(`(?m)(?:^|;)[ \t]*(?:from[ \t]+((?:\.[ \t]*)*[A-Za-z_][\w.]*|(?:\.[ \t]*)+)[ \t]+import[ \t]*(?:\(([\w\s,*]*)\)|([\w \t,*]+))|import[ \t]+([\w., \t]+))`)
	// pyDynImport matches importlib.import_module("a.b"), __import__("a")
	// and runpy.run_module("a").
	pyDynImport = lazyre.New(`(?:import_module|__import__|run_module)\(\s*['"]([A-Za-z_][\w.]*)['"]`)
	// pyFileLoad matches the loaders that run a file by its path:
	// runpy.run_path("x.py"), importlib.util.spec_from_file_location("n",
	// "x.py"), SourceFileLoader("n", "x.py"), imp.load_source("n", "x.py").
	pyFileLoad = lazyre.New(`(?:run_path\(|(?:spec_from_file_location|SourceFileLoader|load_source)\(\s*['"][^'"\n]*['"]\s*,)\s*[rbfu]*['"]([^'"\n]{1,200})['"]`)
	// pySysPath matches sys.path.insert(i, …), sys.path.append(…) and
	// sys.path[:0] = […] / sys.path.extend([…]): the literals in what follows
	// are directories imports are looked up in.
	pySysPath = lazyre.New(`sys\.path(?:\.insert\(\s*-?\d+\s*,|\.append\(|\.extend\(|\[[^\]]*\]\s*=|\s*\+=)([^\n]{0,300})`)
	// pyString is a plain string literal.
	pyString = lazyre.New(`['"]([^'"\n]{1,200})['"]`)
	// nodeImport matches require("./x"), import … from "./x", import("./x"),
	// import "./x" and a required absolute path, in any quotes (a
	// template literal without substitutions too).
	nodeImport = lazyre.New("(?:require\\s*\\(\\s*|import\\s*\\(\\s*|\\bfrom\\s*|\\bimport\\s+)['\"`](/[^'\"`$\n]{1,200})['\"`]")
	// nodeRelative matches any string literal that starts with ./ or ../:
	// a specifier given to require by another name (createRequire's
	// function, a helper that wraps require) is one of these.
	nodeRelative = lazyre.New("['\"`](\\.\\.?/[^'\"`$\n]{1,200})['\"`]")
	// nodeDirname matches a path built from the script's directory:
	// path.join(__dirname, 'a', 'b'), path.resolve(__dirname, 'a'),
	// __dirname + '/a' and `${__dirname}/a`.
	nodeDirname = lazyre.New("__dirname\\s*(?:,|\\+)\\s*((?:['\"`][^'\"`$\n]{1,200}['\"`]\\s*(?:,|\\+)?\\s*)+)|\\$\\{__dirname\\}(/[^`$\n]{1,200})`")
	nodeString  = lazyre.New("['\"`]([^'\"`$\n]{1,200})['\"`]")
)

// nodeCodeExt: the extensions of files node (or bun, deno, tsx) runs as
// code; a file named with none runs as code too.
var nodeCodeExt = map[string]bool{"": true, ".js": true, ".mjs": true, ".cjs": true, ".ts": true, ".mts": true,
	".cts": true, ".jsx": true, ".tsx": true}

// localModules returns the files of the modules text imports that live
// under dir (the script's directory), or a directory the code adds to
// Python's path, or that a loader names relative to cwd (the directory
// the command runs in), as absolute paths, in order.
func (a *analyzer) localModules(lang, text, dir, cwd string) []string {
	return a.localModulesAt(lang, text, dir, cwd, -1)
}

// localModulesAt is localModules for the segment idx of the command (-1:
// none): a module file an earlier segment wrote, downloaded, unpacked,
// cloned or copied in counts as there, though it is not on disk yet.
func (a *analyzer) localModulesAt(lang, text, dir, cwd string, idx int) []string {
	var out []string
	add := func(cands ...string) {
		for _, c := range cands {
			if a.isRegular(c) || idx >= 0 && a.writtenBefore(c, idx) {
				out = append(out, c)
				return
			}
		}
	}
	// rel places p under base: absolute as it is, "" for a relative path
	// with no base.
	rel := func(base, p string) string {
		if path.IsAbs(p) {
			return path.Clean(p)
		}
		if base == "" {
			return ""
		}
		return path.Join(base, p)
	}
	switch lang {
	case "python":
		text = strings.ReplaceAll(text, "\\\n", " ")
		// The directories modules are looked up in: the script's own, and
		// those the code adds to sys.path (relative to the working
		// directory, or to the script's when built from __file__).
		bases := []string{dir}
		for _, m := range pySysPath.FindAllStringSubmatch(text, 8) {
			for _, l := range pyString.FindAllStringSubmatch(m[1], 4) {
				for _, b := range []string{rel(cwd, l[1]), rel(dir, l[1])} {
					if b != "" && !slices.Contains(bases, b) {
						bases = append(bases, b)
					}
				}
			}
		}
		pyModule := func(base, mod string) {
			// a.b.c: a/__init__.py, a/b/__init__.py run too.
			parts := strings.Split(mod, ".")
			for i := range parts {
				p := path.Join(append([]string{base}, parts[:i+1]...)...)
				if i < len(parts)-1 {
					add(p + "/__init__.py")
					continue
				}
				add(p+".py", p+"/__init__.py", p+"/__main__.py")
			}
		}
		absModule := func(mod string) {
			for _, b := range bases {
				pyModule(b, mod)
			}
		}
		for _, m := range pyImport.FindAllStringSubmatch(text, 64) {
			switch {
			case m[1] != "":
				from := strings.Map(func(r rune) rune {
					if r == ' ' || r == '\t' {
						return -1
					}
					return r
				}, m[1])
				names := m[2] + m[3]
				relative := strings.HasPrefix(from, ".")
				base := dir
				if dots := len(from) - len(strings.TrimLeft(from, ".")); dots > 0 {
					for range dots - 1 {
						base = path.Dir(base)
					}
					from = from[dots:]
				}
				mod := func(name string) {
					if relative {
						pyModule(base, name)
					} else {
						absModule(name)
					}
				}
				if from != "" {
					mod(from)
				}
				// from pkg import mod: mod may be a module of pkg.
				for _, name := range strings.Split(names, ",") {
					name = strings.TrimSpace(name)
					if i := strings.IndexAny(name, " \t\r\n"); i >= 0 {
						name = name[:i]
					}
					if name == "" || name == "*" {
						continue
					}
					if from != "" {
						name = from + "." + name
					}
					mod(name)
				}
			case m[4] != "":
				for _, name := range strings.Split(m[4], ",") {
					name, _, _ = strings.Cut(strings.TrimSpace(name), " ")
					if name != "" {
						absModule(name)
					}
				}
			}
		}
		for _, m := range pyDynImport.FindAllStringSubmatch(text, 16) {
			absModule(m[1])
		}
		for _, m := range pyFileLoad.FindAllStringSubmatch(text, 16) {
			// A path is opened relative to the working directory; a
			// script's own directory is tried too (built from __file__).
			for _, p := range []string{rel(cwd, m[1]), rel(dir, m[1])} {
				if p != "" {
					add(p)
				}
			}
		}
	case "node":
		var specs []string
		for _, m := range nodeImport.FindAllStringSubmatch(text, 64) {
			specs = append(specs, m[1])
		}
		for _, m := range nodeRelative.FindAllStringSubmatch(text, 64) {
			specs = append(specs, path.Join(dir, m[1]))
		}
		for _, m := range nodeDirname.FindAllStringSubmatch(text, 16) {
			p := m[2]
			for _, l := range nodeString.FindAllStringSubmatch(m[1], 8) {
				p = path.Join(p, l[1])
			}
			specs = append(specs, path.Join(dir, p))
		}
		seen := map[string]bool{}
		for _, p := range specs {
			if seen[p] {
				continue
			}
			seen[p] = true
			a.nodeModule(p, add)
		}
	}
	return out
}

// writtenBefore reports whether the command, before its segment idx,
// writes the file p: with text it knows, by a download, or unseen (an
// archive unpacked, a repository cloned, a directory copied in).
func (a *analyzer) writtenBefore(p string, idx int) bool {
	if _, ok := a.written[p]; ok {
		return true
	}
	return a.downloaded[p] || a.unseenBefore(p, idx) != ""
}

// nodeModule adds the file node loads for the module path p: p itself
// when it is code, p with an extension, the "main" its package.json
// names, or its index file.
func (a *analyzer) nodeModule(p string, add func(...string)) {
	var cands []string
	if nodeCodeExt[path.Ext(p)] {
		cands = append(cands, p)
	}
	for _, ext := range []string{".js", ".mjs", ".cjs", ".ts", ".mts", ".cts", ".jsx", ".tsx"} {
		cands = append(cands, p+ext)
	}
	if b, ok := a.readRegular(strings.TrimPrefix(p+"/package.json", "/"), 64<<10); ok {
		var pkg struct {
			Main string `json:"main"`
		}
		if json.Unmarshal(b, &pkg) == nil && pkg.Main != "" {
			m := path.Join(p, pkg.Main)
			cands = append(cands, m, m+".js", m+".cjs", m+".mjs", m+"/index.js")
		}
	}
	for _, ext := range []string{".js", ".mjs", ".cjs", ".ts", ".mts", ".cts", ".jsx", ".tsx"} {
		cands = append(cands, p+"/index"+ext)
	}
	add(cands...)
}

// pythonModuleFile is the file `python -m mod` runs from the working
// directory cwd, when the module is there: mod.py, or mod/__main__.py.
func (a *analyzer) pythonModuleFile(cwd, mod string) (string, bool) {
	if cwd == "" || !validModule.MatchString(mod) {
		return "", false
	}
	p := path.Join(cwd, strings.ReplaceAll(mod, ".", "/"))
	for _, c := range []string{p + ".py", p + "/__main__.py"} {
		if a.isRegular(c) {
			return c, true
		}
	}
	return "", false
}

var validModule = lazyre.New(`^[A-Za-z_]\w*(\.[A-Za-z_]\w*)*$`)

// isRegular reports whether the absolute path p is a regular file.
func (a *analyzer) isRegular(p string) bool {
	f, _, ok := a.openRegular(strings.TrimPrefix(p, "/"))
	if ok {
		f.Close()
	}
	return ok
}
