// Package overseertest helps end-to-end tests drive the real overseer
// binary: build it once per test process, run commands against a temporary
// home, and start, kill and restart the daemon. It also finds the npm MCP
// servers the MCP tests talk to, and lists processes (to check that none
// is left behind).
package overseertest

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// builds are the binaries built by this test process, by build tags.
var (
	buildMu sync.Mutex
	builds  = map[string]*build{}
)

type build struct {
	once sync.Once
	path string
	err  error
}

// moduleRoot finds the directory holding go.mod above the working directory.
func moduleRoot() (string, error) {
	dir, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			return dir, nil
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", os.ErrNotExist
		}
		dir = parent
	}
}

// ModuleRoot is the directory holding go.mod above the working directory
// (a test's package directory): the project's root.
func ModuleRoot(t testing.TB) string {
	t.Helper()
	root, err := moduleRoot()
	if err != nil {
		t.Fatalf("finding the module's root: %v", err)
	}
	return root
}

// NPMTool finds a program the scripts install under .cache/npm at the
// module's root (the agent CLIs), else on PATH. Without it the test is
// skipped, loudly, or failed when CI=true; how says what installs it
// ("scripts/install-agent-clis.sh …").
func NPMTool(t testing.TB, name, how string) string {
	t.Helper()
	cand := filepath.Join(ModuleRoot(t), ".cache", "npm", "node_modules", ".bin", name)
	if _, err := os.Stat(cand); err == nil {
		return cand
	}
	if p, err := exec.LookPath(name); err == nil {
		return p
	}
	msg := name + " is not installed; run " + how
	if os.Getenv("CI") == "true" {
		t.Fatal(msg)
	}
	t.Skip("SKIPPED: " + msg)
	return ""
}

// Binary builds ./cmd/overseer once per test process and returns its path.
func Binary(t testing.TB) string {
	t.Helper()
	return binary(t, "")
}

// TestClockBinary builds ./cmd/overseer with the overseer_testclock tag
// once per test process: a binary whose clock starts at the time in
// OVERSEER_TEST_CLOCK (RFC 3339). Only tests build it; it is never shipped.
func TestClockBinary(t testing.TB) string {
	t.Helper()
	return binary(t, "overseer_testclock")
}

func binary(t testing.TB, tags string) string {
	t.Helper()
	buildMu.Lock()
	b := builds[tags]
	if b == nil {
		b = &build{}
		builds[tags] = b
	}
	buildMu.Unlock()
	b.once.Do(func() {
		root, err := moduleRoot()
		if err != nil {
			b.err = err
			return
		}
		removeStaleBinaries()
		dir, err := os.MkdirTemp("", binDirPrefix+strconv.Itoa(os.Getpid())+"-")
		if err != nil {
			b.err = err
			return
		}
		b.path = filepath.Join(dir, "overseer")
		// The project's one build command (README, scripts/run.sh): CGO off, the
		// commit stamped from the repository (see `overseer version`), stripped
		// and with build paths trimmed.
		args := []string{"build", "-buildvcs=auto", "-trimpath", "-ldflags=-s -w"}
		if tags != "" {
			args = append(args, "-tags", tags)
		}
		cmd := exec.Command("go", append(args, "-o", b.path, "./cmd/overseer")...)
		cmd.Dir = root
		cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
		if out, err := cmd.CombinedOutput(); err != nil {
			b.err = &buildError{out: string(out), err: err}
		}
	})
	if b.err != nil {
		t.Fatalf("building overseer: %v", b.err)
	}
	return b.path
}

// binDirPrefix starts the name of the directory a test process builds
// its binary in: overseer-bin-<pid>-<random>.
const binDirPrefix = "overseer-bin-"

