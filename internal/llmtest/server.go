package llmtest

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"
)

// maxBody caps a request body the servers read.
const maxBody = 32 << 20

// errBadRequest marks a request the provider would refuse with HTTP 400.
var errBadRequest = errors.New("invalid request")

// wire is one provider's format.
type wire interface {
	provider() string
	// path is the one endpoint served.
	path() string
	// decode reads the essentials of a request body; errors wrap
	// errBadRequest.
	decode(body []byte, req *Request) error
	// events renders a streamed reply as complete server-sent events.
	events(n int, req Request, rp Reply) ([]string, error)
	// message renders a reply that was not asked to stream.
	message(n int, req Request, rp Reply) (string, error)
	// errorBody renders an error as the provider does.
	errorBody(n, status int, message string) string
	// requestIDHeader names the header carrying a request's ID.
	requestIDHeader() string
}

// Server is a scripted model server. It is safe for concurrent requests and
// is closed when the test that started it ends.
type Server struct {
	// URL is the base URL to configure a plugin with: it ends in "/v1" for
	// OpenAI (requests go to URL+"/chat/completions") and is the server's
	// root for Anthropic (the SDK adds "/v1/messages").
	URL string

	tb     testing.TB
	script Script
	wire   wire
	srv    *httptest.Server
	done   chan struct{}

	mu   sync.Mutex
	reqs []Request
	seq  int
}

// NewOpenAI starts an OpenAI chat completions server answering as script
// says. Its URL ends in "/v1".
func NewOpenAI(tb testing.TB, script Script) *Server {
	tb.Helper()
	s := start(tb, script, openAIWire{})
	s.URL = s.srv.URL + "/v1"
	return s
}

// NewAnthropic starts an Anthropic Messages server answering as script
// says. Its URL is the server's root, as the Anthropic SDK expects a base
// URL.
func NewAnthropic(tb testing.TB, script Script) *Server {
	tb.Helper()
	s := start(tb, script, anthropicWire{})
	s.URL = s.srv.URL
	return s
}

func start(tb testing.TB, script Script, w wire) *Server {
	if script == nil {
		tb.Fatal("llmtest: nil script")
	}
	s := &Server{tb: tb, script: script, wire: w, done: make(chan struct{})}
	s.srv = httptest.NewServer(http.HandlerFunc(s.serve))
	tb.Cleanup(func() {
		close(s.done) // ends Delay waits, so Close does not hang on them
		s.srv.Close()
	})
	return s
}

// Client returns an HTTP client for the server (the plain default client
// works as well).
func (s *Server) Client() *http.Client { return s.srv.Client() }

// Requests returns every request received on the endpoint so far, in order,
// including ones refused as malformed.
func (s *Server) Requests() []Request {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]Request(nil), s.reqs...)
}

// serve answers one request.
func (s *Server) serve(w http.ResponseWriter, r *http.Request) {
	select {
	case <-s.done:
		// Closing: a request that arrives before the listener is shut (a
		// client retrying a dropped one) is dropped too, not answered
		// from the script.
		panic(http.ErrAbortHandler)
	default:
	}
	s.mu.Lock()
	s.seq++
	n := s.seq
	s.mu.Unlock()
	w.Header().Set(s.wire.requestIDHeader(), fmt.Sprintf("req_llmtest%04d", n))
	if r.URL.Path != s.wire.path() {
		s.refuse(w, n, http.StatusNotFound, fmt.Sprintf("no endpoint %s %s (this server serves POST %s)", r.Method, r.URL.Path, s.wire.path()))
		return
	}
	if r.Method != http.MethodPost {
		s.refuse(w, n, http.StatusMethodNotAllowed, fmt.Sprintf("method %s not allowed", r.Method))
		return
	}
	body, err := io.ReadAll(io.LimitReader(r.Body, maxBody+1))
	if err != nil {
		s.refuse(w, n, http.StatusBadRequest, "reading the body: "+err.Error())
		return
	}
	req := Request{Provider: s.wire.provider(), Body: json.RawMessage(body), Header: r.Header.Clone()}
	derr := error(nil)
	if len(body) > maxBody {
		derr = fmt.Errorf("%w: body larger than %d bytes", errBadRequest, maxBody)
	} else {
		derr = s.wire.decode(body, &req)
	}
	s.mu.Lock()
	s.reqs = append(s.reqs, req)
	s.mu.Unlock()
	if derr != nil {
		s.refuse(w, n, http.StatusBadRequest, derr.Error())
		return
	}

	rp := s.script.Next(req)
	if rp.Delay > 0 {
		t := time.NewTimer(rp.Delay)
		defer t.Stop()
		select {
		case <-t.C:
		case <-r.Context().Done():
			return
		case <-s.done:
			// A server going away drops the connection: returning
			// would answer 200 with an empty body, which a client may
			// take for an empty reply.
			panic(http.ErrAbortHandler)
		}
	}
	switch {
	case rp.fail != "":
		s.tb.Errorf("%s", rp.fail)
		s.refuse(w, n, http.StatusInternalServerError, rp.fail)
	case rp.Status != 0 && rp.Status != http.StatusOK:
		s.replyError(w, n, rp)
	case req.Stream:
		s.replyStream(w, n, req, rp)
	default:
		s.replyMessage(w, n, req, rp)
	}
}

