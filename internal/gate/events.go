package gate

import (
	"context"

	"github.com/overseer-dev/overseer/internal/store"
)

// Event types.
const (
	EventRequested = "requested" // a new approval is pending
	EventAnswered  = "answered"  // someone answered (Approval.Answers shows whether it applied)
	EventExpired   = "expired"   // the deadline passed and the default answer applied
)

// SubscriberBuffer is how many events a subscriber's channel holds before
// further events to it are dropped.
const SubscriberBuffer = 64

// Event tells live front ends that the approvals queue changed. Approval is
// the record as stored after the change; it is shared between subscribers
// and must be treated as read-only.
//
// Events are local to the gate that made the change: an answer written by
// another process sharing the database is seen by Wait's polling, not here.
type Event struct {
	Type     string
	Approval *store.Approval
}

type subscriber struct {
	ch chan Event
}

// Subscribe returns a channel of the gate's events until ctx ends, when the
// channel is closed. Delivery is a non-blocking fan-out: a subscriber whose
// buffer (SubscriberBuffer events) is full misses events rather than stalling
// the gate, so a front end must re-read the queue (Pending) when it cannot
// keep up. Dropped reports how many events were missed in total.
func (g *Gate) Subscribe(ctx context.Context) <-chan Event {
	s := &subscriber{ch: make(chan Event, SubscriberBuffer)}
	g.mu.Lock()
	g.subs[s] = struct{}{}
	g.mu.Unlock()
	// Owned by the subscriber's ctx: exits, and closes the channel, when it ends.
	go func() {
		<-ctx.Done()
		g.mu.Lock()
		delete(g.subs, s)
		close(s.ch)
		g.mu.Unlock()
	}()
	return s.ch
}

// Dropped reports how many events were not delivered because a subscriber's
// buffer was full.
func (g *Gate) Dropped() uint64 { return g.dropped.Load() }

// publish delivers e to every subscriber without blocking.
func (g *Gate) publish(e Event) {
	g.mu.Lock()
	defer g.mu.Unlock()
	for s := range g.subs {
		select {
		case s.ch <- e:
		default:
			g.dropped.Add(1)
		}
	}
}
