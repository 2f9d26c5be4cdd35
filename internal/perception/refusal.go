package perception

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/overseer-dev/overseer/internal/store"
)

// RefusalsNamespace is the state namespace of the calls people refused;
// keys are hashes of the session and the call's arguments hash.
const RefusalsNamespace = "refusals"

// RefusalMaxAge is how long a refusal is remembered within its session.
const RefusalMaxAge = 24 * time.Hour

// Refusal is a person's refusal of one exact call (same arguments hash)
// in one session, and how often the session has repeated the call since.
type Refusal struct {
	Session    string    `json:"session"`
	ArgsHash   string    `json:"args_hash"`
	Tool       string    `json:"tool,omitempty"`
	ApprovalID string    `json:"approval_id,omitempty"`
	Who        string    `json:"who"`
	Channel    string    `json:"channel"`
	Reason     string    `json:"reason,omitempty"` // the person's words
	Decision   string    `json:"decision"`         // deny or abort
	At         time.Time `json:"at"`
	// Repeats counts the calls refused again at once since.
	Repeats int `json:"repeats"`
	// LastRepeat is when the call was last repeated.
	LastRepeat time.Time `json:"last_repeat,omitempty"`
}

func refusalKey(session, argsHash string) string {
	sum := sha256.Sum256([]byte(session + "\x00" + argsHash))
	return hex.EncodeToString(sum[:16])
}

// RecordRefusal remembers that a person refused the call with argsHash in
// session. It is stored, so every process sharing the database refuses a
// repeat at once, and replaces an earlier refusal of the same call
// (resetting its repeats). Refusals older than RefusalMaxAge are dropped.
func (b *Bus) RecordRefusal(ctx context.Context, r Refusal) error {
	if b.st == nil {
		return ErrNoStore
	}
	if r.Session == "" && r.ArgsHash == "" {
		return errors.New("perception: a refusal names no call")
	}
	if r.At.IsZero() {
		r.At = b.clk.Now()
	}
	r.Repeats, r.LastRepeat = 0, time.Time{}
	if err := b.st.UpdateState(ctx, RefusalsNamespace, refusalKey(r.Session, r.ArgsHash), func(old []byte) ([]byte, error) {
		var prev Refusal
		if old != nil && json.Unmarshal(old, &prev) == nil && prev.ApprovalID == r.ApprovalID && r.ApprovalID != "" {
			// The same refusal, whose repeats were counted first.
			r.Repeats, r.LastRepeat = prev.Repeats, prev.LastRepeat
		}
		return json.Marshal(r)
	}); err != nil {
		return fmt.Errorf("perception: recording a refusal: %w", err)
	}
	b.pruneRefusals(ctx)
	return nil
}

// pruneRefusals drops refusals past RefusalMaxAge. Failures are ignored: a
// stale entry is ignored when read anyway.
func (b *Bus) pruneRefusals(ctx context.Context) {
	all, err := b.st.ListState(ctx, RefusalsNamespace)
	if err != nil {
		return
	}
	cut := b.clk.Now().Add(-RefusalMaxAge)
	for k, v := range all {
		var r Refusal
		if json.Unmarshal(v, &r) == nil && !r.At.Before(cut) {
			continue
		}
		_ = b.st.UpdateState(ctx, RefusalsNamespace, k, func([]byte) ([]byte, error) { return nil, nil })
	}
}

// Refusal returns the refusal of the call with argsHash in session, if a
// person refused it within RefusalMaxAge.
func (b *Bus) Refusal(ctx context.Context, session, argsHash string) (Refusal, bool, error) {
	if b.st == nil {
		return Refusal{}, false, ErrNoStore
	}
	v, err := b.st.GetState(ctx, RefusalsNamespace, refusalKey(session, argsHash))
	if errors.Is(err, store.ErrNotFound) {
		return Refusal{}, false, nil
	}
	if err != nil {
		return Refusal{}, false, fmt.Errorf("perception: reading refusals: %w", err)
	}
	var r Refusal
	if err := json.Unmarshal(v, &r); err != nil {
		return Refusal{}, false, fmt.Errorf("%w: refusal: %v", ErrCorrupt, err)
	}
	if r.Session != session || r.ArgsHash != argsHash || b.clk.Now().Sub(r.At) > RefusalMaxAge {
		return Refusal{}, false, nil
	}
	return r, true, nil
}

