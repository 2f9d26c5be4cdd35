package limits

import (
	"sync"
	"time"

	"github.com/overseer-dev/overseer/internal/clock"
)

// Throttle slows down guessing a credential, per client: after Free wrong
// guesses, each further wrong guess puts the client in a backoff that
// doubles from Base up to Max, during which its wrong guesses are refused
// (429 with Retry-After) instead of answered as wrong. It never refuses the
// right credential: callers check the credential first and consult the
// throttle only for a wrong one, so an agent that shares the person's
// address cannot lock the person out. A client's count is forgotten after
// Forget without a wrong guess.
type Throttle struct {
	Free   int
	Base   time.Duration
	Max    time.Duration
	Forget time.Duration

	clk     clock.Clock
	mu      sync.Mutex
	clients map[string]*guesses
}

type guesses struct {
	fails int
	last  time.Time
	until time.Time
}

// Defaults of a Throttle.
const (
	DefaultFreeGuesses = 5
	DefaultBackoffBase = 500 * time.Millisecond
	DefaultBackoffMax  = 30 * time.Second
	DefaultForget      = 15 * time.Minute
	maxClients         = 10000
)

// NewThrottle returns a throttle with the defaults on clk (the real clock
// when nil).
func NewThrottle(clk clock.Clock) *Throttle {
	if clk == nil {
		clk = clock.Real{}
	}
	return &Throttle{Free: DefaultFreeGuesses, Base: DefaultBackoffBase, Max: DefaultBackoffMax,
		Forget: DefaultForget, clk: clk, clients: map[string]*guesses{}}
}

// Wrong records a wrong guess by client and says how it is answered: wait
// is zero when the guess may be answered as plainly wrong (401), and
// otherwise how long the client must wait before its next guess is
// answered (the guess is refused with 429 and Retry-After). A wrong guess
// made during the backoff counts too, and lengthens it.
func (t *Throttle) Wrong(client string) (wait time.Duration) {
	t.mu.Lock()
	defer t.mu.Unlock()
	now := t.clk.Now()
	g := t.clients[client]
	if g == nil || now.Sub(g.last) > t.Forget {
		if len(t.clients) >= maxClients {
			t.sweep(now)
		}
		g = &guesses{}
		t.clients[client] = g
	}
	inBackoff := now.Before(g.until)
	g.fails++
	g.last = now
	if g.fails > t.Free {
		d := t.Base << min(g.fails-t.Free-1, 20)
		if d > t.Max || d <= 0 {
			d = t.Max
		}
		g.until = now.Add(d)
	}
	if inBackoff || g.fails > t.Free {
		return g.until.Sub(now)
	}
	return 0
}

// Backoff is how long client must still wait (0: not throttled).
func (t *Throttle) Backoff(client string) time.Duration {
	t.mu.Lock()
	defer t.mu.Unlock()
	g := t.clients[client]
	if g == nil {
		return 0
	}
	return max(0, g.until.Sub(t.clk.Now()))
}

// sweep forgets clients without a recent wrong guess and, if still too
// many, half of them.
func (t *Throttle) sweep(now time.Time) {
	for k, g := range t.clients {
		if now.Sub(g.last) > t.Forget {
			delete(t.clients, k)
		}
	}
	n := len(t.clients) / 2
	for k := range t.clients {
		if len(t.clients) < maxClients/2 || n == 0 {
			break
		}
		delete(t.clients, k)
		n--
	}
}