// removeStaleBinaries removes the binary directories of test processes that
// have ended: a process cannot remove its own (the binary is shared by all
// its tests), so each new one clears those left behind (86 MB apiece).
func removeStaleBinaries() {
	dirs, _ := filepath.Glob(filepath.Join(os.TempDir(), binDirPrefix+"*"))
	for _, d := range dirs {
		rest := strings.TrimPrefix(filepath.Base(d), binDirPrefix)
		pidText, _, ok := strings.Cut(rest, "-")
		pid, err := strconv.Atoi(pidText)
		if !ok || err != nil || pid <= 0 {
			// The older form without a process id: removed once it is an hour old.
			if st, err := os.Stat(d); err == nil && time.Since(st.ModTime()) > time.Hour {
				os.RemoveAll(d)
			}
			continue
		}
		if pid != os.Getpid() && syscall.Kill(pid, 0) == syscall.ESRCH {
			os.RemoveAll(d)
		}
	}
}

type buildError struct {
	out string
	err error
}

func (e *buildError) Error() string { return e.err.Error() + "\n" + e.out }

// MCPPeers returns the directory of the npm MCP servers installed by
// scripts/install-mcp-servers.sh: $MCP_SERVERS_DIR, else .cache/npm-mcp at
// the module's root. Each package is a name under @modelcontextprotocol
// ("server-filesystem") that must be installed there; node must be on
// PATH. When something is missing the test is skipped with a loud message,
// or failed when CI=true.
func MCPPeers(t testing.TB, packages ...string) string {
	t.Helper()
	dir := os.Getenv("MCP_SERVERS_DIR")
	if dir == "" {
		dir = filepath.Join(ModuleRoot(t), ".cache", "npm-mcp")
	}
	missing := func(what string) {
		t.Helper()
		msg := "the MCP test peers (" + what + ") are not installed; run scripts/install-mcp-servers.sh"
		if os.Getenv("CI") == "true" {
			t.Fatal(msg)
		}
		t.Skip("SKIPPED: " + msg)
	}
	_, nodeErr := exec.LookPath("node")
	if nodeErr != nil && len(packages) == 0 {
		missing("node")
	}
	for _, p := range packages {
		if _, err := os.Stat(filepath.Join(dir, "node_modules", "@modelcontextprotocol", p, "package.json")); err != nil || nodeErr != nil {
			missing("node, @modelcontextprotocol/" + p)
		}
	}
	return dir
}

// Proc is one process as Linux's /proc shows it.
type Proc struct {
	PID, PPID, PGID int
	State           string // "R", "S", "Z" (a zombie), …
	Cmdline         string // the arguments, joined by spaces
}

// Procs lists the processes of this machine, read from /proc: empty where
// there is no /proc. A process that ends while it is read is left out.
func Procs() []Proc {
	var out []Proc
	ents, _ := os.ReadDir("/proc")
	for _, e := range ents {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		b, err := os.ReadFile(filepath.Join("/proc", e.Name(), "stat"))
		if err != nil {
			continue
		}
		// pid (comm) state ppid pgrp ...: comm may hold spaces and
		// parentheses, so cut at the last ')'.
		st := string(b)
		i := strings.LastIndexByte(st, ')')
		if i < 0 {
			continue
		}
		f := strings.Fields(st[i+1:])
		if len(f) < 3 {
			continue
		}
		ppid, _ := strconv.Atoi(f[1])
		pgid, _ := strconv.Atoi(f[2])
		cl, _ := os.ReadFile(filepath.Join("/proc", e.Name(), "cmdline"))
		out = append(out, Proc{PID: pid, PPID: ppid, PGID: pgid, State: f[0],
			Cmdline: strings.TrimRight(strings.ReplaceAll(string(cl), "\x00", " "), " ")})
	}
	return out
}

// Result is a finished command.
type Result struct {
	Stdout, Stderr string
	Code           int
}

