package shell

import (
	"path"
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

// maxModules bounds the local modules followed from one script.
const maxModules = 16

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
	// pyImport matches `import a.b as c, d` and `from .a import b, c`
	// at the start of a line (or after a semicolon).
	pyImport = lazyre.New(`(?m)(?:^|;)[ \t]*(?:from[ \t]+(\.*[A-Za-z_][\w.]*|\.+)[ \t]+import[ \t]+\(?([\w \t,*]+)|import[ \t]+([\w., \t]+))`)
	// pyDynImport matches importlib.import_module("a.b") and __import__("a").
	pyDynImport = lazyre.New(`(?:import_module|__import__)\(\s*['"]([A-Za-z_][\w.]*)['"]`)
	// nodeImport matches require("./x"), import … from "./x", import("./x")
	// and import "./x": relative specifiers only.
	nodeImport = lazyre.New(`(?:require\s*\(\s*|import\s*\(\s*|\bfrom\s*|\bimport\s+)['"](\.\.?/[^'"\n]{1,200})['"]`)
)

// localModules returns the files of the modules text imports that live
// under dir (the script's directory), as absolute paths, in order.
func (a *analyzer) localModules(lang, text, dir string) []string {
	var out []string
	add := func(cands ...string) {
		for _, c := range cands {
			if a.isRegular(c) {
				out = append(out, c)
				return
			}
		}
	}
	switch lang {
	case "python":
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
		for _, m := range pyImport.FindAllStringSubmatch(text, 64) {
			switch {
			case m[1] != "":
				from := m[1]
				base := dir
				if dots := len(from) - len(strings.TrimLeft(from, ".")); dots > 0 {
					for range dots - 1 {
						base = path.Dir(base)
					}
					from = from[dots:]
				}
				if from != "" {
					pyModule(base, from)
				}
				// from pkg import mod: mod may be a module of pkg.
				for _, name := range strings.Split(m[2], ",") {
					name, _, _ = strings.Cut(strings.TrimSpace(name), " ")
					if name == "" || name == "*" {
						continue
					}
					if from != "" {
						name = from + "." + name
					}
					pyModule(base, name)
				}
			case m[3] != "":
				for _, name := range strings.Split(m[3], ",") {
					name, _, _ = strings.Cut(strings.TrimSpace(name), " ")
					if name != "" {
						pyModule(dir, name)
					}
				}
			}
		}
		for _, m := range pyDynImport.FindAllStringSubmatch(text, 16) {
			pyModule(dir, m[1])
		}
	case "node":
		for _, m := range nodeImport.FindAllStringSubmatch(text, 64) {
			p := path.Join(dir, m[1])
			add(p, p+".js", p+".mjs", p+".cjs", p+".ts", p+".mts", p+".cts", p+".jsx", p+".tsx",
				p+"/index.js", p+"/index.mjs", p+"/index.ts")
		}
	}
	return out
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
