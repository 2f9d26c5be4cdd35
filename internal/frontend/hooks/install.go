package hooks

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"time"
)

// InstallSpec says which hook entries to install.
type InstallSpec struct {
	Agent string
	// Command is the command line that runs the hook without its flags,
	// e.g. `'/usr/local/bin/overseer' hook claude-code`.
	Command string
	// MaxWait is passed to the pre-call hook (--max-wait); the agent's
	// timeout for the hook is set above it. Zero means DefaultMaxWait.
	MaxWait time.Duration
	// Confirm is passed to the pre-call hook (--confirm) when set.
	Confirm ConfirmMode
}

// agentEvents are the hook events `overseer init` installs per agent: the
// pre-call event first, then the post-call one.
var agentEvents = map[string][2]string{
	ClaudeCode: {"PreToolUse", "PostToolUse"},
	Codex:      {"PreToolUse", "PostToolUse"},
	Gemini:     {"BeforeTool", "AfterTool"},
}

// postTimeout is the agent's timeout for the post-call hook.
const postTimeout = 30 * time.Second

// AgentTimeout is the timeout `overseer init` gives the agent for the
// pre-call hook: above the hook's own deadline (MaxWait + DeadlineMargin),
// so the hook always answers before the agent gives up on it — an agent
// that kills a hook runs the call.
func AgentTimeout(maxWait time.Duration) time.Duration {
	if maxWait <= 0 {
		maxWait = DefaultMaxWait
	}
	return maxWait + DeadlineMargin + 15*time.Second
}

// PreCommand is the full pre-call command line of spec.
func (s InstallSpec) PreCommand() string {
	w := s.MaxWait
	if w <= 0 {
		w = DefaultMaxWait
	}
	c := s.Command + " --max-wait " + w.String()
	if s.Confirm != "" && s.Confirm != ConfirmHold {
		c += " --confirm " + string(s.Confirm)
	}
	return c
}

func (s InstallSpec) handler(pre bool) *object {
	h := newObject()
	timeout := postTimeout
	cmd := s.Command
	if pre {
		timeout = AgentTimeout(s.MaxWait)
		cmd = s.PreCommand()
	}
	if s.Agent == Gemini {
		h.set("name", "overseer")
	}
	h.set("type", "command")
	h.set("command", cmd)
	if s.Agent == Gemini {
		h.set("timeout", int64(timeout/time.Millisecond)) // Gemini CLI: milliseconds
	} else {
		h.set("timeout", int64(timeout/time.Second)) // Claude Code, Codex: seconds
	}
	return h
}

func matcherAll(agent string) string {
	if agent == Gemini {
		return ".*" // a regular expression there
	}
	return "*"
}

// Install merges the hook entries of spec into a settings document (the
// agent's settings.json, or Codex's hooks.json) and returns the new
// document and whether it changed. Other settings, and other hooks, are
// kept as they are; entries a previous install added are replaced, so
// running it twice changes nothing the second time.
func Install(data []byte, spec InstallSpec) ([]byte, bool, error) {
	evs, ok := agentEvents[spec.Agent]
	if !ok {
		return nil, false, fmt.Errorf("%w %q", ErrUnknownAgent, spec.Agent)
	}
	if strings.TrimSpace(spec.Command) == "" {
		return nil, false, errors.New("install: no hook command")
	}
	doc, err := parseObject(data)
	if err != nil {
		return nil, false, err
	}
	before := encode(doc)
	if _, err := removeOurs(doc, spec.Agent); err != nil {
		return nil, false, err
	}
	hooksV, _ := doc.get("hooks")
	hooks, ok := hooksV.(*object)
	if !ok {
		hooks = newObject()
		doc.set("hooks", hooks)
	}
	for i, name := range evs {
		group := newObject()
		group.set("matcher", matcherAll(spec.Agent))
		group.set("hooks", []any{spec.handler(i == 0)})
		list, _ := hooks.vals[name].([]any)
		if i == 0 {
			// Overseer's pre-call hook goes first: it should judge the call
			// before other hooks act on it.
			list = append([]any{group}, list...)
		} else {
			list = append(list, group)
		}
		hooks.set(name, list)
	}
	after := encode(doc)
	if len(data) > 0 && string(before) == string(after) {
		return data, false, nil
	}
	return after, string(before) != string(after), nil
}

// Uninstall removes the hook entries a previous Install of agent added,
// and nothing else. It returns the new document and whether it changed.
func Uninstall(data []byte, agent string) ([]byte, bool, error) {
	if _, ok := agentEvents[agent]; !ok {
		return nil, false, fmt.Errorf("%w %q", ErrUnknownAgent, agent)
	}
	doc, err := parseObject(data)
	if err != nil {
		return nil, false, err
	}
	removed, err := removeOurs(doc, agent)
	if err != nil || !removed {
		return data, false, err
	}
	return encode(doc), true, nil
}