// refuse answers with the provider's error body.
func (s *Server) refuse(w http.ResponseWriter, n, status int, msg string) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	io.WriteString(w, s.wire.errorBody(n, status, msg))
}

func (s *Server) replyError(w http.ResponseWriter, n int, rp Reply) {
	if rp.RetryAfter != "" {
		w.Header().Set("Retry-After", rp.RetryAfter)
	}
	body := rp.Raw
	if body == "" {
		body = s.wire.errorBody(n, rp.Status, rp.Text)
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(rp.Status)
	io.WriteString(w, body)
}

func (s *Server) replyStream(w http.ResponseWriter, n int, req Request, rp Reply) {
	var events []string
	if rp.Raw != "" {
		events = []string{rp.Raw}
		if rp.Drop {
			half := len(rp.Raw) / 2
			events = []string{rp.Raw[:half], rp.Raw[half:]}
		}
	} else {
		var err error
		if events, err = s.wire.events(n, req, rp); err != nil {
			s.tb.Errorf("llmtest: %v", err)
			s.refuse(w, n, http.StatusInternalServerError, err.Error())
			return
		}
	}
	h := w.Header()
	h.Set("Content-Type", "text/event-stream; charset=utf-8")
	h.Set("Cache-Control", "no-cache")
	h.Set("Connection", "keep-alive")
	w.WriteHeader(http.StatusOK)
	s.send(w, events, rp.Drop)
}

func (s *Server) replyMessage(w http.ResponseWriter, n int, req Request, rp Reply) {
	body := rp.Raw
	if body == "" {
		var err error
		if body, err = s.wire.message(n, req, rp); err != nil {
			s.tb.Errorf("llmtest: %v", err)
			s.refuse(w, n, http.StatusInternalServerError, err.Error())
			return
		}
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(http.StatusOK)
	var parts []string
	if rp.Drop {
		half := len(body) / 2
		parts = []string{body[:half], body[half:]}
	} else {
		parts = []string{body}
	}
	s.send(w, parts, rp.Drop)
}

// send writes parts, flushing after each. With drop, only the first half
// (at least one part) is sent and the connection is then closed abruptly.
func (s *Server) send(w http.ResponseWriter, parts []string, drop bool) {
	rc := http.NewResponseController(w)
	if drop {
		parts = parts[:max(1, len(parts)/2)]
	}
	for _, p := range parts {
		if _, err := io.WriteString(w, p); err != nil {
			return // the client went away
		}
		if err := rc.Flush(); err != nil {
			return
		}
	}
	if drop {
		// closes the connection without the chunked terminator; the
		// server does not log this panic
		panic(http.ErrAbortHandler)
	}
}

// sse renders one server-sent event. An empty name sends a data line only.
func sse(name, data string) string {
	var b strings.Builder
	if name != "" {
		b.WriteString("event: " + name + "\n")
	}
	b.WriteString("data: " + data + "\n\n")
	return b.String()
}

// obj is a JSON object whose keys keep their order, so bodies are stable and
// read like the providers' own; a nil value is null.
type obj []kv

type kv struct {
	k string
	v any
}

// MarshalJSON writes the object in key order, without HTML escaping.
func (o obj) MarshalJSON() ([]byte, error) {
	var b bytes.Buffer
	b.WriteByte('{')
	for i, f := range o {
		if i > 0 {
			b.WriteByte(',')
		}
		k, err := encode(f.k)
		if err != nil {
			return nil, err
		}
		v, err := encode(f.v)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", f.k, err)
		}
		b.Write(k)
		b.WriteByte(':')
		b.Write(v)
	}
	b.WriteByte('}')
	return b.Bytes(), nil
}

// encode is json.Marshal without HTML escaping.
func encode(v any) ([]byte, error) {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return nil, err
	}
	return bytes.TrimSuffix(b.Bytes(), []byte("\n")), nil
}
