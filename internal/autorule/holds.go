package autorule

import (
	"sync"
	"time"
)

// Holds are the lasting effects of rules that fired: a block_tool rule
// with a duration blocks its tool for the agent until a time, and an
// anomaly rule that fired does not fire again for the same agent within
// its window (its response is under way). They are fed from the audit
// trail's records of rules that fired, so every process sharing a
// database sees them. Safe for concurrent use.
type Holds struct {
	mu    sync.RWMutex
	until map[holdKey]time.Time
}

type holdKey struct{ rule, agent string }

// NewHolds returns no holds.
func NewHolds() *Holds { return &Holds{until: map[holdKey]time.Time{}} }

// Set holds rule for agent until until (a later hold wins).
func (h *Holds) Set(rule, agent string, until time.Time) {
	h.mu.Lock()
	defer h.mu.Unlock()
	k := holdKey{rule, agent}
	if until.After(h.until[k]) {
		h.until[k] = until
	}
}

// Clear drops every hold of rule (the rule was changed or removed).
func (h *Holds) Clear(rule string) {
	h.mu.Lock()
	defer h.mu.Unlock()
	for k := range h.until {
		if k.rule == rule {
			delete(h.until, k)
		}
	}
}

// Until reports whether rule holds for agent at now, and until when.
func (h *Holds) Until(rule, agent string, now time.Time) (time.Time, bool) {
	h.mu.RLock()
	defer h.mu.RUnlock()
	if len(h.until) == 0 {
		return time.Time{}, false
	}
	u, ok := h.until[holdKey{rule, agent}]
	if !ok || !now.Before(u) {
		return time.Time{}, false
	}
	return u, true
}
