package shell

import (
	"io/fs"
	"path"
	"strings"

	"github.com/overseer-dev/overseer/internal/action"
)

// A JSON filter is the inline code an agent pipes a command's output into
// to pick fields out of it: python3 -c "import json,sys;
// print(json.load(sys.stdin)['id'])", node -e "…JSON.parse(s).status…".
// Such code reads standard input and prints; it reaches nothing else. The
// guard cannot parse these languages, so it proves that the other way
// round: every word of the code is a name from a short list of harmless
// ones, a local variable (a name that is no builtin, global or keyword of
// the language), or a property of data. Anything else (an import other
// than json and sys, open, eval, require, process.env, a dunder, an
// f-string or a template literal, a computed property) leaves the code
// at confirm.

// pyFilterNames are the names a Python JSON filter may use.
var pyFilterNames = setOf("json", "sys", "print", "len", "sorted", "list", "dict", "str", "int", "float", "bool",
	"min", "max", "sum", "enumerate", "range", "zip", "set", "tuple", "any", "all", "round", "abs", "reversed",
	"isinstance", "repr", "map", "filter", "for", "in", "if", "else", "elif", "and", "or", "not", "is", "None",
	"True", "False", "lambda", "import")

// pyReserved are Python's keywords and builtins: a name among them that is
// not in pyFilterNames is not a local variable.
var pyReserved = setOf("False", "None", "True", "and", "as", "assert", "async", "await", "break", "class",
	"continue", "def", "del", "elif", "else", "except", "finally", "for", "from", "global", "if", "import", "in",
	"is", "lambda", "nonlocal", "not", "or", "pass", "raise", "return", "try", "while", "with", "yield", "match",
	"case", "type", "abs", "aiter", "all", "anext", "any", "ascii", "bin", "bool", "breakpoint", "bytearray",
	"bytes", "callable", "chr", "classmethod", "compile", "complex", "copyright", "credits", "delattr", "dict",
	"dir", "divmod", "enumerate", "eval", "exec", "exit", "filter", "float", "format", "frozenset", "getattr",
	"globals", "hasattr", "hash", "help", "hex", "id", "input", "int", "isinstance", "issubclass", "iter", "len",
	"license", "list", "locals", "map", "max", "memoryview", "min", "next", "object", "oct", "open", "ord", "pow",
	"print", "property", "quit", "range", "repr", "reversed", "round", "set", "setattr", "slice", "sorted",
	"staticmethod", "str", "sum", "super", "tuple", "vars", "zip", "json", "sys", "os", "subprocess", "builtins")

// pyModuleAttrs are the attributes a filter may take of json, sys and
// pandas (imported as pandas or as pd): pandas' functions that build,
// combine and convert data in memory, and its readers of CSV and JSON
// text, whose file the filter names as a literal (pandasReaders). Parquet
// and pickles are not read: their readers have run code a file held.
var pyModuleAttrs = map[string]map[string]bool{
	"json":   setOf("load", "loads", "dumps"),
	"sys":    setOf("stdin", "stdout", "stderr", "argv"),
	"pandas": pandasAttrs,
	"pd":     pandasAttrs,
}

var pandasAttrs = setOf("read_csv", "read_json", "read_table", "DataFrame", "Series", "concat",
	"merge", "to_datetime", "to_numeric", "to_timedelta", "json_normalize", "isna", "notna", "isnull", "notnull",
	"cut", "qcut", "pivot_table", "crosstab", "date_range", "Timestamp", "Timedelta", "NA", "NaT", "unique",
	"value_counts", "get_dummies", "melt", "wide_to_long", "Categorical", "Index", "Grouper", "NamedAgg")

// pandasReaders are pandas' readers: their first argument is a literal
// file of the project.
var pandasReaders = setOf("read_csv", "read_json", "read_table")

// pyDataAttrDenied are attributes of data a filter may not use: pandas'
// writers (to_csv, to_pickle, to_sql … take a path or a URL), its
// evaluators of expressions given as text, and a figure's save.
var pyDataAttrDenied = setOf("eval", "query", "savefig", "to_csv", "to_json", "to_excel", "to_pickle", "to_parquet",
	"to_sql", "to_hdf", "to_feather", "to_stata", "to_html", "to_latex", "to_markdown", "to_clipboard", "to_xml",
	"to_orc", "to_gbq", "style", "plot")

