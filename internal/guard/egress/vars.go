package egress

import (
	"slices"
	"sort"
	"strings"

	"github.com/overseer-dev/overseer/internal/action"
	"github.com/overseer-dev/overseer/internal/lazyre"
)

// A command that sends data may carry a secret without its value being in
// the command: "$GITHUB_TOKEN" is expanded by the shell, os.environ[…] by
// the interpreter, env | curl -d @- sends the whole environment. The value
// is not known to the guard (the agent's environment is not the judging
// process's), so the variable's name decides: a secret variable sent to a
// destination that is neither known nor the variable's own vendor is put
// to a person (egress.secret-variable).

// varRef matches the ways a command line or inline code reads one
// environment variable by name: $NAME, ${NAME…}, printenv NAME,
// os.environ["NAME"], os.getenv("NAME"), process.env.NAME, $ENV{NAME},
// ENV["NAME"], getenv("NAME"), Deno.env.get("NAME"), $env:NAME.
var varRef = lazyre.New(`(?:\$ENV\{\s*\\?['"]?|\$\{?[#!]?|printenv\s+(?:-\S+\s+)*|environ(?:\.get)?\s*[\[(]\s*\\?['"]|getenv\s*\(?\s*\\?['"]?|process\.env\.|process\.env\[\s*\\?['"]|ENV(?:\.fetch)?\s*[\[(]\s*\\?['"]|env\.get\(\s*\\?['"]|\$env:|%env:)([A-Za-z_][A-Za-z0-9_]*)`)

// envDump matches inline code that reads the whole environment:
// os.environ (not subscripted), process.env (not a member), %ENV, ENV.to_h,
// System.getenv() without a name, /proc/…/environ.
var envDump = lazyre.New(`os\.environ\b(?:\s*[^\s\[.(]|\s*$|\.(?:items|copy|keys|values)\b)|process\.env\b(?:\s*[^\s.\[]|\s*$)|%ENV\b|\bENV\.(?:to_h|to_a|each|map|inspect|keys)|getenv\(\s*\)|/proc/[^/\s]+/environ|Deno\.env\.toObject`)

// varMarkers and dumpMarkers are literal parts every match of varRef and
// envDump holds.
var (
	varMarkers  = []string{"$", "environ", "getenv", "process.env", "ENV", "env.get", "printenv", "env:"}
	dumpMarkers = []string{"os.environ", "process.env", "%ENV", "ENV.", "getenv(", "/environ", "Deno.env"}
)

func hasAny(t string, subs []string) bool {
	for _, x := range subs {
		if strings.Contains(t, x) {
			return true
		}
	}
	return false
}

// dumpCommands read the whole environment when run without a program to
// start (env, printenv) or with these options (export -p, declare -x).
func isEnvDump(c action.Command) bool {
	switch c.Name {
	case "env", "printenv":
		for _, a := range c.Args {
			if !strings.HasPrefix(a, "-") && !strings.Contains(a, "=") {
				return false // printenv NAME (a variable: varRef), env NAME=v prog
			}
		}
		return true
	case "set", "export", "declare", "typeset":
		if len(c.Args) == 0 {
			return c.Name == "set" || c.Name == "export"
		}
		for _, a := range c.Args {
			if a == "-p" || a == "-x" || a == "-px" || a == "-xp" {
				return true
			}
		}
	case "compgen":
		return len(c.Args) > 0 && (c.Args[0] == "-e" || c.Args[0] == "-v")
	}
	return false
}

// SecretVarName reports whether an environment variable's name says it
// holds a secret (the names whose values the guard fingerprints).
func SecretVarName(name string) bool {
	if !secretEnvName.MatchString(name) {
		return false
	}
	up := strings.ToUpper(name)
	if strings.HasPrefix(up, "OVERSEER_") && up != "OVERSEER_ANSWER_TOKEN" && up != "OVERSEER_DATABASE_URL" {
		return false // Overseer's own settings, but not its shared database's URL (it may hold the password)
	}
	if up == "PWD" || up == "OLDPWD" || strings.HasSuffix(up, "_PATH") || strings.HasSuffix(up, "_FILE") ||
		strings.HasSuffix(up, "_DIR") || strings.Contains(up, "SESSION_BUS") || strings.Contains(up, "SESSION_MANAGER") ||
		strings.HasPrefix(up, "XDG_SESSION") || strings.HasSuffix(up, "_SOCK") || strings.HasSuffix(up, "SESSION_ID") ||
		strings.HasSuffix(up, "_TYPE") || strings.Contains(up, "AUTHOR") || strings.HasPrefix(up, "TOKENIZERS") ||
		strings.HasSuffix(up, "_KEYMAP") || strings.HasSuffix(up, "_KEY_ID") && !strings.Contains(up, "ACCESS") {
		return false
	}
	return true
}

