package egress

import (
	"path/filepath"
	"strings"

	"github.com/overseer-dev/overseer/internal/action"
	"github.com/overseer-dev/overseer/internal/guard/secrets"
	"github.com/overseer-dev/overseer/internal/lazyre"
)

// curl reads options from config files: those given with -K/--config, and
// (unless -q/--disable is its first argument) a default .curlrc in
// $CURL_HOME, $XDG_CONFIG_HOME (as curlrc) or the home. A config file may
// name the URL, the data and the files to send (url = …, data = @.env,
// upload-file = …), so what it names is judged like the command line's
// options — a secret file named there is read and scanned, since the paths
// guard never sees its name.

// wgetHome matches the variables that move wget's startup file.
var wgetHome = lazyre.New(`(?:^|[\s;&|(])(WGETRC|HOME)=["']?([^\s"';&|]+)`)

// wgetConfigs returns the startup files wget command c reads: $WGETRC, or
// .wgetrc in a HOME the command sets, else ~/.wgetrc (none with
// --no-config). --config=FILE is explicit.
func wgetConfigs(c action.Command, cmd string) (explicit, implicit []string) {
	for i, a := range c.Args {
		switch {
		case a == "--no-config":
			return nil, nil
		case strings.HasPrefix(a, "--config="):
			explicit = append(explicit, strings.TrimPrefix(a, "--config="))
		case a == "--config" && i+1 < len(c.Args):
			explicit = append(explicit, c.Args[i+1])
		}
	}
	moved := false
	for _, m := range findAllIf(wgetHome, cmd, "WGETRC=", "HOME=") {
		moved = true
		if m[1] == "WGETRC" {
			implicit = append(implicit, m[2])
		} else {
			implicit = append(implicit, filepath.Join(m[2], ".wgetrc"))
		}
	}
	if !moved {
		implicit = append(implicit, "~/.wgetrc")
	}
	return explicit, implicit
}

// parseWgetrc turns a wgetrc ("post_file = x", "header = …") into wget's
// long options (--post-file=x).
func parseWgetrc(text string) []string {
	var args []string
	for _, line := range strings.Split(text, "\n") {
		l := strings.TrimSpace(line)
		if l == "" || strings.HasPrefix(l, "#") {
			continue
		}
		k, v, ok := strings.Cut(l, "=")
		if !ok {
			continue
		}
		k = strings.ReplaceAll(strings.ToLower(strings.TrimSpace(k)), "_", "-")
		k = strings.ReplaceAll(k, "postfile", "post-file")
		k = strings.ReplaceAll(k, "bodyfile", "body-file")
		args = append(args, "--"+k+"="+strings.Trim(strings.TrimSpace(v), `"'`))
	}
	return args
}

// configHome matches the variables that move curl's default config file
// when assigned in the command line.
var configHome = lazyre.New(`(?:^|[\s;&|(])(CURL_HOME|XDG_CONFIG_HOME|HOME)=["']?([^\s"';&|]+)`)

// curlConfigs returns the config files curl command c reads: explicit
// (given; a missing one is asked about by sentFiles) and implicit (read
// when they exist). Paths may start with ~/ or be relative.
func curlConfigs(c action.Command, cmd string) (explicit, implicit []string) {
	eachOption(c.Args, func(opt, val string) {
		if opt == "-K" || opt == "--config" {
			explicit = append(explicit, val)
		}
	}, curlValueOpts)
	if len(c.Args) > 0 && (c.Args[0] == "-q" || c.Args[0] == "--disable") {
		return explicit, nil
	}
	moved := false
	for _, m := range findAllIf(configHome, cmd, "HOME=") {
		moved = true
		switch m[1] {
		case "CURL_HOME", "HOME":
			implicit = append(implicit, filepath.Join(m[2], ".curlrc"))
		case "XDG_CONFIG_HOME":
			implicit = append(implicit, filepath.Join(m[2], "curlrc"))
		}
	}
	if !moved {
		implicit = append(implicit, "~/.curlrc")
	}
	return explicit, implicit
}

