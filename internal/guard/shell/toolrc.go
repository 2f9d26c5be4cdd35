package shell

import (
	"path"
	"strings"

	"github.com/overseer-dev/overseer/internal/action"
	"github.com/overseer-dev/overseer/internal/guard"
)

// curl and wget read options from configuration files before their
// arguments: curl the first .curlrc of $CURL_HOME, $XDG_CONFIG_HOME
// (~/.config) and the home (unless -q comes first) and every -K FILE;
// wget $WGETRC or ~/.wgetrc (unless --no-config) and --config FILE. What
// those files say is what the command does (output = ~/.bashrc writes a
// start-up file, -d @~/.ssh/id_rsa sends a key), so the command is judged
// with their options put before its own, read as the command finds them
// (a file written earlier in the command by that text; one changed by it
// reaches a person). A file written with such options is judged when it
// is written by what it makes the next curl or wget do (laterrun.go).

// maxToolrcOptions bounds the options of one configuration file judged.
const maxToolrcOptions = 256

// toolrcKind says whether p is a curl configuration file ("curlrc"), a
// wget one ("wgetrc"), or neither ("").
func toolrcKind(p string) string {
	base := strings.ToLower(path.Base(p))
	switch base {
	case ".curlrc", "_curlrc":
		return "curlrc"
	case "curlrc":
		if path.Base(path.Dir(p)) == ".config" {
			return "curlrc"
		}
	case ".wgetrc":
		return "wgetrc"
	case "wgetrc":
		if d := path.Dir(p); path.Base(d) == ".config" || d == "/etc" || d == "/usr/local/etc" {
			return "wgetrc"
		}
	}
	return ""
}

// toolrcCommand is the command that judges the options of a curl or wget
// configuration text (kind curlrc or wgetrc) with the arguments rest
// after them (a URL when they are judged alone), or "" when it holds none.
func toolrcCommand(kind, text string, rest []string) ([]string, string) {
	var opts []string
	var why string
	if kind == "curlrc" {
		opts, why = curlrcOptions(text)
	} else {
		opts, why = wgetrcOptions(text)
	}
	if len(opts) == 0 || why != "" {
		return nil, why
	}
	prog, off := "curl", "-q"
	if kind == "wgetrc" {
		prog, off = "wget", "--no-config"
	}
	return append(append([]string{prog, off}, opts...), rest...), ""
}

// curlrcOptions returns the options of a .curlrc as curl's arguments:
// "name = value", "name value", "--name value", "-x value" lines, values
// bare or double-quoted with backslash escapes.
func curlrcOptions(text string) ([]string, string) {
	var out []string
	for _, line := range strings.Split(strings.ReplaceAll(text, "\r\n", "\n"), "\n") {
		t := strings.TrimSpace(line)
		if t == "" || t[0] == '#' {
			continue
		}
		i := strings.IndexAny(t, " \t=:")
		name, rest := t, ""
		if i >= 0 {
			name, rest = t[:i], t[i:]
		}
		if name == "" {
			return nil, "a line without an option name: " + clip(t, 60)
		}
		if !strings.HasPrefix(name, "-") {
			name = "--" + name
		}
		rest = strings.TrimLeft(rest, " \t")
		if rest != "" && (rest[0] == '=' || rest[0] == ':') {
			rest = strings.TrimLeft(rest[1:], " \t")
		}
		out = append(out, name)
		if rest == "" {
			continue
		}
		if rest[0] == '"' {
			var b strings.Builder
			closed := false
			for j := 1; j < len(rest); j++ {
				c := rest[j]
				if c == '\\' && j+1 < len(rest) {
					j++
					switch rest[j] {
					case 't':
						b.WriteByte('\t')
					case 'n':
						b.WriteByte('\n')
					case 'r':
						b.WriteByte('\r')
					case 'v':
						b.WriteByte('\v')
					default:
						b.WriteByte(rest[j])
					}
					continue
				}
				if c == '"' {
					closed = true
					break
				}
				b.WriteByte(c)
			}
			if !closed {
				return nil, "an unclosed quoted value: " + clip(t, 60)
			}
			out = append(out, b.String())
		} else {
			v := rest
			if k := strings.IndexAny(v, " \t"); k >= 0 {
				v = v[:k]
			}
			out = append(out, v)
		}
		if len(out) > maxToolrcOptions {
			return nil, "more options than the guard judges"
		}
	}
	return out, ""
}

// wgetrcNames maps the wgetrc commands whose long option has another name.
var wgetrcNames = map[string]string{"dirprefix": "directory-prefix", "logfile": "output-file", "input": "input-file",
	"outputdocument": "output-document", "postfile": "post-file", "bodyfile": "body-file", "postdata": "post-data",
	"bodydata": "body-data", "execute": "execute", "header": "header", "method": "method", "useproxy": "proxy",
	"httpproxy": "http-proxy", "httpsproxy": "https-proxy", "savecookies": "save-cookies", "loadcookies": "load-cookies"}

