package cli

import (
	"crypto/subtle"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/spf13/cobra"

	"github.com/overseer-dev/overseer/internal/guard/resultscan"
	"github.com/overseer-dev/overseer/internal/guard/secrets"
	"github.com/overseer-dev/overseer/internal/guard/shell"
	"github.com/overseer-dev/overseer/internal/kernel"
)

// No self-approval, defence in depth. The shell guard blocks an agent's
// `overseer approve …`; in case a command slips through (a renamed copy of
// the binary, a script the agent wrote), every command the guard refuses
// agents (answering, loosening Overseer, judging or running in its place)
// refuses to run when it finds it runs under an AI agent: the agents' own
// environment markers, or an agent CLI among the process's ancestors.

// AnswerTokenEnv names the variable that lets a process which holds the
// daemon's token answer even where agent markers are seen (tests and
// scripted set-ups started from an agent's terminal). Its value must be
// the token in $OVERSEER_HOME/token, which agents cannot read.
const AnswerTokenEnv = "OVERSEER_ANSWER_TOKEN"

// agentEnvMarkers are the environment variables the agents set for the
// commands they run, with the agent they name. A marker counts when it is
// set to a non-empty value other than "0".
//
//   - Claude Code: CLAUDECODE=1 and CLAUDE_CODE_ENTRYPOINT (cli, sdk-ts, …).
//   - Gemini CLI: GEMINI_CLI=1.
//   - Codex: CODEX_SANDBOX_NETWORK_DISABLED=1 for shell tool calls without
//     network access and CODEX_SANDBOX (seatbelt …) inside its sandbox
//     (codex-rs core/src/spawn.rs); CODEX_THREAD_ID, which recent versions
//     export to every shell they spawn; CODEX_MANAGED_BY_NPM or
//     CODEX_MANAGED_BY_BUN, which its npm and bun launchers set for the
//     native binary and so for everything it starts.
var agentEnvMarkers = []struct{ name, agent string }{
	{"CLAUDECODE", "Claude Code"},
	{"CLAUDE_CODE_ENTRYPOINT", "Claude Code"},
	{"GEMINI_CLI", "Gemini CLI"},
	{"CODEX_SANDBOX", "Codex"},
	{"CODEX_SANDBOX_NETWORK_DISABLED", "Codex"},
	{"CODEX_THREAD_ID", "Codex"},
	{"CODEX_MANAGED_BY_NPM", "Codex"},
	{"CODEX_MANAGED_BY_BUN", "Codex"},
}

// ProcTable reads the process table. The operating system's is ProcFS;
// tests inject their own.
type ProcTable interface {
	// Stat returns the parent and the command name (comm) of pid.
	Stat(pid int) (ppid int, comm string, err error)
	// Exe returns the path of pid's executable, or "".
	Exe(pid int) string
	// Cmdline returns pid's arguments, or nil.
	Cmdline(pid int) []string
}

// ProcFS reads /proc (Linux). On systems without it the walk finds
// nothing.
type ProcFS struct{ Root string }

// Stat implements ProcTable.
func (p ProcFS) Stat(pid int) (int, string, error) {
	b, err := os.ReadFile(filepath.Join(p.root(), strconv.Itoa(pid), "stat"))
	if err != nil {
		return 0, "", err
	}
	s := string(b)
	open, close := strings.IndexByte(s, '('), strings.LastIndexByte(s, ')')
	if open < 0 || close < open {
		return 0, "", fmt.Errorf("/proc/%d/stat: unexpected format", pid)
	}
	f := strings.Fields(s[close+1:])
	if len(f) < 2 {
		return 0, "", fmt.Errorf("/proc/%d/stat: unexpected format", pid)
	}
	ppid, err := strconv.Atoi(f[1])
	if err != nil {
		return 0, "", err
	}
	return ppid, s[open+1 : close], nil
}

// Exe implements ProcTable.
func (p ProcFS) Exe(pid int) string {
	e, _ := os.Readlink(filepath.Join(p.root(), strconv.Itoa(pid), "exe"))
	return strings.TrimSuffix(e, " (deleted)")
}

// Cmdline implements ProcTable.
func (p ProcFS) Cmdline(pid int) []string {
	b, err := os.ReadFile(filepath.Join(p.root(), strconv.Itoa(pid), "cmdline"))
	if err != nil || len(b) == 0 {
		return nil
	}
	return strings.Split(strings.TrimRight(string(b), "\x00"), "\x00")
}

func (p ProcFS) root() string {
	if p.Root == "" {
		return "/proc"
	}
	return p.Root
}