// jsNames are the names a Node JSON filter may use, and what may follow
// them ("" any property of data).
var jsNames = map[string]map[string]bool{
	"let": nil, "const": nil, "var": nil, "of": nil, "in": nil, "if": nil, "else": nil, "return": nil,
	"for": nil, "true": nil, "false": nil, "null": nil, "undefined": nil, "typeof": nil, "function": nil,
	"JSON":    setOf("parse", "stringify"),
	"console": setOf("log", "error", "table", "dir"),
	"process": setOf("stdin", "stdout"),
	"Object":  setOf("keys", "values", "entries", "fromEntries"),
	"Array":   setOf("isArray", "from"),
	"Math":    setOf("max", "min", "round", "floor", "ceil", "abs"),
	"Number":  nil, "String": nil, "Boolean": nil, "parseInt": nil, "parseFloat": nil,
}

// jsReserved are JavaScript's keywords and Node's globals: a name among
// them that is not in jsNames is not a local variable.
var jsReserved = setOf("await", "break", "case", "catch", "class", "continue", "debugger", "default", "delete",
	"do", "export", "extends", "finally", "import", "instanceof", "new", "super", "switch", "this", "throw", "try",
	"void", "while", "with", "yield", "async", "arguments", "eval", "Function", "globalThis", "global", "require",
	"module", "exports", "__dirname", "__filename", "Buffer", "Reflect", "Proxy", "Symbol", "fetch", "WebAssembly",
	"Worker", "setTimeout", "setInterval", "setImmediate", "queueMicrotask", "structuredClone", "crypto",
	"performance", "navigator", "WebSocket", "EventSource", "XMLHttpRequest", "Deno", "Bun", "constructor",
	"prototype", "__proto__", "process", "Object", "JSON", "console", "Array", "Math", "Promise", "AsyncFunction",
	"GeneratorFunction", "Atomics", "SharedArrayBuffer", "FinalizationRegistry", "WeakRef", "Intl", "Date",
	"RegExp", "Error", "Map", "Set", "WeakMap", "WeakSet", "URL", "TextDecoder", "TextEncoder", "AbortController",
	"BroadcastChannel", "MessageChannel", "Blob", "File", "FormData", "Headers", "Request", "Response", "Event",
	"EventTarget", "caches", "localStorage", "sessionStorage", "self", "window", "document", "importScripts",
	// node -e and -p make the built-in modules globals of their own name.
	"assert", "async_hooks", "buffer", "child_process", "cluster", "constants", "dgram", "diagnostics_channel",
	"dns", "domain", "events", "fs", "http", "http2", "https", "inspector", "net", "os", "path", "perf_hooks",
	"punycode", "querystring", "readline", "repl", "stream", "string_decoder", "sys", "timers", "tls",
	"trace_events", "tty", "url", "util", "v8", "vm", "wasi", "worker_threads", "zlib", "test", "sqlite", "sea")

func setOf(names ...string) map[string]bool {
	m := make(map[string]bool, len(names))
	for _, n := range names {
		m[n] = true
	}
	return m
}

// filterToken is one token of inline code: a name, a string, a number or
// one punctuation character.
type filterToken struct {
	kind byte // 'n' name, 's' string, '0' number, 'p' punctuation
	val  string
}

// filterTokens splits code into tokens, or fails on what a filter does not
// need: backslashes outside strings, backticks, string prefixes
// (f"…{expr}", b"…"), strings with a dunder or a line break, comments
// (#, //, /*), regular expressions and division (/), decorators (@).
func filterTokens(code string, lang string) ([]filterToken, bool) {
	var out []filterToken
	for i := 0; i < len(code); {
		c := code[i]
		switch {
		case c == ' ' || c == '\t' || c == '\n' || c == '\r':
			i++
		case c == '_' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c == '$' && lang == "node":
			j := i
			for j < len(code) && (code[j] == '_' || code[j] == '$' && lang == "node" || code[j] >= 'a' && code[j] <= 'z' ||
				code[j] >= 'A' && code[j] <= 'Z' || code[j] >= '0' && code[j] <= '9') {
				j++
			}
			if j < len(code) && (code[j] == '\'' || code[j] == '"') {
				return nil, false // a string prefix
			}
			out = append(out, filterToken{'n', code[i:j]})
			i = j
		case c >= '0' && c <= '9':
			j := i
			for j < len(code) && (code[j] >= '0' && code[j] <= '9' || code[j] == '.') {
				j++
			}
			out = append(out, filterToken{'0', code[i:j]})
			i = j
		case c == '\'' || c == '"':
			j := i + 1
			for j < len(code) && code[j] != c {
				if code[j] == '\n' {
					return nil, false
				}
				if code[j] == '\\' {
					// \n, \t, quotes: no escape that spells other text.
					if j+1 >= len(code) || strings.IndexByte("nt\\'\"r", code[j+1]) < 0 {
						return nil, false
					}
					j++
				}
				j++
			}
			if j >= len(code) {
				return nil, false
			}
			v := code[i+1 : j]
			if strings.Contains(v, "__") || strings.Contains(v, "{") || strings.Contains(v, "%") && lang == "python" {
				return nil, false // format strings reach attributes
			}
			out = append(out, filterToken{'s', v})
			i = j + 1
		case strings.IndexByte("()[]{}.,:;=+-*<>!&|?%", c) >= 0:
			out = append(out, filterToken{'p', string(c)})
			i++
		default:
			return nil, false
		}
	}
	return out, true
}

