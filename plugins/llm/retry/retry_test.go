package retry

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"testing"
	"time"

	"github.com/overseer-dev/overseer/internal/clock"
)

func TestParseRetryAfter(t *testing.T) {
	now := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	tests := []struct {
		name, in string
		want     time.Duration
	}{
		{"seconds", "3", 3 * time.Second},
		{"fraction", "0.5", 500 * time.Millisecond},
		{"http date", now.Add(90 * time.Second).Format(http.TimeFormat), 90 * time.Second},
		{"date in the past", now.Add(-time.Minute).Format(http.TimeFormat), 0},
		{"empty", "", 0},
		{"garbage", "soon", 0},
		{"negative", "-5", 0},
		{"absurd", "99999999", 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := ParseRetryAfter(tt.in, now); got != tt.want {
				t.Errorf("ParseRetryAfter(%q) = %v, want %v", tt.in, got, tt.want)
			}
		})
	}
}

func FuzzParseRetryAfter(f *testing.F) {
	for _, s := range []string{"3", "0.5", "Fri, 02 Jan 2026 03:05:35 GMT", "", "soon", "-5", "1e9"} {
		f.Add(s)
	}
	now := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	f.Fuzz(func(t *testing.T, s string) {
		if d := ParseRetryAfter(s, now); d < 0 {
			t.Fatalf("negative wait %v for %q", d, s)
		}
	})
}

func TestBackoff(t *testing.T) {
	p := Policy{BaseDelay: time.Second, MaxDelay: 5 * time.Second}
	want := []time.Duration{time.Second, 2 * time.Second, 4 * time.Second, 5 * time.Second, 5 * time.Second}
	for i, w := range want {
		if got := p.Backoff(i + 1); got != w {
			t.Errorf("Backoff(%d) = %v, want %v", i+1, got, w)
		}
	}
}

func TestCompile(t *testing.T) {
	tests := []struct {
		name    string
		cfg     Config
		wantErr bool
	}{
		{"defaults", Config{}, false},
		{"custom", Config{MaxAttempts: 2, BaseDelay: "1s", MaxDelay: "10s"}, false},
		{"too many attempts", Config{MaxAttempts: 99}, true},
		{"bad duration", Config{BaseDelay: "x"}, true},
		{"max below base", Config{BaseDelay: "10s", MaxDelay: "1s"}, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if _, err := tt.cfg.Compile(); (err != nil) != tt.wantErr {
				t.Fatalf("err = %v, wantErr %v", err, tt.wantErr)
			}
		})
	}
}

// TestDoOnFakeClock runs the retry loop against the fake clock: the test
// advances time by exactly the expected waits, so nothing sleeps for real.
func TestDoOnFakeClock(t *testing.T) {
	clk := clock.NewFake(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	p := Policy{MaxAttempts: 4, BaseDelay: time.Second, MaxDelay: time.Minute, Sleeper: ClockSleeper{Clock: clk}}
	errs := []error{
		&StatusError{Status: 429, RetryAfter: 7 * time.Second},
		&StatusError{Status: 503},
		&TemporaryError{Err: errors.New("connection reset")},
	}
	calls := 0
	type out struct {
		v   string
		err error
	}
	done := make(chan out, 1)
	go func() {
		v, err := Do(t.Context(), p, func(context.Context) (string, bool, error) {
			calls++
			if calls <= len(errs) {
				return "", false, errs[calls-1]
			}
			return "ok", false, nil
		})
		done <- out{v, err}
	}()
	for _, wait := range []time.Duration{7 * time.Second, 2 * time.Second, 4 * time.Second} {
		waitForWaiter(t, clk)
		clk.Advance(wait - time.Nanosecond)
		if clk.Waiters() != 1 {
			t.Fatalf("woke before %v", wait)
		}
		clk.Advance(time.Nanosecond)
	}
	o := <-done
	if o.err != nil || o.v != "ok" || calls != 4 {
		t.Fatalf("got %q, %v after %d calls", o.v, o.err, calls)
	}
}

func waitForWaiter(t *testing.T, clk *clock.Fake) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for clk.Waiters() == 0 {
		if time.Now().After(deadline) {
			t.Fatal("retry never waited")
		}
		time.Sleep(100 * time.Microsecond)
	}
}

type rec struct{ waits []time.Duration }

func (r *rec) Sleep(ctx context.Context, d time.Duration) error {
	r.waits = append(r.waits, d)
	return nil
}

func TestDo(t *testing.T) {
	tests := []struct {
		name      string
		errs      []error
		committed bool
		wantCalls int
		wantErr   error
	}{
		{"success first", nil, false, 1, nil},
		{"401 not retried", []error{&StatusError{Status: 401}}, false, 1, &StatusError{}},
		{"plain error not retried", []error{errors.New("boom")}, false, 1, errors.New("")},
		{"committed not retried", []error{&StatusError{Status: 503}}, true, 1, &StatusError{}},
		{"exhausted", []error{&StatusError{Status: 502}, &StatusError{Status: 503}, &StatusError{Status: 529}}, false, 3, ErrExhausted},
		{"wrapped temporary", []error{fmt.Errorf("x: %w", &TemporaryError{Err: errors.New("eof")})}, false, 2, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := &rec{}
			p := Policy{MaxAttempts: 3, BaseDelay: time.Second, MaxDelay: time.Minute, Sleeper: r}
			calls := 0
			_, err := Do(t.Context(), p, func(context.Context) (int, bool, error) {
				calls++
				if calls <= len(tt.errs) {
					return 0, tt.committed, tt.errs[calls-1]
				}
				return 1, false, nil
			})
			if calls != tt.wantCalls {
				t.Errorf("calls = %d, want %d", calls, tt.wantCalls)
			}
			switch want := tt.wantErr.(type) {
			case nil:
				if err != nil {
					t.Fatalf("err = %v", err)
				}
			case *StatusError:
				var se *StatusError
				if !errors.As(err, &se) {
					t.Fatalf("err = %v, want StatusError", err)
				}
			default:
				if err == nil || (want == ErrExhausted && !errors.Is(err, ErrExhausted)) {
					t.Fatalf("err = %v, want %v", err, want)
				}
			}
			if len(r.waits) != max(calls-1, 0) {
				t.Errorf("waits = %v for %d calls", r.waits, calls)
			}
		})
	}
}
