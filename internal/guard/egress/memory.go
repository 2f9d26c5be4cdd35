package egress

import (
	"context"
	"encoding/json"
	"errors"
	"slices"
	"strconv"
	"time"

	"github.com/overseer-dev/overseer/internal/guard/secrets"
	"github.com/overseer-dev/overseer/internal/store"
)

// Namespace is the store.StateStore namespace of the egress guard's
// session memory: one key per agent session, holding what the session read
// of secrets (as fingerprints) and where it has sent data. It lives in the
// store, not in the process, because every hook call is a process of its
// own.
const Namespace = "egress"

// Bounds on one session's memory.
const (
	maxReads      = 64
	maxDests      = 512
	maxValuesRead = 128 // values fingerprinted per secret read
)

// SecretRead is a read of a secret that a session made (or asked for).
type SecretRead struct {
	Path     string            `json:"path"`
	Pattern  string            `json:"pattern"` // the secret pattern it matched
	Tool     string            `json:"tool"`
	ActionID string            `json:"action_id,omitempty"`
	At       time.Time         `json:"at"`
	Values   []secrets.ValueFP `json:"values,omitempty"` // keyed fingerprints, never the values
	// Pending is set while the read waits for a person (its action was
	// judged at a level that asks): it counts as read meanwhile, since a
	// person may allow it, and is forgotten when the person refuses it.
	Pending bool `json:"pending,omitempty"`
}

// Memory is one session's record.
type Memory struct {
	Reads []SecretRead `json:"reads,omitempty"`
	Dests []string     `json:"dests,omitempty"`
	// Cleared are the destinations a person approved a send to: only
	// these count as used for the flow rule. A destination the session
	// used without a person (a fetch at notify) does not: an agent could
	// use a host once with nothing in it, read a secret, and send it there
	// as to a host "used before".
	Cleared []string  `json:"cleared,omitempty"`
	At      time.Time `json:"at"` // last change
}

// clone copies m, so that changing the copy leaves m as it was.
func (m *Memory) clone() Memory {
	c := *m
	c.Reads = slices.Clone(m.Reads)
	c.Dests = slices.Clone(m.Dests)
	c.Cleared = slices.Clone(m.Cleared)
	return c
}

func (m *Memory) seen(dest string) bool { return slices.Contains(m.Dests, dest) }

func (m *Memory) cleared(dest string) bool { return slices.Contains(m.Cleared, dest) }

// sessionKey is unambiguous for any agent and session.
func sessionKey(agent, session string) string {
	return strconv.Itoa(len(agent)) + ":" + agent + ":" + session
}

// load reads a session's memory (empty when there is none).
func load(ctx context.Context, st store.StateStore, key string) (Memory, error) {
	var m Memory
	b, err := st.GetState(ctx, Namespace, key)
	if errors.Is(err, store.ErrNotFound) {
		return m, nil
	}
	if err != nil {
		return m, err
	}
	err = json.Unmarshal(b, &m)
	return m, err
}

// update changes a session's memory atomically. fn reports whether it
// changed the memory; it may be called more than once. seen, when not
// nil, is the memory as read a moment ago (by Check, for this action).
func update(ctx context.Context, st store.StateStore, key string, now time.Time, seen *Memory, fn func(*Memory) bool) error {
	// Most actions change nothing (a session sends to the places it sent
	// to before): a read tells, without the write lock and the sync of a
	// write. What a read saw is what the memory held at least (reads and
	// destinations are added, and dropped only when old or past the
	// bounds, where dropping a destination only makes later checks
	// stricter), and fn records every secret read as a change: a change
	// the read does not need is not needed under the lock either.
	if seen != nil {
		if m := seen.clone(); !fn(&m) {
			return nil
		}
	} else if m, err := load(ctx, st, key); err == nil && !fn(&m) {
		return nil
	}
	return st.UpdateState(ctx, Namespace, key, func(old []byte) ([]byte, error) {
		var m Memory
		if old != nil && json.Unmarshal(old, &m) != nil {
			// An unreadable record (written by another version) is
			// replaced rather than left to fail every later action of the
			// session; Check, reading it, fails closed meanwhile.
			m = Memory{}
		}
		if !fn(&m) {
			return old, nil
		}
		m.Reads = trimReads(m.Reads)
		if len(m.Dests) > maxDests {
			m.Dests = m.Dests[len(m.Dests)-maxDests:]
		}
		if len(m.Cleared) > maxDests {
			m.Cleared = m.Cleared[len(m.Cleared)-maxDests:]
		}
		m.At = now
		return json.Marshal(m)
	})
}

// Prune forgets the memories of sessions untouched since cutoff and
// returns how many it forgot.
func Prune(ctx context.Context, st store.StateStore, cutoff time.Time) (int, error) {
	all, err := st.ListState(ctx, Namespace)
	if err != nil {
		return 0, err
	}
	n := 0
	for k, v := range all {
		var m Memory
		if json.Unmarshal(v, &m) == nil && !m.At.Before(cutoff) {
			continue
		}
		if err := st.UpdateState(ctx, Namespace, k, func(old []byte) ([]byte, error) {
			var cur Memory
			if old != nil && json.Unmarshal(old, &cur) == nil && !cur.At.Before(cutoff) {
				return old, nil
			}
			return nil, nil
		}); err != nil {
			return n, err
		}
		n++
	}
	return n, nil
}

// trimReads bounds a session's reads to maxReads: reads that wait for a
// person go first, oldest first, then the oldest reads that were made. A
// made read is never pushed out by waiting ones: one action naming more
// secret files than the bound, refused, would otherwise leave the session
// remembering nothing of what it read.
func trimReads(reads []SecretRead) []SecretRead {
	over := len(reads) - maxReads
	if over <= 0 {
		return reads
	}
	out := make([]SecretRead, 0, maxReads)
	for _, r := range reads {
		if r.Pending && over > 0 {
			over--
			continue
		}
		out = append(out, r)
	}
	return out[over:]
}