// AgentEvidence says which agent a process runs under and how that was
// found.
type AgentEvidence struct {
	Agent string // "Claude Code", "Codex", "Gemini CLI"
	Why   string // "CLAUDECODE=1 in the environment", "process 123 (claude) is an ancestor"
}

// maxAncestors bounds the walk up the process tree.
const maxAncestors = 64

// DetectAgent reports whether the process pid runs under an AI agent:
// getenv sees one of the agents' environment markers, or an ancestor of
// pid in procs is an agent CLI (claude, codex, gemini; or node, bun or
// deno running one of their packages).
func DetectAgent(getenv func(string) string, procs ProcTable, pid int) (AgentEvidence, bool) {
	if getenv != nil {
		for _, m := range agentEnvMarkers {
			if v := strings.TrimSpace(getenv(m.name)); v != "" && v != "0" {
				return AgentEvidence{Agent: m.agent, Why: m.name + "=" + clipValue(v) + " in the environment"}, true
			}
		}
	}
	if procs == nil {
		return AgentEvidence{}, false
	}
	seen := map[int]bool{}
	cur := pid
	for n := 0; n < maxAncestors; n++ {
		ppid, _, err := procs.Stat(cur)
		if err != nil || ppid <= 1 || seen[ppid] {
			return AgentEvidence{}, false
		}
		seen[ppid] = true
		cur = ppid
		_, comm, err := procs.Stat(cur)
		if err != nil {
			return AgentEvidence{}, false
		}
		if agent := agentProcess(comm, procs.Exe(cur), procs.Cmdline(cur)); agent != "" {
			return AgentEvidence{Agent: agent, Why: fmt.Sprintf("process %d (%s) is an ancestor of this one", cur, comm)}, true
		}
	}
	return AgentEvidence{}, false
}

func clipValue(v string) string {
	if len(v) > 24 {
		return v[:24] + "…"
	}
	return v
}

// agentPackages are path fragments of the agents' JavaScript packages, run
// by node, bun or deno.
var agentPackages = []struct{ frag, agent string }{
	{"@anthropic-ai/claude-code", "Claude Code"},
	{"claude-code/cli", "Claude Code"},
	{"@openai/codex", "Codex"},
	{"codex-cli/bin", "Codex"},
	{"@google/gemini-cli", "Gemini CLI"},
	{"gemini-cli/", "Gemini CLI"},
}

// agentByName maps an executable's base name to its agent.
func agentByName(base string) string {
	b := strings.ToLower(strings.TrimSuffix(base, ".exe"))
	b = strings.TrimSuffix(strings.TrimSuffix(b, ".js"), ".mjs")
	switch {
	case b == "claude" || b == "claude-code":
		return "Claude Code"
	case b == "codex" || strings.HasPrefix(b, "codex-"):
		return "Codex"
	case b == "gemini" || b == "gemini-cli":
		return "Gemini CLI"
	}
	return ""
}

// agentProcess names the agent a process is, from its comm, executable
// and arguments, or returns "".
func agentProcess(comm, exe string, argv []string) string {
	if a := agentByName(comm); a != "" {
		return a
	}
	if exe != "" {
		if a := agentByName(filepath.Base(exe)); a != "" {
			return a
		}
		if strings.Contains(exe, "/claude/versions/") { // Claude Code's native installer
			return "Claude Code"
		}
	}
	if len(argv) > 0 {
		if a := agentByName(filepath.Base(argv[0])); a != "" {
			return a
		}
	}
	runtime := strings.ToLower(filepath.Base(exe))
	if len(argv) > 0 && runtime == "" {
		runtime = strings.ToLower(filepath.Base(argv[0]))
	}
	switch strings.TrimRight(runtime, "0123456789.") {
	case "node", "nodejs", "bun", "deno":
	default:
		return ""
	}
	for _, x := range argv[min(1, len(argv)):] {
		if strings.HasPrefix(x, "-") {
			continue
		}
		for _, p := range agentPackages {
			if strings.Contains(x, p.frag) {
				return p.agent
			}
		}
		return agentByName(filepath.Base(x))
	}
	return ""
}

// agentCheck is how commands find out whether they run under an agent.
// The package's tests replace it (they may themselves run under one).
var agentCheck = func() (AgentEvidence, bool) {
	return DetectAgent(os.Getenv, ProcFS{}, os.Getpid())
}

