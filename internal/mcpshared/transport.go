package mcpshared

import (
	"bytes"
	"io"
	"maps"
	"net/http"
	"os"
	"os/exec"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// TerminateAfter is how long a stdio server has to exit after its input is
// closed before it is signalled (and as long again before it is killed).
const TerminateAfter = 2 * time.Second

// TransportOptions adjust [Transport].
type TransportOptions struct {
	// Stderr receives what a stdio server writes to its stderr (nil:
	// discarded).
	Stderr io.Writer
	// ProcessGroup makes a stdio server the leader of a new process group
	// (on Unix), so that [KillGroup] stops whatever it started with it.
	ProcessGroup bool
}

// Transport builds a fresh transport for one connection attempt to s: a
// streamable HTTP client sending the configured headers for a URL server,
// else the server's command (returned too, not started yet), run in its
// directory with its environment added to this process's.
func Transport(s *Server, o TransportOptions) (mcp.Transport, *exec.Cmd) {
	if s.URL != "" {
		hc := &http.Client{Transport: headerTransport{headers: s.Headers, next: http.DefaultTransport}}
		return &mcp.StreamableClientTransport{Endpoint: s.URL, HTTPClient: hc, MaxRetries: 2}, nil
	}
	cmd := exec.Command(s.Command, s.Args...)
	cmd.Dir = s.Cwd
	if len(s.Env) > 0 {
		cmd.Env = os.Environ()
		for _, k := range slices.Sorted(maps.Keys(s.Env)) {
			cmd.Env = append(cmd.Env, k+"="+s.Env[k])
		}
	}
	if o.Stderr != nil {
		cmd.Stderr = o.Stderr
	}
	// A process the server started may hold its stderr open; the server's
	// own exit is what counts.
	cmd.WaitDelay = time.Second
	if o.ProcessGroup {
		ownProcessGroup(cmd)
	}
	return &mcp.CommandTransport{Command: cmd, TerminateDuration: TerminateAfter}, cmd
}

// headerTransport adds the configured headers to every request.
type headerTransport struct {
	headers map[string]string
	next    http.RoundTripper
}

// RoundTrip implements http.RoundTripper.
func (h headerTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	if len(h.headers) > 0 {
		r = r.Clone(r.Context())
		for k, v := range h.headers {
			r.Header.Set(k, v)
		}
	}
	return h.next.RoundTrip(r)
}

// StderrTail is how much of a stdio server's last stderr output a
// [Stderr] keeps.
const StderrTail = 2 << 10

// maxLine is the longest unfinished line a Stderr holds before handing it
// on anyway.
const maxLine = 64 << 10

// Stderr collects what a stdio server writes to its stderr: it keeps the
// last [StderrTail] bytes, to explain a failure, and hands each line to a
// function. It is safe for concurrent use.
type Stderr struct {
	line func(line []byte) // nil: lines are not handed on

	mu      sync.Mutex
	last    []byte // the tail
	pending []byte // an unfinished line
}

var _ io.Writer = (*Stderr)(nil)

// NewStderr returns a Stderr that hands each complete line (without its
// newline) to line; nil keeps the tail only. line must not keep the slice.
func NewStderr(line func(line []byte)) *Stderr { return &Stderr{line: line} }

// Write implements io.Writer. It never fails.
func (w *Stderr) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.last = append(w.last, p...)
	if len(w.last) > StderrTail {
		w.last = append(w.last[:0], w.last[len(w.last)-StderrTail:]...)
	}
	if w.line == nil {
		return len(p), nil
	}
	w.pending = append(w.pending, p...)
	for {
		i := bytes.IndexByte(w.pending, '\n')
		if i < 0 {
			break
		}
		w.line(w.pending[:i])
		w.pending = w.pending[i+1:]
	}
	if len(w.pending) > maxLine { // a line without end: hand it on
		w.line(w.pending)
		w.pending = w.pending[:0]
	}
	return len(p), nil
}

// Tail returns the last output on one line, white space folded (nil-safe).
func (w *Stderr) Tail() string {
	if w == nil {
		return ""
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	return strings.Join(strings.Fields(strings.ToValidUTF8(string(w.last), "")), " ")
}
