package shell

import (
	"encoding/json"
	"path"
	"strings"

	"go.yaml.in/yaml/v3"
)

// Configuration files of the git hook managers of the JavaScript world, in
// their own files rather than package.json (laterrun.go reads that):
// lint-staged's (lint-staged.config.js, .lintstagedrc, .lintstagedrc.json,
// .yaml, .js, .cjs, .mjs …), simple-git-hooks' and husky 4's (.huskyrc,
// husky.config.js). Their commands run at the next commit, the person's
// too. JSON and YAML files are read whole: every string under the globs
// or hooks is a command. A JavaScript file is read for its string values
// (a key's string, one followed by a colon, is a glob or a hook name; a
// module's name is neither): each is a command, a template's ${…} a value
// not known. Code that builds a command from pieces or decodes one ('cu' +
// 'rl', String.fromCharCode, atob, Buffer), or runs one itself
// (child_process, eval), reaches a person: what it runs is not in its text.

// hookConfigKind returns "hookcfg" when p (lower-cased, cleaned) is such a
// file, or "".
func hookConfigKind(lp string) string {
	base := path.Base(lp)
	switch base {
	case ".lintstagedrc", ".huskyrc", ".simple-git-hooks", "simple-git-hooks":
		return "hookcfg"
	}
	stem, ext := base, path.Ext(base)
	stem = strings.TrimSuffix(stem, ext)
	switch ext {
	case ".json", ".yaml", ".yml", ".js", ".cjs", ".mjs", ".ts", ".cts", ".mts", ".json5":
	default:
		return ""
	}
	switch stem {
	case ".lintstagedrc", "lint-staged.config", ".huskyrc", "husky.config", ".simple-git-hooks", "simple-git-hooks",
		".simple-git-hooks.config", "simple-git-hooks.config":
		return "hookcfg"
	}
	return ""
}

// hookConfigCommands returns the commands of a hook manager's
// configuration text (file base name base), or why they cannot be read.
func hookConfigCommands(base, text string) ([]string, string) {
	ext := path.Ext(strings.ToLower(base))
	switch ext {
	case ".js", ".cjs", ".mjs", ".ts", ".cts", ".mts":
		return jsConfigCommands(text)
	}
	var doc any
	if err := json.Unmarshal(jsoncToJSON([]byte(text)), &doc); err != nil {
		if err := yaml.Unmarshal([]byte(text), &doc); err != nil {
			return nil, "it is neither JSON nor YAML the guard can read"
		}
	}
	if m, ok := doc.(map[string]any); ok {
		if h, ok := m["hooks"].(map[string]any); ok && strings.Contains(base, "husky") {
			return stringLeaves(h), ""
		}
	}
	return stringLeaves(doc), ""
}

// jsComputed are what makes a command in JavaScript text computed.
var jsComputed = []string{"fromCharCode", "atob(", "Buffer", "eval(", "Function(", "child_process", "execSync", "spawn(",
	"spawnSync", "exec(", "execa", "decodeURI", "unescape(", "String.raw", ".join(''", `.join("")`,
	".reverse(", ".replace(", ".concat(", "process.env"}

// jsConfigCommands returns the string values of a JavaScript
// configuration as commands, or why its commands are not in its text.
func jsConfigCommands(text string) ([]string, string) {
	type str struct {
		val        string
		start, end int
	}
	var strs []str
	var code strings.Builder // the text outside strings and comments
	for i := 0; i < len(text); {
		c := text[i]
		switch {
		case c == '/' && i+1 < len(text) && text[i+1] == '/':
			for i < len(text) && text[i] != '\n' {
				i++
			}
			code.WriteByte(' ')
		case c == '/' && i+1 < len(text) && text[i+1] == '*':
			end := strings.Index(text[i+2:], "*/")
			if end < 0 {
				return nil, "an unclosed comment"
			}
			i += end + 4
			code.WriteByte(' ')
		case c == '\'' || c == '"' || c == '`':
			var b strings.Builder
			j := i + 1
			closed := false
			for j < len(text) {
				d := text[j]
				if d == '\\' && j+1 < len(text) {
					if text[j+1] == 'x' || text[j+1] == 'u' {
						return nil, "a string with escapes that may spell a command"
					}
					b.WriteByte(text[j+1])
					j += 2
					continue
				}
				if d == c {
					closed = true
					break
				}
				if c == '`' && d == '$' && j+1 < len(text) && text[j+1] == '{' {
					// ${…}: a value not known; skip to the matching brace.
					depth := 0
					k := j + 1
					for ; k < len(text); k++ {
						if text[k] == '{' {
							depth++
						} else if text[k] == '}' {
							depth--
							if depth == 0 {
								break
							}
						}
					}
					if k >= len(text) {
						return nil, "an unclosed template"
					}
					b.WriteString(`"$LINT_VALUE"`)
					j = k + 1
					continue
				}
				b.WriteByte(d)
				j++
			}
			if !closed {
				return nil, "an unclosed string"
			}
			strs = append(strs, str{val: b.String(), start: i, end: j + 1})
			code.WriteString(" S ")
			i = j + 1
		default:
			code.WriteByte(c)
			i++
		}
	}
	outside := code.String()
	for _, w := range jsComputed {
		if strings.Contains(outside, w) {
			return nil, "code that builds, decodes or runs commands (" + strings.TrimRight(w, "(") + ")"
		}
	}
	if strings.Contains(strings.ReplaceAll(outside, " ", ""), "S+") || strings.Contains(strings.ReplaceAll(outside, " ", ""), "+S") {
		return nil, "a command joined from pieces"
	}
	var out []string
	for _, s := range strs {
		next := strings.TrimLeft(text[s.end:], " \t\r\n")
		if strings.HasPrefix(next, ":") {
			continue // a key: a glob or a hook's name
		}
		prev := strings.TrimRight(text[:s.start], " \t\r\n")
		if strings.HasSuffix(prev, "from") || strings.HasSuffix(prev, "import") || strings.HasSuffix(prev, "require(") ||
			strings.HasSuffix(prev, "import(") {
			continue // a module's name
		}
		if strings.TrimSpace(s.val) == "" || strings.HasPrefix(strings.TrimSpace(s.val), "use strict") {
			continue
		}
		out = append(out, s.val)
	}
	return out, ""
}
