package notifytest

import (
	"net"
	"net/http"
	"sync"
	"testing"
	"time"
)

// scripted is what the scripted HTTP servers share: a loopback listener
// that can be stopped and brought back on the same port, and one lock with
// a condition that every change of the server's state is broadcast on, for
// long polls, streams and the tests' waits.
type scripted struct {
	name string // the service, in failure messages
	t    testing.TB

	mu      sync.Mutex
	cond    *sync.Cond
	handler http.Handler
	srv     *http.Server // nil while stopped
	addr    string
}

func (s *scripted) init(t testing.TB, name string, h http.Handler) {
	s.t, s.name, s.handler = t, name, h
	s.cond = sync.NewCond(&s.mu)
}

// hostPort is the server's address.
func (s *scripted) hostPort() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.addr
}

func (s *scripted) start(addr string) {
	ln, err := net.Listen("tcp", addr)
	for i := 0; err != nil && i < 50; i++ { // the old port may linger briefly
		time.Sleep(20 * time.Millisecond)
		ln, err = net.Listen("tcp", addr)
	}
	if err != nil {
		s.t.Fatalf("%s: listen: %v", s.name, err)
	}
	srv := &http.Server{Handler: s.handler}
	s.mu.Lock()
	s.srv, s.addr = srv, ln.Addr().String()
	s.mu.Unlock()
	go srv.Serve(ln) //nolint:errcheck // ends with stop
}

// stop kills the server; cut, when set, runs under the lock first (to cut
// what the server's Close does not, like hijacked connections).
func (s *scripted) stop(cut func()) {
	s.mu.Lock()
	srv := s.srv
	s.srv = nil
	if cut != nil {
		cut()
	}
	s.cond.Broadcast()
	s.mu.Unlock()
	if srv != nil {
		srv.Close()
	}
}

// restart brings a stopped server back on the same port.
func (s *scripted) restart() {
	s.start(s.hostPort())
}

// serving reports, with mu held, whether a long poll or stream of r goes
// on: the server was not stopped and the client did not go away.
func (s *scripted) serving(r *http.Request) bool {
	return s.srv != nil && r.Context().Err() == nil
}

// wait blocks, with mu held, until the state changes (a Broadcast) or d
// passes, whichever is first: the one step of every long poll, stream and
// wait of the scripted servers.
func (s *scripted) wait(d time.Duration) {
	t := time.AfterFunc(d, func() { s.mu.Lock(); s.cond.Broadcast(); s.mu.Unlock() })
	s.cond.Wait()
	t.Stop()
}

// waitFor waits until ok (called with mu held) holds, or fails the test
// after d.
func (s *scripted) waitFor(d time.Duration, what string, ok func() bool) {
	s.t.Helper()
	deadline := time.Now().Add(d)
	s.mu.Lock()
	defer s.mu.Unlock()
	for !ok() {
		if time.Now().After(deadline) {
			s.t.Fatalf("%s: timed out waiting for %s", s.name, what)
		}
		s.wait(50 * time.Millisecond)
	}
}