// wgetrcOptions returns the commands of a .wgetrc ("name = value") as
// wget's long options.
func wgetrcOptions(text string) ([]string, string) {
	var out []string
	for _, line := range strings.Split(strings.ReplaceAll(text, "\r\n", "\n"), "\n") {
		t := strings.TrimSpace(line)
		if t == "" || t[0] == '#' {
			continue
		}
		name, val, ok := strings.Cut(t, "=")
		if !ok {
			return nil, "a line that is not name = value: " + clip(t, 60)
		}
		key := strings.ToLower(strings.NewReplacer("_", "", "-", "", " ", "", "\t", "").Replace(name))
		opt, known := wgetrcNames[key]
		if !known {
			opt = strings.ReplaceAll(strings.ToLower(strings.TrimSpace(name)), "_", "-")
		}
		val = strings.TrimSpace(val)
		if key == "execute" {
			out = append(out, "-e", val)
		} else {
			out = append(out, "--"+opt+"="+val)
		}
		if len(out) > maxToolrcOptions {
			return nil, "more options than the guard judges"
		}
	}
	return out, ""
}

// toolrc judges curl or wget with the options of the configuration files
// they read put before their own arguments.
func (a *analyzer) toolrc(s *segCtx) {
	if a.toolrcDepth > 0 {
		return // the judgement of the options themselves
	}
	kind := "curlrc"
	if s.name == "wget" {
		kind = "wgetrc"
	}
	env := a.commandEnv(nil)
	var files []arg
	defaults := true
	var rest []string
	for j := 0; j < len(s.args); j++ {
		x := s.args[j]
		v := x.val
		if x.dyn {
			rest = append(rest, v)
			continue
		}
		switch {
		case kind == "curlrc" && j == 0 && (v == "-q" || v == "--disable"):
			defaults = false
		case kind == "wgetrc" && v == "--no-config":
			defaults = false
		case kind == "curlrc" && (v == "-K" || v == "--config"), kind == "wgetrc" && v == "--config":
			if j+1 < len(s.args) {
				j++
				files = append(files, s.args[j])
			}
		case kind == "curlrc" && strings.HasPrefix(v, "-K") && len(v) > 2:
			files = append(files, arg{val: v[2:]})
		case strings.HasPrefix(v, "--config="):
			files = append(files, arg{val: strings.TrimPrefix(v, "--config=")})
		default:
			rest = append(rest, v)
		}
	}
	var paths []string
	if defaults {
		if p := a.defaultToolrc(kind, env); p != "" {
			paths = append(paths, p)
		}
	}
	for _, f := range files {
		if f.dyn {
			a.runnerProblem(s.idx, s.name, "its configuration file is computed at run time: "+clip(f.val, 60))
			return
		}
		if f.val == "-" {
			continue // standard input: judged as what the pipe carries
		}
		p, ok := a.fileAbs(f.val)
		if !ok {
			a.runnerProblem(s.idx, s.name, "the place of its configuration file "+clip(f.val, 60)+" is not known")
			return
		}
		paths = append(paths, p)
	}
	for _, p := range paths {
		f := a.contentOf(p, s.idx)
		switch f.state {
		case fileMissing:
			continue
		case fileBad:
			a.runnerProblem(s.idx, s.name, "its configuration "+a.display(p)+" "+f.why)
			continue
		}
		words, why := toolrcCommand(kind, f.text, rest)
		if why != "" {
			a.runnerProblem(s.idx, s.name, "its configuration "+a.display(p)+" cannot be read: "+why)
			continue
		}
		if len(words) == 0 {
			continue
		}
		a.toolrcDepth++
		a.runContent(s.idx, quoteWords(words), contentOpts{origin: OriginOption, cwd: a.cwd,
			where: s.name + " with the options of " + a.display(p)})
		a.toolrcDepth--
	}
}

// defaultToolrc returns the configuration file curl or wget reads when
// none is named: the first that exists (or that the command writes).
func (a *analyzer) defaultToolrc(kind string, env map[string]envVal) string {
	home := a.env.Home
	if v, ok := env["HOME"]; ok && !v.dyn {
		home = v.val
	}
	var cands []string
	if kind == "curlrc" {
		if v, ok := env["CURL_HOME"]; ok && !v.dyn && v.val != "" {
			cands = append(cands, path.Join(v.val, ".curlrc"))
		}
		if v, ok := env["XDG_CONFIG_HOME"]; ok && !v.dyn && v.val != "" {
			cands = append(cands, path.Join(v.val, ".curlrc"), path.Join(v.val, "curlrc"))
		} else if home != "" {
			cands = append(cands, path.Join(home, ".config", ".curlrc"), path.Join(home, ".config", "curlrc"))
		}
		if home != "" {
			cands = append(cands, path.Join(home, ".curlrc"))
		}
	} else {
		if v, ok := env["WGETRC"]; ok && !v.dyn && v.val != "" {
			cands = append(cands, v.val)
		} else if home != "" {
			cands = append(cands, path.Join(home, ".wgetrc"))
		}
	}
	for _, c := range cands {
		p, ok := a.fileAbs(c)
		if !ok {
			continue
		}
		if _, w := a.written[p]; w || a.changedBefore(p, a.cur) || a.isRegular(p) {
			return p
		}
	}
	return ""
}

// toolrcLater judges a curl or wget configuration text written now by what
// it makes the next curl or wget do (laterrun.go).
func toolrcLater(r *rules, env Env, kind, p, text string, depth int) []guard.Finding {
	words, why := toolrcCommand(kind, text, []string{"https://example.invalid/"})
	if why != "" {
		return []guard.Finding{{Check: "shell.planted-setting", Level: action.Confirm, Hard: true,
			Message: p + " would be " + laterKinds[kind] + " that cannot be read: " + why}}
	}
	if len(words) == 0 {
		return nil
	}
	return laterCommands(r, env, p, []string{quoteWords(words)}, "at the next "+words[0]+" that reads it", depth, nil)
}