// RecordRepeat counts one more repeat of the refused call r, refused
// again at once; it returns the refusal as updated. A refusal not stored
// yet (its answer's bookkeeping is still running) is stored with this
// repeat.
func (b *Bus) RecordRepeat(ctx context.Context, r Refusal) (Refusal, error) {
	if b.st == nil {
		return Refusal{}, ErrNoStore
	}
	var out Refusal
	err := b.st.UpdateState(ctx, RefusalsNamespace, refusalKey(r.Session, r.ArgsHash), func(old []byte) ([]byte, error) {
		cur := r
		if old != nil {
			var prev Refusal
			if json.Unmarshal(old, &prev) == nil {
				cur = prev
			}
		}
		cur.Repeats++
		cur.LastRepeat = b.clk.Now()
		out = cur
		return json.Marshal(cur)
	})
	if err != nil {
		return Refusal{}, fmt.Errorf("perception: counting a repeat: %w", err)
	}
	return out, nil
}

// CreatedNamespace is the state namespace of the paths sessions created;
// keys are hashes of the session.
const CreatedNamespace = "created"

// maxCreated bounds the paths kept per session (the newest are kept).
const maxCreated = 512

type createdPaths struct {
	Session string    `json:"session"`
	Paths   []string  `json:"paths"`
	At      time.Time `json:"at"`
}

func createdKey(session string) string {
	sum := sha256.Sum256([]byte(session))
	return hex.EncodeToString(sum[:16])
}

// RecordCreated remembers that session created paths (absolute paths that
// did not exist before an action of the session that was let through wrote
// them): a scratch directory the agent made may later be removed without
// asking. It is stored, so every process sharing the database knows it.
func (b *Bus) RecordCreated(ctx context.Context, session string, paths []string) error {
	if b.st == nil {
		return ErrNoStore
	}
	if len(paths) == 0 {
		return nil
	}
	return b.st.UpdateState(ctx, CreatedNamespace, createdKey(session), func(old []byte) ([]byte, error) {
		c := createdPaths{Session: session}
		if old != nil {
			_ = json.Unmarshal(old, &c)
			if c.Session != session {
				c = createdPaths{Session: session}
			}
		}
		for _, p := range paths {
			if !slicesContains(c.Paths, p) {
				c.Paths = append(c.Paths, p)
			}
		}
		if len(c.Paths) > maxCreated {
			c.Paths = c.Paths[len(c.Paths)-maxCreated:]
		}
		c.At = b.clk.Now()
		return json.Marshal(c)
	})
}

// Created reports, for each path, whether session created it or a
// directory that holds it.
func (b *Bus) Created(ctx context.Context, session string, paths []string) ([]bool, error) {
	out := make([]bool, len(paths))
	if b.st == nil {
		return out, ErrNoStore
	}
	v, err := b.st.GetState(ctx, CreatedNamespace, createdKey(session))
	if errors.Is(err, store.ErrNotFound) {
		return out, nil
	}
	if err != nil {
		return out, fmt.Errorf("perception: reading created paths: %w", err)
	}
	var c createdPaths
	if err := json.Unmarshal(v, &c); err != nil || c.Session != session {
		return out, nil
	}
	for i, p := range paths {
		for _, d := range c.Paths {
			if p == d || len(p) > len(d) && p[:len(d)] == d && (d == "/" || p[len(d)] == '/') {
				out[i] = true
				break
			}
		}
	}
	return out, nil
}

func slicesContains(xs []string, x string) bool {
	for _, y := range xs {
		if y == x {
			return true
		}
	}
	return false
}