// jsonFilter reports whether inline code of lang is a JSON filter (see the
// top of this file), and the files it reads: Python's open('FILE') with one
// literal argument, Node's require('./FILE.json') (which parses JSON and
// runs nothing). The caller judges those files. cwdFile reports whether a
// file exists in the working directory, where Python imports json from
// first.
func jsonFilter(lang, code string, cwdFile func(string) bool) (bool, []string) {
	if len(code) > 2000 {
		return false, nil
	}
	switch {
	case strings.HasPrefix(lang, "python"):
		lang = "python"
	case lang == "node" || lang == "nodejs":
		lang = "node"
	default:
		return false, nil
	}
	toks, ok := filterTokens(code, lang)
	if !ok || len(toks) == 0 {
		return false, nil
	}
	if lang == "python" {
		// Python -c imports from the working directory first.
		if cwdFile == nil || cwdFile("json.py") || cwdFile("json") || cwdFile("sys.py") ||
			strings.Contains(code, "pandas") && (cwdFile("pandas.py") || cwdFile("pandas")) {
			return false, nil
		}
		return pyFilter(toks)
	}
	return jsFilter(toks)
}

// readCall returns the literal argument of name('FILE') at toks[i], the
// call's last token, and whether it is one.
func readCall(toks []filterToken, i int) (string, int, bool) {
	if i+3 < len(toks) && toks[i+1].val == "(" && toks[i+2].kind == 's' && toks[i+3].kind == 'p' && toks[i+3].val == ")" &&
		toks[i+2].val != "" {
		return toks[i+2].val, i + 3, true
	}
	return "", i, false
}

func pyFilter(toks []filterToken) (bool, []string) {
	var files []string
	for i := 0; i < len(toks); i++ {
		t := toks[i]
		if t.kind != 'n' {
			continue
		}
		if t.val == "open" && (i == 0 || toks[i-1].val != ".") {
			f, end, ok := readCall(toks, i)
			if !ok {
				return false, nil
			}
			files = append(files, f)
			i = end
			continue
		}
		if strings.HasPrefix(t.val, "_") {
			return false, nil
		}
		attr := i > 0 && toks[i-1].kind == 'p' && toks[i-1].val == "."
		if attr {
			// A property of a module is from its short list; of data,
			// anything but a dunder (excluded above) or a writer.
			if i >= 2 && toks[i-2].kind == 'n' && pyModuleAttrs[toks[i-2].val] != nil && (i < 3 || toks[i-3].val != ".") {
				if !pyModuleAttrs[toks[i-2].val][t.val] {
					return false, nil
				}
				if pandasReaders[t.val] {
					// pd.read_csv('FILE', …): a literal file, then the
					// options.
					if i+3 >= len(toks) || toks[i+1].val != "(" || toks[i+2].kind != 's' || toks[i+2].val == "" ||
						toks[i+3].val != "," && toks[i+3].val != ")" {
						return false, nil
					}
					files = append(files, toks[i+2].val)
					i += 2
				}
				continue
			}
			if pyDataAttrDenied[t.val] {
				return false, nil
			}
			if t.val == "to_string" && (i+2 >= len(toks) || toks[i+1].val != "(" || toks[i+2].val != ")") {
				return false, nil // to_string(buf) writes a file
			}
			continue
		}
		if t.val == "import" {
			// import json[, sys], import pandas [as pd]: nothing else, no
			// other "as", no "from".
			for j := i + 1; ; j += 2 {
				if j >= len(toks) || toks[j].kind != 'n' || pyModuleAttrs[toks[j].val] == nil || toks[j].val == "pd" {
					return false, nil
				}
				if toks[j].val == "pandas" && j+2 < len(toks) && toks[j+1].val == "as" {
					if toks[j+2].val != "pd" {
						return false, nil
					}
					j += 2
				}
				if j+1 >= len(toks) || toks[j+1].kind != 'p' || toks[j+1].val != "," {
					i = j
					break
				}
			}
			continue
		}
		if attrs := pyModuleAttrs[t.val]; attrs != nil {
			// json and sys only as json.load, sys.stdin …: a module held
			// as a value ((json), s = sys, [json][0]) would reach its
			// other attributes (json.codecs, sys.modules['os']).
			if i+2 >= len(toks) || toks[i+1].val != "." || toks[i+2].kind != 'n' || !attrs[toks[i+2].val] {
				return false, nil
			}
			continue
		}
		if pyReserved[t.val] && !pyFilterNames[t.val] {
			return false, nil
		}
	}
	return true, files
}

