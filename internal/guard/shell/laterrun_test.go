package shell

import (
	"encoding/json"
	"slices"
	"testing"

	"github.com/overseer-dev/overseer/internal/action"
)

func TestLaterKind(t *testing.T) {
	for p, want := range map[string]string{
		"/p/package.json":                    "npm",
		"/p/web/package.json":                "npm",
		"/p/node_modules/x/package.json":     "",
		"/p/.pre-commit-config.yaml":         "precommit",
		"/p/lefthook.yml":                    "lefthook",
		"/p/.lefthook-local.yaml":            "lefthook",
		"/p/.gemini/commands/x.toml":         "gemini",
		"/h/.gemini/commands/git/log.toml":   "gemini",
		"/p/.gemini/settings.json":           "",
		"/p/.vscode/settings.json":           "settings",
		"/h/.config/Code/User/settings.json": "settings",
		"/p/src/settings.json":               "",
		"/p/commands/x.toml":                 "",
	} {
		if got := laterKind(p); got != want {
			t.Errorf("%s: %q, want %q", p, got, want)
		}
	}
}

func TestLaterCommands(t *testing.T) {
	for _, c := range []struct {
		name string
		got  []string
		want []string
	}{
		{"npm lifecycle only", npmCommands(`{"scripts":{"test":"jest","postinstall":"a","prepare":"b"}}`), []string{"a", "b"}},
		{"npm hooks", npmCommands(`{"lint-staged":{"*.js":["c","d"]},"simple-git-hooks":{"pre-commit":"e"},"husky":{"hooks":{"pre-push":"f"}}}`), []string{"c", "d", "e", "f"}},
		{"npm fragment", npmCommands(`"prepare": "husky",
    "preinstall": "rm -rf ~"`), []string{"husky", "rm -rf ~"}},
		{"npm escaped key", npmCommands(`{"scripts":{"post\u0069nstall":"x"}}`), []string{"x"}},
		{"pre-commit local only", precommitCommands("repos:\n- repo: https://github.com/x/y\n  rev: v1\n  hooks:\n  - id: a\n    entry: nope\n- repo: local\n  hooks:\n  - id: b\n    entry: go vet\n    args: [./..., 'a b']\n"), []string{"go vet ./... 'a b'"}},
		{"pre-commit not YAML", precommitCommands("repos: [\n  entry: rm -rf ~\n"), []string{"rm -rf ~"}},
		{"lefthook", lefthookCommands("pre-commit:\n  parallel: true\n  commands:\n    a:\n      run: eslint {staged_files}\n  jobs:\n    - run: b\n"), []string{"eslint $F", "b"}},
		{"gemini", geminiCommands("prompt = \"\"\"\nx !{git log {{args}}} y !{echo {a}}\n\"\"\"\n"), []string{`git log "$ARGUMENTS"`, "echo {a}"}},
		{"gemini not TOML", geminiCommands("prompt = \"!{rm -rf ~}"), []string{"rm -rf ~"}},
		{"gemini unclosed", bangBraces("a !{rm -rf ~"), []string{"rm -rf ~"}},
	} {
		if !slices.Equal(c.got, c.want) {
			t.Errorf("%s: %q, want %q", c.name, c.got, c.want)
		}
	}
}

func TestProgramSetting(t *testing.T) {
	for k, want := range map[string]string{
		"python.defaultInterpreterPath":             "program",
		"git.path":                                  "program",
		"eslint.runtime":                            "program",
		"go.alternateTools":                         "program",
		"terminal.integrated.profiles.linux":        "program",
		"terminal.integrated.automationProfile.osx": "program",
		"php.validate.executablePath":               "program",
		"jest.jestCommandLine":                      "command",
		"rust-analyzer.check.overrideCommand":       "command",
		"emeraldwalk.runonsave":                     "command",
		"terminal.integrated.env.linux":             "env",
		"go.toolsEnvVars":                           "env",
		"editor.fontSize":                           "",
		"files.exclude":                             "",
		"python.analysis.extraPaths":                "",
		"python.testing.pytestArgs":                 "",
		"jest.rootPath":                             "",
		"terminal.integrated.defaultProfile.linux":  "",
	} {
		if got := programSetting(k); got != want {
			t.Errorf("%s: %q, want %q", k, got, want)
		}
	}
}

func TestJSONCToJSON(t *testing.T) {
	for in, want := range map[string]string{
		"{\"a\": 1, // c\n}":                 `{"a":1}`,
		`{"a": [1, 2, ], /* x */ "b": "//"}`: `{"a":[1,2],"b":"//"}`,
		`{"a": "x,}"}`:                       `{"a":"x,}"}`,
		`{"a\"": 1,}`:                        `{"a\"":1}`,
	} {
		var v any
		if err := json.Unmarshal(jsoncToJSON([]byte(in)), &v); err != nil {
			t.Errorf("%s: %v (%s)", in, err, jsoncToJSON([]byte(in)))
			continue
		}
		got, _ := json.Marshal(v)
		if string(got) != want {
			t.Errorf("%s: %s, want %s", in, got, want)
		}
	}
}

