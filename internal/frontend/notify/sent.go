package notify

import "sync"

// sentIndex keeps the messages a two-way channel sent for requests: by the
// channel's id of a message (a button press or a reply names it) and by
// approval (to settle its messages once it is decided).
type sentIndex[K comparable, S any] struct {
	mu     sync.Mutex
	byKey  map[K]S
	byAppr map[string][]K
}

func newSentIndex[K comparable, S any]() *sentIndex[K, S] {
	return &sentIndex[K, S]{byKey: map[K]S{}, byAppr: map[string][]K{}}
}

// add keeps s, the message key sent for approval.
func (x *sentIndex[K, S]) add(approval string, key K, s S) {
	x.mu.Lock()
	defer x.mu.Unlock()
	x.byKey[key] = s
	x.byAppr[approval] = append(x.byAppr[approval], key)
}

// get returns the message key, or the zero S when it is not kept.
func (x *sentIndex[K, S]) get(key K) S {
	x.mu.Lock()
	defer x.mu.Unlock()
	return x.byKey[key]
}

// take forgets the messages of approval and returns them.
func (x *sentIndex[K, S]) take(approval string) []S {
	x.mu.Lock()
	defer x.mu.Unlock()
	var out []S
	for _, k := range x.byAppr[approval] {
		if s, ok := x.byKey[k]; ok {
			out = append(out, s)
			delete(x.byKey, k)
		}
	}
	delete(x.byAppr, approval)
	return out
}