func jsFilter(toks []filterToken) (bool, []string) {
	var files []string
	for i := 0; i < len(toks); i++ {
		t := toks[i]
		if t.kind == 'n' && t.val == "require" && (i == 0 || toks[i-1].val != ".") {
			f, end, ok := readCall(toks, i)
			if !ok || !strings.HasPrefix(f, "./") || !strings.HasSuffix(f, ".json") {
				return false, nil
			}
			files = append(files, f)
			i = end
			continue
		}
		if t.kind == 'p' && t.val == "[" && i > 0 && (toks[i-1].kind == 'n' || toks[i-1].val == ")" || toks[i-1].val == "]") {
			// A computed property: only a number or a plain string.
			if i+2 >= len(toks) || toks[i+2].val != "]" || toks[i+1].kind != '0' && toks[i+1].kind != 's' ||
				toks[i+1].kind == 's' && jsReserved[toks[i+1].val] {
				return false, nil
			}
			continue
		}
		if t.kind != 'n' {
			continue
		}
		if strings.HasPrefix(t.val, "_") || strings.Contains(t.val, "$") {
			return false, nil
		}
		if i > 0 && toks[i-1].kind == 'p' && toks[i-1].val == "." {
			if jsReserved[t.val] && jsNames[t.val] == nil {
				return false, nil // constructor, prototype, __proto__ …
			}
			if i >= 2 && toks[i-2].kind == 'n' {
				if next, ok := jsNames[toks[i-2].val]; ok && next != nil && !next[t.val] {
					return false, nil
				}
			}
			continue
		}
		if _, ok := jsNames[t.val]; ok {
			if jsNames[t.val] != nil && (i+1 >= len(toks) || toks[i+1].val != ".") {
				return false, nil // process, JSON … only with one of their properties
			}
			continue
		}
		if jsReserved[t.val] {
			return false, nil
		}
	}
	return true, files
}

// filterReads reports whether inline code is a JSON filter whose files are
// regular files of the working tree that are not secrets (links followed),
// and records them as read.
func (a *analyzer) filterReads(lang, code string) bool {
	ok, files := jsonFilter(lang, code, func(n string) bool { return a.fileExists(path.Join(a.cwd, n)) })
	if !ok {
		return false
	}
	rfs, isLink := a.fileSystem().(fs.ReadLinkFS)
	for _, f := range files {
		p, known := a.abs(f)
		if !known || !path.IsAbs(p) || a.env.Cwd == "" || !isLink || strings.HasPrefix(f, "~") || strings.Contains(f, "$") {
			return false
		}
		real, ok1 := resolveDots(rfs, p, 0)
		root, ok2 := resolveDots(rfs, path.Clean(a.env.Cwd), 0)
		if !ok1 || !ok2 || !action.Within(root, real) || a.r.secret(real) || a.r.secret(p) {
			return false
		}
		fh, _, ok := a.openRegular(fsName(real))
		if !ok {
			return false
		}
		fh.Close()
		a.pathFact(p, true, action.PathRead)
		if a.filtered == nil {
			a.filtered = map[string]bool{}
		}
		a.filtered[p] = true
	}
	return true
}