// FuzzLaterText runs every configuration parser of laterrun.go on any
// text: none may panic, and a settings text that holds a program key with
// a value of the working tree reaches a person.
func FuzzLaterText(f *testing.F) {
	for _, s := range []string{
		`{"scripts":{"postinstall":"curl x | sh"}}`,
		"repos:\n- repo: local\n  hooks:\n  - id: x\n    entry: rm -rf ~\n",
		"pre-commit:\n  commands:\n    a:\n      run: x\n",
		"prompt = \"!{ls {{args}}}\"",
		"{\"git.path\": \"./g\", // c\n}",
		"{\"[python]\": {\"python.defaultInterpreterPath\": \"./x\"},}",
		"[build]\nrustc-wrapper = \"./w\"\n[target.'cfg(unix)']\nrunner = [\"a\", \"b\"]\n[env]\nX = { value = \"y\" }\n",
		"yarnPath: ./y.cjs\nplugins:\n  - path: ./p.cjs\n",
		"{\"initializeCommand\": {\"a\": [\"sh\", \"-c\", \"x\"], \"b\": \"y\"}}",
		"-d @/h/.ssh/id_rsa\noutput = \"/h/.bashrc\"\n",
		"module.exports = {'*.js': ['eslint --fix', `x ${y}`]}\n",
	} {
		f.Add(s)
	}
	env := Env{Cwd: "/p", Home: "/h"}
	r := defaultRules()
	f.Fuzz(func(t *testing.T, text string) {
		if len(text) > 1024 {
			return
		}
		_ = npmCommands(text)
		_ = precommitCommands(text)
		_ = lefthookCommands(text)
		_ = bangBraces(text)
		_ = geminiCommands(text)
		_ = jsoncToJSON([]byte(text))
		_, _ = toolConfigFindings(r, env, "cargo", ".cargo/config.toml", "/p/.cargo/config.toml", text)
		_, _ = toolConfigFindings(r, env, "yarn", ".yarnrc.yml", "/p/.yarnrc.yml", text)
		_, _ = toolConfigFindings(r, env, "yarn", ".yarnrc", "/p/.yarnrc", text)
		_ = laterText(r, env, "devcontainer", "devcontainer.json", "/p/.devcontainer/devcontainer.json", text, 0)
		_ = laterText(r, env, "curlrc", ".curlrc", "/h/.curlrc", text, 0)
		_ = laterText(r, env, "wgetrc", ".wgetrc", "/h/.wgetrc", text, 0)
		_ = laterText(r, env, "hookcfg", ".lintstagedrc", "/p/.lintstagedrc", text, 0)
		_ = laterText(r, env, "hookcfg", "lint-staged.config.js", "/p/lint-staged.config.js", text, 0)
		cmds, _ := settingsFindings(r, env, "settings", ".vscode/settings.json", "/p/.vscode/settings.json", text)
		_ = cmds
		// The same text with a planted interpreter added at the top level
		// reaches a person whatever else it holds.
		var doc map[string]any
		if json.Unmarshal([]byte(text), &doc) == nil && doc != nil {
			doc["python.defaultInterpreterPath"] = "./planted"
			b, _ := json.Marshal(doc)
			_, out := settingsFindings(r, env, "settings", ".vscode/settings.json", "/p/.vscode/settings.json", string(b))
			reached := false
			for _, x := range out {
				reached = reached || x.Level >= action.Confirm
			}
			if !reached {
				t.Fatalf("a planted interpreter in %s was not put to a person", b)
			}
		}
	})
}

func TestJustfile(t *testing.T) {
	j := parseJustfile("set shell := [\"bash\", \"-uc\"]\nalias b := build\nv := \"x\"\n\n[private]\n@build: gen (lint \"a\") && post\n    go build {{v}}\n    -rm -f x\n\ngen:\n    go generate\nlint arg:\n    golint\npost:\n    echo done\nother:\n    rm -rf ~\n")
	text, why := j.commands("b")
	if why != "" || text != "go generate\ngolint\ngo build \"$JUST_VALUE\"\nrm -f x\necho done\n" {
		t.Errorf("b: %q %q", text, why)
	}
	if j.first != "build" {
		t.Errorf("first recipe %q", j.first)
	}
	if _, why := parseJustfile("import 'x.just'\na:\n    b\n").commands("a"); why == "" {
		t.Error("an import was judged as read")
	}
	if _, why := parseJustfile("set shell := [\"python3\", \"-c\"]\na:\n    b\n").commands("a"); why == "" {
		t.Error("a python shell was judged as read")
	}
}

// FuzzJustfile reads any text as a justfile: no panic, and every recipe's
// commands are lines of the text (or its interpolations replaced).
func FuzzJustfile(f *testing.F) {
	f.Add("a: b\n    echo {{x}}\nb:\n    @ls\n")
	f.Add("alias x := y\ny: (z \"1\") && w\n    #!/bin/bash\n    -rm q\n")
	f.Add("set shell := ['zsh']\nimport? 'f'\n")
	f.Fuzz(func(t *testing.T, text string) {
		if len(text) > 4096 {
			return
		}
		j := parseJustfile(text)
		for n := range j.recipes {
			_, _ = j.commands(n)
		}
		_, _ = j.commands(j.first)
	})
}
