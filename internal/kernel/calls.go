package kernel

import "sync"

// maxCalls bounds the calls callIndex keeps.
const maxCalls = 4096

// callIndex keeps, for the latest calls this process judged, the session
// key and arguments' hash under which their samples were recorded, so that
// a result reported later by the call's id (a hook's post event) is
// counted for the same call (perception.Bus.RecordCallResult). The oldest
// are forgotten first; a result of a call forgotten is not counted, and its
// repeats are counted as they come.
type callIndex struct {
	mu    sync.Mutex
	by    map[string]callRef
	order [maxCalls]string // the ids kept, a ring: next is the oldest once full
	next  int
}

type callRef struct{ key, hash string }

func (c *callIndex) put(id, key, hash string) {
	if id == "" || hash == "" {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.by == nil {
		c.by = map[string]callRef{}
	}
	if _, ok := c.by[id]; !ok {
		// On the submission path: forgetting the oldest is one slot of the
		// ring, not a shift of every id kept.
		if old := c.order[c.next]; old != "" {
			delete(c.by, old)
		}
		c.order[c.next] = id
		c.next = (c.next + 1) % maxCalls
	}
	c.by[id] = callRef{key: key, hash: hash}
}

func (c *callIndex) get(id string) (key, hash string, ok bool) {
	if id == "" {
		return "", "", false
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	r, ok := c.by[id]
	return r.key, r.hash, ok
}