// secretVars returns the secret environment variables an action's command
// line reads (sorted, unique), and "the environment" when it reads all of
// them (env, printenv, os.environ whole …).
func secretVars(cmd string, cmds []action.Command) []string {
	seen := map[string]bool{}
	texts := []string{cmd}
	for _, c := range cmds {
		for _, a := range c.Args {
			if !strings.Contains(cmd, a) {
				texts = append(texts, a) // a word the shell guard unquoted
			}
		}
	}
	dump := false
	for _, t := range texts {
		// The expressions backtrack: they run only on a text that holds
		// one of their literal parts.
		if hasAny(t, varMarkers) {
			for _, m := range varRef.FindAllStringSubmatch(t, -1) {
				if SecretVarName(m[1]) {
					seen["$"+m[1]] = true
				}
			}
		}
		dump = dump || hasAny(t, dumpMarkers) && envDump.MatchString(t)
	}
	for _, c := range cmds {
		if isEnvDump(c) {
			dump = true
		}
		if cp := credPrinter(c); cp != "" {
			seen[cp] = true
		}
	}
	if dump {
		seen["the whole environment"] = true
	}
	out := make([]string, 0, len(seen))
	for k := range seen {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// vendors are the official API hosts of the services whose credentials
// are commonly kept in variables named after them (OPENAI_API_KEY): such
// a variable sent to its vendor's API is the ordinary use of it. Exact
// host names only: hosts under which anyone can have a name (buckets,
// webhooks, tenants, apps: *.s3.amazonaws.com, hooks.slack.com,
// *.atlassian.net) would let a key out to its vendor's customer.
var vendors = map[string][]string{
	"OPENAI": {"api.openai.com"}, "ANTHROPIC": {"api.anthropic.com"}, "CLAUDE": {"api.anthropic.com"},
	"STRIPE": {"api.stripe.com"}, "SLACK": {"slack.com"}, "GITLAB": {"gitlab.com"},
	"HF": {"huggingface.co"}, "HUGGINGFACE": {"huggingface.co"}, "HUGGING": {"huggingface.co"},
	"SENTRY": {"sentry.io"}, "DATADOG": {"api.datadoghq.com", "api.datadoghq.eu"},
	"DD": {"api.datadoghq.com", "api.datadoghq.eu"}, "TWILIO": {"api.twilio.com"},
	"SENDGRID": {"api.sendgrid.com"}, "CLOUDFLARE": {"api.cloudflare.com"}, "CF": {"api.cloudflare.com"},
	"VERCEL": {"api.vercel.com"}, "NETLIFY": {"api.netlify.com"}, "HEROKU": {"api.heroku.com"},
	"DIGITALOCEAN": {"api.digitalocean.com"}, "GEMINI": {"generativelanguage.googleapis.com"},
	"GOOGLE": {"generativelanguage.googleapis.com"}, "MISTRAL": {"api.mistral.ai"}, "GROQ": {"api.groq.com"},
	"COHERE": {"api.cohere.com", "api.cohere.ai"}, "LINEAR": {"api.linear.app"}, "NOTION": {"api.notion.com"},
	"NPM": {"registry.npmjs.org"}, "PYPI": {"upload.pypi.org"}, "TWINE": {"upload.pypi.org"},
	"DOCKER": {"hub.docker.com", "registry-1.docker.io"}, "CARGO": {"crates.io"},
	"PAGERDUTY": {"api.pagerduty.com", "events.pagerduty.com"}, "REPLICATE": {"api.replicate.com"},
	"PERPLEXITY": {"api.perplexity.ai"}, "DEEPSEEK": {"api.deepseek.com"},
}

// vendorDest reports whether dest is the vendor's own API host for
// variable v ("$OPENAI_API_KEY" to api.openai.com).
func vendorDest(v, dest string) bool {
	name := strings.ToUpper(strings.TrimPrefix(v, "$"))
	first, _, _ := strings.Cut(name, "_")
	for _, d := range vendors[first] {
		if dest == d {
			return true
		}
	}
	return false
}

// textFilters transform text and print it.
var textFilters = map[string]bool{"grep": true, "egrep": true, "rg": true, "head": true, "tail": true, "cut": true,
	"rev": true, "tr": true, "base64": true, "base32": true, "basenc": true, "xxd": true, "od": true, "hexdump": true,
	"sed": true, "awk": true, "cat": true, "sort": true, "uniq": true, "fold": true, "tee": true, "less": true,
	"more": true, "nl": true, "column": true, "jq": true, "openssl": true, "gzip": true, "sha256sum": false}

// printers show their arguments to the agent.
var printers = map[string]bool{"echo": true, "printf": true, "print": true}

// printedSecretVars returns the secret variables an action shows to the
// agent (so that the agent knows their values afterwards, and can send
// them in a form no analyser undoes): echo or printf of $NAME, printenv
// NAME, and the whole environment (env, printenv, set, export -p …) unless
// it is filtered by a grep for words that name no secret (env | grep PATH).
//
// A value given to another program (echo "$T" | gh auth login
// --with-token) is not shown: only actions whose every command prints or
// transforms text count.
func printedSecretVars(cmds []action.Command) []string {
	for _, c := range cmds {
		if !printers[c.Name] && !textFilters[c.Name] && !isEnvDump(c) && c.Name != "printenv" && credPrinter(c) == "" {
			return nil
		}
	}
	seen := map[string]bool{}
	for _, c := range cmds {
		if cp := credPrinter(c); cp != "" {
			seen[cp] = true
		}
	}
	dump := false
	for _, c := range cmds {
		switch {
		case printers[c.Name]:
			for _, a := range c.Args {
				for _, m := range varRef.FindAllStringSubmatch(a, -1) {
					if SecretVarName(m[1]) {
						seen["$"+m[1]] = true
					}
				}
			}
		case c.Name == "printenv" && len(nonOptions(c.Args)) > 0:
			for _, a := range nonOptions(c.Args) {
				if SecretVarName(a) {
					seen["$"+a] = true
				}
			}
		case isEnvDump(c):
			dump = true
		case dump && (c.Name == "grep" || c.Name == "egrep" || c.Name == "rg"):
			w := nonOptions(c.Args)
			if len(w) > 0 && !secretEnvName.MatchString(strings.ToUpper(w[0])) {
				dump = false // env | grep PATH
			}
		}
	}
	if dump {
		seen["the whole environment"] = true
	}
	out := make([]string, 0, len(seen))
	for k := range seen {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// credPrinter names a command that prints credentials (gh auth token,
// gcloud auth print-access-token, kubectl get secret, git credential fill,
// vault kv get, ps e …: other processes' environments), or "".
func credPrinter(c action.Command) string {
	w := nonOptions(c.Args)
	has := func(words ...string) bool {
		if len(w) < len(words) {
			return false
		}
		for i, x := range words {
			if w[i] != x {
				return false
			}
		}
		return true
	}
	name := ""
	switch c.Name {
	case "gh":
		if has("auth", "token") {
			name = "gh auth token"
		}
	case "gcloud":
		if has("auth", "print-access-token") || has("auth", "print-identity-token") ||
			has("auth", "application-default", "print-access-token") {
			name = "gcloud auth print-*-token"
		}
	case "aws":
		if has("sts", "get-session-token") || has("sts", "assume-role") || has("configure", "export-credentials") ||
			has("ecr", "get-login-password") || has("secretsmanager", "get-secret-value") || has("ssm", "get-parameter") ||
			has("ssm", "get-parameters") || has("configure", "get") && len(w) > 2 && secretEnvName.MatchString(strings.ToUpper(w[2])) {
			name = "aws " + w[0] + " " + w[1]
		}
	case "az":
		if has("account", "get-access-token") || has("keyvault", "secret", "show") {
			name = "az " + w[0] + " " + w[1]
		}
	case "kubectl", "oc":
		if has("get", "secret") || has("get", "secrets") {
			name = c.Name + " get secret"
		}
		if has("config", "view") && slices.ContainsFunc(c.Args, func(a string) bool { return a == "--raw" || a == "--flatten" }) {
			name = c.Name + " config view --raw"
		}
	case "git":
		if has("credential", "fill") {
			name = "git credential fill"
		}
	case "vault":
		if has("kv", "get") || has("read") || has("print", "token") {
			name = "vault " + w[0]
		}
	case "op":
		if has("read") || has("item", "get") {
			name = "op " + w[0]
		}
	case "pass", "gopass":
		if len(w) > 0 && (w[0] == "show" || !strings.HasPrefix(w[0], "-") && w[0] != "ls" && w[0] != "list" && w[0] != "init") {
			name = c.Name + " show"
		}
	case "security":
		if len(w) > 0 && (w[0] == "find-generic-password" || w[0] == "find-internet-password") {
			for _, a := range c.Args {
				if a == "-w" || a == "-g" {
					name = "security " + w[0]
				}
			}
		}
	case "secret-tool":
		if has("lookup") {
			name = "secret-tool lookup"
		}
	case "heroku":
		if has("auth:token") {
			name = "heroku auth:token"
		}
	case "doppler":
		if has("secrets") {
			name = "doppler secrets"
		}
	case "ps":
		// BSD-style options with e show every process's environment.
		if len(c.Args) > 0 && !strings.HasPrefix(c.Args[0], "-") && strings.Contains(c.Args[0], "e") {
			name = "ps " + c.Args[0] + " (other processes' environments)"
		}
	}
	if name == "" {
		return ""
	}
	return "the output of " + name
}
