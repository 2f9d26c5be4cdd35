// Package retry runs a model call again, with exponential backoff, when the
// server says it is busy or briefly unavailable (429, 502, 503, 504, or a
// connection that failed before any reply), and honours the server's
// Retry-After. Waiting goes through an injected Sleeper so that tests never
// sleep for real.
package retry

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/overseer-dev/overseer/internal/clock"
)

// ErrExhausted wraps the last error when every attempt failed.
var ErrExhausted = errors.New("llm: retries exhausted")

// StatusError is an HTTP failure of a model server. RetryAfter is the wait
// the server asked for (0 when it named none).
type StatusError struct {
	Status     int
	RetryAfter time.Duration
	Body       string
}

func (e *StatusError) Error() string {
	body := e.Body
	if len(body) > 300 {
		body = body[:300] + "…"
	}
	return fmt.Sprintf("llm server: HTTP %d: %s", e.Status, strings.TrimSpace(body))
}

// Retryable reports whether the status is worth another attempt.
func (e *StatusError) Retryable() bool {
	switch e.Status {
	case http.StatusTooManyRequests, http.StatusBadGateway, http.StatusServiceUnavailable,
		http.StatusGatewayTimeout, 529: // 529: Anthropic's "overloaded"
		return true
	}
	return false
}

// TemporaryError marks a failure before any reply arrived (a refused or reset
// connection) as worth another attempt.
type TemporaryError struct{ Err error }

func (e *TemporaryError) Error() string { return "llm transport: " + e.Err.Error() }
func (e *TemporaryError) Unwrap() error { return e.Err }

// ParseRetryAfter reads a Retry-After header: delay seconds or an HTTP date
// (relative to now). It returns 0 for an empty or unreadable value.
func ParseRetryAfter(v string, now time.Time) time.Duration {
	v = strings.TrimSpace(v)
	if v == "" {
		return 0
	}
	if s, err := strconv.ParseFloat(v, 64); err == nil {
		if s <= 0 || s > 24*3600 {
			return 0
		}
		return time.Duration(s * float64(time.Second))
	}
	if t, err := http.ParseTime(v); err == nil {
		if d := t.Sub(now); d > 0 {
			return d
		}
	}
	return 0
}

// Sleeper waits for d or until ctx ends.
type Sleeper interface {
	Sleep(ctx context.Context, d time.Duration) error
}

// ClockSleeper sleeps on a Clock.
type ClockSleeper struct{ Clock clock.Clock }

// Sleep waits for d on the clock or returns ctx's error.
func (s ClockSleeper) Sleep(ctx context.Context, d time.Duration) error {
	if d <= 0 {
		return ctx.Err()
	}
	select {
	case <-s.Clock.After(d):
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// Config is the retry section of an LLM plugin's configuration. Durations are
// Go duration strings ("500ms", "30s").
type Config struct {
	MaxAttempts int    `json:"max_attempts,omitempty"` // total attempts, default 4
	BaseDelay   string `json:"base_delay,omitempty"`   // first backoff, default 500ms
	MaxDelay    string `json:"max_delay,omitempty"`    // cap on one wait, default 30s
}

// Policy is a validated retry configuration.
type Policy struct {
	MaxAttempts int
	BaseDelay   time.Duration
	MaxDelay    time.Duration
	Sleeper     Sleeper
}

// DefaultPolicy is four attempts, 500ms doubling to at most 30s, on the real
// clock.
func DefaultPolicy() Policy {
	return Policy{MaxAttempts: 4, BaseDelay: 500 * time.Millisecond, MaxDelay: 30 * time.Second,
		Sleeper: ClockSleeper{Clock: clock.Real{}}}
}

// Compile validates c and fills in defaults.
func (c Config) Compile() (Policy, error) {
	p := DefaultPolicy()
	if c.MaxAttempts < 0 || c.MaxAttempts > 20 {
		return Policy{}, fmt.Errorf("retry: max_attempts %d out of range 0..20", c.MaxAttempts)
	}
	if c.MaxAttempts > 0 {
		p.MaxAttempts = c.MaxAttempts
	}
	for _, f := range []struct {
		s   string
		dst *time.Duration
		nm  string
	}{{c.BaseDelay, &p.BaseDelay, "base_delay"}, {c.MaxDelay, &p.MaxDelay, "max_delay"}} {
		if f.s == "" {
			continue
		}
		d, err := time.ParseDuration(f.s)
		if err != nil || d < 0 {
			return Policy{}, fmt.Errorf("retry: bad %s %q", f.nm, f.s)
		}
		*f.dst = d
	}
	if p.MaxDelay < p.BaseDelay {
		return Policy{}, fmt.Errorf("retry: max_delay %v below base_delay %v", p.MaxDelay, p.BaseDelay)
	}
	return p, nil
}

// Backoff is the wait before attempt n+1 after n failed attempts (n ≥ 1),
// without jitter: base·2^(n-1), capped at MaxDelay.
func (p Policy) Backoff(n int) time.Duration {
	d := p.BaseDelay
	for i := 1; i < n && d < p.MaxDelay; i++ {
		d *= 2
	}
	return min(d, p.MaxDelay)
}

// Retryable reports whether err is worth another attempt.
func Retryable(err error) bool {
	var se *StatusError
	if errors.As(err, &se) {
		return se.Retryable()
	}
	var te *TemporaryError
	return errors.As(err, &te)
}

// Do runs fn until it succeeds, fails with an error that is not retryable,
// ctx ends, or MaxAttempts is reached. fn returns committed=true once it has
// delivered anything to the caller (a streamed piece): such an attempt is
// never repeated, since that would show the caller the same text twice.
// A server's Retry-After wins over the backoff when it is longer, up to
// MaxDelay; a longer demand ends the retries.
func Do[T any](ctx context.Context, p Policy, fn func(ctx context.Context) (T, bool, error)) (T, error) {
	var zero T
	attempts := max(p.MaxAttempts, 1)
	sleeper := p.Sleeper
	if sleeper == nil {
		sleeper = ClockSleeper{Clock: clock.Real{}}
	}
	var last error
	for n := 1; ; n++ {
		v, committed, err := fn(ctx)
		if err == nil {
			return v, nil
		}
		last = err
		if committed || !Retryable(err) || ctx.Err() != nil {
			return zero, err
		}
		if n >= attempts {
			return zero, fmt.Errorf("%w after %d attempts: %w", ErrExhausted, n, last)
		}
		wait := p.Backoff(n)
		var se *StatusError
		if errors.As(err, &se) && se.RetryAfter > wait {
			if se.RetryAfter > p.MaxDelay {
				return zero, fmt.Errorf("%w: server asked to wait %v (max_delay %v): %w", ErrExhausted, se.RetryAfter, p.MaxDelay, err)
			}
			wait = se.RetryAfter
		}
		if err := sleeper.Sleep(ctx, wait); err != nil {
			return zero, fmt.Errorf("llm retry wait: %w (last error: %w)", err, last)
		}
	}
}