// parseCurlrc turns a curl config file into the arguments it stands for:
// "key = value", "key: value", "key value" and "--key value" lines, a
// one-letter key being a short option; quotes around a value are removed.
func parseCurlrc(text string) []string {
	var args []string
	for _, line := range strings.Split(text, "\n") {
		l := strings.TrimSpace(line)
		if l == "" || strings.HasPrefix(l, "#") {
			continue
		}
		i := strings.IndexAny(l, " \t=:")
		key, val := l, ""
		if i >= 0 {
			key = l[:i]
			val = strings.TrimSpace(strings.TrimLeft(strings.TrimSpace(l[i:]), "=:"))
		}
		key = strings.TrimLeft(key, "-")
		if key == "" {
			continue
		}
		if len(val) >= 2 && (val[0] == '"' && val[len(val)-1] == '"' || val[0] == '\'' && val[len(val)-1] == '\'') {
			val = val[1 : len(val)-1]
		}
		if len(key) == 1 {
			args = append(args, "-"+key)
		} else {
			args = append(args, "--"+key)
		}
		if val != "" {
			args = append(args, val)
		}
	}
	return args
}

// configRequests reads the config files of the curl requests of a and
// returns what they add: requests to the URLs they name, carrying the
// config's text and the files it sends (nested: a secret file named there
// is scanned, not left to the paths guard, which never saw its name).
func (g *Guard) configRequests(reqs []request, cwd string) []request {
	var out []request
	for _, r := range reqs {
		for i, p := range r.Configs {
			path, ok := g.resolve(p, cwd)
			if !ok || g.inHome(path) {
				continue
			}
			b, err := readCapped(path, maxScript)
			if err != nil {
				continue // a missing implicit config: nothing; an explicit one is a sent file already
			}
			prog, args := "curl", parseCurlrc(string(b))
			if strings.HasPrefix(r.By, "wget") {
				prog, args = "wget", parseWgetrc(string(b))
			}
			files := sentFiles(action.Command{Name: prog, Args: args})
			for j := range files {
				files[j].nested = true
				files[j].how = prog + " config " + p + ": " + files[j].how
			}
			dests := urlDests(args, cwd)
			if len(dests) == 0 {
				dests = []string{r.Dest}
			}
			nr := request{Dest: dests[0], By: r.By + " (config " + p + ")", Files: files}
			// The text of a config the command moved (CURL_HOME=. curl …)
			// is scanned; the person's own ~/.curlrc may hold their
			// credentials for every request, and writing it is asked
			// about, so only the files and URLs it names are judged.
			if i >= r.ExplicitConfigs && p != "~/.curlrc" && p != "~/.wgetrc" {
				nr.Parts = []secrets.Part{{Name: prog + " config " + p, Text: string(b)}}
			}
			out = append(out, nr)
			for _, d := range dests[1:] {
				out = append(out, request{Dest: d, By: nr.By})
			}
		}
	}
	return out
}

// resolve makes a path absolute: ~/ is the person's home, a relative path
// is under cwd.
func (g *Guard) resolve(p, cwd string) (string, bool) {
	switch {
	case p == "~" || strings.HasPrefix(p, "~/"):
		if g.env.UserHome == "" {
			return "", false
		}
		return filepath.Join(g.env.UserHome, strings.TrimPrefix(p, "~")), true
	case strings.HasPrefix(p, "~"):
		return "", false
	case !filepath.IsAbs(p):
		if cwd == "" || !filepath.IsAbs(cwd) {
			return "", false
		}
		return filepath.Join(cwd, p), true
	}
	return filepath.Clean(p), true
}

// inHome reports a path in Overseer's own home, which the guard never
// reads (the paths guard blocks any effect on it).
func (g *Guard) inHome(p string) bool {
	h := g.env.Home
	return h != "" && (p == filepath.Clean(h) || strings.HasPrefix(p, filepath.Clean(h)+"/"))
}