// guardAnswering makes the commands of root that an agent may not run
// refuse to run under an agent. Which commands those are is the shell
// guard's allow-list (shell.AgentMayRun): the guard refuses the others by
// name, and the binary refuses them whatever it is called, so that a
// renamed copy (`cp "$(command -v overseer)" ./x && ./x serve --policy
// mine.yaml`) changes nothing. Two commands are exempt, as the agents' own
// programs run them: `hook` (the agent's hook, whose forged use from a
// shell the guard blocks) and `mcp` without a sub-command (the gateway an
// agent's MCP configuration starts).
func (a *app) guardAnswering(root *cobra.Command) {
	var walk func(c *cobra.Command, path []string)
	walk = func(c *cobra.Command, path []string) {
		for _, sub := range c.Commands() {
			walk(sub, append(path[:len(path):len(path)], sub.Name()))
		}
		if len(path) == 0 || (c.RunE == nil && c.Run == nil) {
			return
		}
		cmdName, op := path[0], ""
		if len(path) > 1 {
			op = path[1]
		}
		if agentRuns(path) {
			return
		}
		if shell.AgentMayRun(cmdName, op) {
			a.maskUnderAgent(c, cmdName)
			return
		}
		run := takeRun(c)
		c.RunE = func(cmd *cobra.Command, args []string) error {
			if err := a.refuseUnderAgent(cmd, ""); err != nil {
				return err
			}
			return run(cmd, args)
		}
	}
	walk(root, nil)
}

// takeRun returns c's run function as a RunE, and clears c.Run: the caller
// sets c.RunE to a wrapper of it.
func takeRun(c *cobra.Command) func(*cobra.Command, []string) error {
	if c.RunE != nil {
		return c.RunE
	}
	r := c.Run
	c.Run = nil
	return func(cmd *cobra.Command, args []string) error { r(cmd, args); return nil }
}

// agentRuns reports whether the agents' own programs run the command at
// path: the hook, and the MCP gateway.
func agentRuns(path []string) bool {
	return len(path) == 1 && (path[0] == "hook" || path[0] == "mcp")
}

// refuseUnderAgent returns the error an answering command fails with when
// it runs under an agent, or nil.
func (a *app) refuseUnderAgent(cmd *cobra.Command, flag string) error {
	ev, under := agentCheck()
	if !under {
		return nil
	}
	if tok := os.Getenv(AnswerTokenEnv); tok != "" {
		if home, err := a.homeDir(); err == nil {
			if b, err := os.ReadFile(filepath.Join(home, kernel.TokenFile)); err == nil {
				want := strings.TrimSpace(string(b))
				if len(want) >= 32 && subtle.ConstantTimeCompare([]byte(strings.TrimSpace(tok)), []byte(want)) == 1 {
					return nil
				}
			}
		}
	}
	what := "`" + cmd.CommandPath()
	if flag != "" {
		what += " --" + flag
	}
	what += "`"
	return exit(exitRefusedUnderAgent, fmt.Errorf("refused: %s answers for a person or loosens Overseer, and it is running under an AI agent "+
		"(%s: %s). An agent may not approve its own actions, change the policy or remove Overseer's hooks. "+
		"If you are the person: answer from the web console, `overseer tui` or a terminal of your own that is not "+
		"the agent's (not a shell the agent started)", what, ev.Agent, ev.Why))
}

// exitRefusedUnderAgent is the exit status of an answering command that
// refuses to run under an agent.
const exitRefusedUnderAgent = 4

// maskUnderAgent makes a command an agent may run (it only reads) mask the
// secrets in what it prints when it runs under an agent: the requests
// waiting, tasks, the audit log and the policy's history show other
// sessions' calls as they were asked, a token in a command too. The
// commands that print only what the agent gave them or nothing of a call
// (eval, help, version, completion) are left alone.
func (a *app) maskUnderAgent(c *cobra.Command, name string) {
	switch name {
	case "eval", "help", "version", "completion":
		return
	}
	run := takeRun(c)
	c.RunE = func(cmd *cobra.Command, args []string) error {
		if _, under := agentCheck(); !under {
			return run(cmd, args)
		}
		orig := a.stdout
		m := &lineMasker{w: orig, mask: maskSecrets}
		a.stdout = m
		cmd.SetOut(m)
		defer func() { a.stdout = orig; cmd.SetOut(orig) }()
		err := run(cmd, args)
		if ferr := m.Flush(); err == nil {
			err = ferr
		}
		return err
	}
}

// maskSecrets masks the secrets the secret analyser finds in line (by
// their formats: the values a project's files hold are the kernel's to
// know, see secretMasker).
func maskSecrets(line string) string {
	fs := secrets.Scan(line)
	if len(fs) == 0 {
		return line
	}
	out := make([]resultscan.Secret, 0, len(fs))
	for _, f := range fs {
		if f.End > f.Start && f.End <= len(line) {
			out = append(out, resultscan.Secret{Kind: f.Rule, Start: f.Start, End: f.End, Masked: f.Masked})
		}
	}
	return resultscan.Mask(line, out)
}