// Run runs overseer with args against home, feeding stdin.
func Run(t testing.TB, home, stdin string, args ...string) Result {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, Binary(t), append([]string{"--home", home}, args...)...)
	cmd.Env = append(os.Environ(), "OVERSEER_HOME="+home)
	if tok, err := os.ReadFile(filepath.Join(home, "token")); err == nil {
		// Tests may run from an agent's terminal: holding the token, they
		// answer as the person (see cli.AnswerTokenEnv).
		cmd.Env = append(cmd.Env, "OVERSEER_ANSWER_TOKEN="+strings.TrimSpace(string(tok)))
	}
	cmd.Stdin = strings.NewReader(stdin)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	err := cmd.Run()
	code := 0
	if ee, ok := err.(*exec.ExitError); ok {
		code = ee.ExitCode()
	} else if err != nil {
		t.Fatalf("running overseer %v: %v", args, err)
	}
	return Result{Stdout: out.String(), Stderr: errb.String(), Code: code}
}

// Daemon is a running `overseer serve`.
type Daemon struct {
	Home  string
	Addr  string
	Token string
	cmd   *exec.Cmd
	log   *SyncBuffer
	done  chan struct{}
}

// StartDaemon starts `overseer serve --addr 127.0.0.1:0` on home and waits
// until it answers. The daemon is killed when the test ends.
func StartDaemon(t testing.TB, home string, extra ...string) *Daemon {
	t.Helper()
	return StartDaemonWith(t, Binary(t), nil, home, extra...)
}

// StartDaemonWith is StartDaemon with another binary (TestClockBinary) and
// more environment variables.
func StartDaemonWith(t testing.TB, bin string, env []string, home string, extra ...string) *Daemon {
	t.Helper()
	_ = os.Remove(filepath.Join(home, "daemon.json"))
	args := append([]string{"--home", home, "serve", "--addr", "127.0.0.1:0"}, extra...)
	cmd := exec.Command(bin, args...)
	cmd.Env = append(append(os.Environ(), "OVERSEER_HOME="+home), env...)
	log := &SyncBuffer{}
	cmd.Stdout, cmd.Stderr = log, log
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	d := &Daemon{Home: home, cmd: cmd, log: log, done: make(chan struct{})}
	go func() { _ = cmd.Wait(); close(d.done) }()
	t.Cleanup(func() { d.Kill() })
	deadline := time.Now().Add(30 * time.Second)
	for time.Now().Before(deadline) {
		b, err := os.ReadFile(filepath.Join(home, "daemon.json"))
		if err == nil {
			var info struct{ Addr string }
			if json.Unmarshal(b, &info) == nil && info.Addr != "" {
				resp, err := http.Get("http://" + info.Addr + "/healthz")
				if err == nil {
					resp.Body.Close()
					tok, _ := os.ReadFile(filepath.Join(home, "token"))
					d.Addr, d.Token = info.Addr, strings.TrimSpace(string(tok))
					return d
				}
			}
		}
		select {
		case <-d.done:
			t.Fatalf("the daemon exited early:\n%s", d.Log())
		case <-time.After(50 * time.Millisecond):
		}
	}
	t.Fatalf("the daemon did not come up:\n%s", d.Log())
	return nil
}

// Log returns what the daemon printed.
func (d *Daemon) Log() string {
	return d.log.String()
}

// Kill sends SIGKILL and waits for the process to go.
func (d *Daemon) Kill() {
	if d.cmd.Process != nil {
		_ = d.cmd.Process.Signal(syscall.SIGKILL)
	}
	<-d.done
}

// URL returns the daemon's base URL joined with path.
func (d *Daemon) URL(path string) string { return "http://" + d.Addr + path }

// Do sends a request with a JSON body (nil for none); auth adds the token.
func (d *Daemon) Do(t testing.TB, method, path string, body any, auth bool) (int, []byte) {
	t.Helper()
	var rd io.Reader
	if body != nil {
		b, err := json.Marshal(body)
		if err != nil {
			t.Fatal(err)
		}
		rd = bytes.NewReader(b)
	}
	req, err := http.NewRequest(method, d.URL(path), rd)
	if err != nil {
		t.Fatal(err)
	}
	if auth {
		req.Header.Set("Authorization", "Bearer "+d.Token)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("%s %s: %v", method, path, err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, b
}

// SyncBuffer is a buffer that a running process's output may be written to
// while a test reads it.
type SyncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

// Write appends p.
func (s *SyncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

// String returns what was written so far.
func (s *SyncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}
