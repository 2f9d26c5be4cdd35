// Package clock injects time, so that timeouts and windows are tested
// without sleeping. Real is the wall clock; Fake is a manual clock for tests.
package clock

import (
	"sort"
	"sync"
	"time"
)

// Clock tells the time and makes timers.
type Clock interface {
	Now() time.Time
	// After returns a channel that receives the time once d has passed.
	After(d time.Duration) <-chan time.Time
}

// Real is the system clock.
type Real struct{}

func (Real) Now() time.Time                         { return time.Now() }
func (Real) After(d time.Duration) <-chan time.Time { return time.After(d) }

// Fake is a clock that moves only when told to. Safe for concurrent use.
type Fake struct {
	mu      sync.Mutex
	now     time.Time
	waiters []fakeWaiter
}

type fakeWaiter struct {
	at time.Time
	ch chan time.Time
}

// NewFake returns a fake clock set to t.
func NewFake(t time.Time) *Fake { return &Fake{now: t} }

func (f *Fake) Now() time.Time {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.now
}

func (f *Fake) After(d time.Duration) <-chan time.Time {
	f.mu.Lock()
	defer f.mu.Unlock()
	ch := make(chan time.Time, 1)
	at := f.now.Add(d)
	if d <= 0 {
		ch <- f.now
		return ch
	}
	f.waiters = append(f.waiters, fakeWaiter{at: at, ch: ch})
	return ch
}

// Advance moves the clock forward by d and fires the timers that are due.
func (f *Fake) Advance(d time.Duration) {
	f.mu.Lock()
	f.now = f.now.Add(d)
	now := f.now
	sort.Slice(f.waiters, func(i, j int) bool { return f.waiters[i].at.Before(f.waiters[j].at) })
	var keep []fakeWaiter
	for _, w := range f.waiters {
		if !w.at.After(now) {
			w.ch <- now
		} else {
			keep = append(keep, w)
		}
	}
	f.waiters = keep
	f.mu.Unlock()
}

// Waiters reports how many timers are pending (for tests that must wait
// until a goroutine has started waiting before advancing).
func (f *Fake) Waiters() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return len(f.waiters)
}

// Shifted is the system clock moved by a fixed offset: it runs at the
// real pace from another instant. It exists for test builds (a daemon
// built with the overseer_testclock tag starts its clock at an injected
// time); release binaries never make one.
type Shifted struct{ By time.Duration }

// StartingAt returns a Shifted clock that reads t now.
func StartingAt(t time.Time) Shifted { return Shifted{By: time.Until(t)} }

func (s Shifted) Now() time.Time                       { return time.Now().Add(s.By) }
func (Shifted) After(d time.Duration) <-chan time.Time { return time.After(d) }
