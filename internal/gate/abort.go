package gate

import (
	"fmt"
	"sync"
)

// AbortStage is how hard an abort stops the agent.
type AbortStage uint8

const (
	// AbortNone means no abort was asked for.
	AbortNone AbortStage = iota
	// AbortGentle stops the agent after its current step.
	AbortGentle
	// AbortForce stops it at once.
	AbortForce
)

var abortStageNames = [...]string{"none", "gentle", "force"}

// String returns the stage's name.
func (s AbortStage) String() string {
	if int(s) < len(abortStageNames) {
		return abortStageNames[s]
	}
	return fmt.Sprintf("abort_stage(%d)", uint8(s))
}

// maxAbortKeys bounds the tracker; the oldest keys are forgotten first.
const maxAbortKeys = 4096

// Aborts tracks the two-stage abort per key (a session, a task): the first
// abort stops gently after the current step, a second one forces the stop.
// The zero value is ready to use and safe for concurrent use. It keeps at
// most 4096 keys, forgetting the oldest first.
type Aborts struct {
	mu    sync.Mutex
	count map[string]int
	order []string // keys in first-abort order, for eviction
}

// Abort records an abort for key and returns the stage it calls for:
// AbortGentle the first time, AbortForce from the second time on.
func (a *Aborts) Abort(key string) AbortStage {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.count == nil {
		a.count = map[string]int{}
	}
	n, seen := a.count[key]
	if !seen {
		if len(a.order) >= maxAbortKeys {
			delete(a.count, a.order[0])
			a.order = a.order[1:]
		}
		a.order = append(a.order, key)
	}
	a.count[key] = n + 1
	if n == 0 {
		return AbortGentle
	}
	return AbortForce
}

// Stage returns the stage key is at without recording an abort.
func (a *Aborts) Stage(key string) AbortStage {
	a.mu.Lock()
	defer a.mu.Unlock()
	switch n := a.count[key]; {
	case n == 0:
		return AbortNone
	case n == 1:
		return AbortGentle
	default:
		return AbortForce
	}
}

// Reset forgets key, for example when its task has stopped.
func (a *Aborts) Reset(key string) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if _, ok := a.count[key]; !ok {
		return
	}
	delete(a.count, key)
	for i, k := range a.order {
		if k == key {
			a.order = append(a.order[:i], a.order[i+1:]...)
			break
		}
	}
}