// removeOurs deletes the handlers that run `overseer … hook <agent>`,
// then the matcher groups, event lists and the hooks object they leave
// empty.
func removeOurs(doc *object, agent string) (bool, error) {
	hooksV, ok := doc.get("hooks")
	if !ok {
		return false, nil
	}
	hooks, ok := hooksV.(*object)
	if !ok {
		return false, errors.New(`"hooks" is not an object`)
	}
	removed := false
	for _, name := range append([]string(nil), hooks.keys...) {
		list, ok := hooks.vals[name].([]any)
		if !ok {
			continue
		}
		var keep []any
		for _, g := range list {
			group, ok := g.(*object)
			if !ok {
				keep = append(keep, g)
				continue
			}
			hs, ok := group.vals["hooks"].([]any)
			if !ok {
				keep = append(keep, g)
				continue
			}
			var rest []any
			for _, h := range hs {
				if isOurs(h, agent) {
					removed = true
					continue
				}
				rest = append(rest, h)
			}
			if len(rest) == len(hs) {
				keep = append(keep, g)
				continue
			}
			if len(rest) > 0 {
				group.set("hooks", rest)
				keep = append(keep, g)
			}
		}
		if len(keep) == len(list) {
			continue
		}
		if len(keep) == 0 {
			hooks.del(name)
		} else {
			hooks.set(name, keep)
		}
	}
	if removed && len(hooks.keys) == 0 {
		doc.del("hooks")
	}
	return removed, nil
}

// isOurs reports whether a hook handler runs Overseer's hook for agent.
func isOurs(h any, agent string) bool {
	o, ok := h.(*object)
	if !ok {
		return false
	}
	cmd, _ := o.vals["command"].(string)
	return IsHookCommand(cmd, agent)
}

// IsHookCommand reports whether a command line runs an `overseer` binary's
// `hook <agent>` command.
func IsHookCommand(cmd, agent string) bool {
	words := splitWords(cmd)
	if len(words) < 3 || !strings.HasPrefix(filepath.Base(words[0]), "overseer") {
		return false
	}
	for i := 1; i+1 < len(words); i++ {
		if words[i] == "hook" && words[i+1] == agent {
			return true
		}
	}
	return false
}

// splitWords splits a command line on blanks, honouring single and double
// quotes and backslash escapes (enough for the command lines Install
// writes).
func splitWords(s string) []string {
	var words []string
	var cur strings.Builder
	in, escaped := false, false
	var quote rune
	for _, r := range s {
		switch {
		case escaped:
			cur.WriteRune(r)
			escaped = false
		case quote != 0:
			if r == quote {
				quote = 0
			} else {
				cur.WriteRune(r)
			}
		case r == '\\':
			escaped, in = true, true
		case r == '\'' || r == '"':
			quote, in = r, true
		case r == ' ' || r == '\t' || r == '\n':
			if in {
				words = append(words, cur.String())
				cur.Reset()
				in = false
			}
		default:
			cur.WriteRune(r)
			in = true
		}
	}
	if in {
		words = append(words, cur.String())
	}
	return words
}

// ShellQuote quotes a word for a POSIX shell when it needs it.
func ShellQuote(s string) string {
	if s != "" && !strings.ContainsAny(s, " \t\n'\"\\$`!*?[]{}()<>|&;#~=%") {
		return s
	}
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}

// FileChange is what InstallFile or UninstallFile did.
type FileChange struct {
	Path    string
	Changed bool
	// Backup is the copy of the file as it was before, if it existed and
	// was changed.
	Backup string
}

// InstallFile installs spec into the settings file at path (created with
// its directory if missing), keeping a timestamped backup of a file it
// changes.
func InstallFile(path string, spec InstallSpec, now time.Time) (FileChange, error) {
	return editFile(path, now, func(b []byte) ([]byte, bool, error) { return Install(b, spec) })
}

// UninstallFile removes what InstallFile added for agent.
func UninstallFile(path, agent string, now time.Time) (FileChange, error) {
	if _, err := os.Stat(path); errors.Is(err, fs.ErrNotExist) {
		return FileChange{Path: path}, nil
	}
	return editFile(path, now, func(b []byte) ([]byte, bool, error) { return Uninstall(b, agent) })
}

func editFile(path string, now time.Time, edit func([]byte) ([]byte, bool, error)) (FileChange, error) {
	fc := FileChange{Path: path}
	old, err := os.ReadFile(path)
	exists := err == nil
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return fc, err
	}
	mode := fs.FileMode(0o644)
	if st, err := os.Stat(path); err == nil {
		mode = st.Mode().Perm()
	}
	out, changed, err := edit(old)
	if err != nil {
		return fc, fmt.Errorf("%s: %w (the file was left as it is)", path, err)
	}
	if !changed {
		return fc, nil
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return fc, err
	}
	if exists {
		fc.Backup = path + ".overseer-backup-" + now.UTC().Format("20060102T150405.000Z")
		if err := os.WriteFile(fc.Backup, old, mode); err != nil {
			return fc, fmt.Errorf("writing the backup: %w", err)
		}
	}
	tmp, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".tmp*")
	if err != nil {
		return fc, err
	}
	defer os.Remove(tmp.Name())
	if _, err := tmp.Write(out); err != nil {
		tmp.Close()
		return fc, err
	}
	if err := tmp.Chmod(mode); err != nil {
		tmp.Close()
		return fc, err
	}
	if err := tmp.Close(); err != nil {
		return fc, err
	}
	if err := os.Rename(tmp.Name(), path); err != nil {
		return fc, err
	}
	fc.Changed = true
	return fc, nil
}
