package paths

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strconv"
	"sync"
	"time"

	"github.com/overseer-dev/overseer/internal/clock"
	"github.com/overseer-dev/overseer/internal/guard"
	"github.com/overseer-dev/overseer/internal/store"
)

// ReadInfo is what was recorded about the last read of a file in a session.
type ReadInfo struct {
	// Full is true when the whole file was read (no offset or limit).
	Full bool `json:"full"`
	// Mtime is the file's modification time when it was read.
	Mtime time.Time `json:"mtime"`
	// Hash is the hex SHA-256 of the file's content when it was read.
	Hash string `json:"hash"`
	// At is when the read was recorded.
	At time.Time `json:"at"`
}

// ReadTracker remembers which files a session has read, so that an edit
// can be refused when the agent has not seen the current content
// (read-before-edit). Writes by the builtin tools count as reads: the agent
// knows what it wrote.
type ReadTracker interface {
	RecordRead(ctx context.Context, session, path string, full bool, mtime time.Time, hash string) error
	LastRead(ctx context.Context, session, path string) (ReadInfo, bool, error)
}

// ReadsNamespace is the store.StateStore namespace of StoreTracker.
const ReadsNamespace = "reads"

// StoreTracker is a ReadTracker kept in a store.StateStore, so reads
// recorded by one process (`overseer tool run file_read`) are seen by the
// next.
type StoreTracker struct {
	st    store.StateStore
	clock clock.Clock
}

var _ ReadTracker = (*StoreTracker)(nil)

// NewStoreTracker returns a tracker over st. A nil clock means the real one.
func NewStoreTracker(st store.StateStore, clk clock.Clock) *StoreTracker {
	if clk == nil {
		clk = clock.Real{}
	}
	return &StoreTracker{st: st, clock: clk}
}

// readKey is unambiguous for any session and path.
func readKey(session, path string) string {
	return strconv.Itoa(len(session)) + ":" + session + ":" + path
}

// RecordRead implements ReadTracker.
func (t *StoreTracker) RecordRead(ctx context.Context, session, path string, full bool, mtime time.Time, hash string) error {
	if t == nil || t.st == nil {
		return errors.New("paths: read tracker has no store")
	}
	key, b, err := t.ReadState(session, path, full, mtime, hash)
	if err != nil {
		return err
	}
	return t.PutState(ctx, key, b)
}

// PutState writes a read record made by ReadState.
func (t *StoreTracker) PutState(ctx context.Context, key string, value []byte) error {
	if t == nil || t.st == nil {
		return errors.New("paths: read tracker has no store")
	}
	return t.st.UpdateState(ctx, ReadsNamespace, key, func([]byte) ([]byte, error) { return value, nil })
}

// ReadState returns the state key (in ReadsNamespace) and value that
// RecordRead writes, for a caller that commits the read together with
// other records (a store.PutStateEffect of an audit batch).
func (t *StoreTracker) ReadState(session, path string, full bool, mtime time.Time, hash string) (key string, value []byte, err error) {
	b, err := json.Marshal(ReadInfo{Full: full, Mtime: mtime, Hash: hash, At: t.clock.Now()})
	if err != nil {
		return "", nil, err
	}
	return readKey(session, path), b, nil
}

// LastRead implements ReadTracker.
func (t *StoreTracker) LastRead(ctx context.Context, session, path string) (ReadInfo, bool, error) {
	if t == nil || t.st == nil {
		return ReadInfo{}, false, errors.New("paths: read tracker has no store")
	}
	b, err := t.st.GetState(ctx, ReadsNamespace, readKey(session, path))
	if errors.Is(err, store.ErrNotFound) {
		return ReadInfo{}, false, nil
	}
	if err != nil {
		return ReadInfo{}, false, err
	}
	var ri ReadInfo
	if err := json.Unmarshal(b, &ri); err != nil {
		return ReadInfo{}, false, fmt.Errorf("paths: read record of %s: %w", path, err)
	}
	return ri, true, nil
}

// Prune forgets reads recorded before cutoff and returns how many it
// forgot, so the namespace does not grow without bound.
func (t *StoreTracker) Prune(ctx context.Context, cutoff time.Time) (int, error) {
	all, err := t.st.ListState(ctx, ReadsNamespace)
	if err != nil {
		return 0, err
	}
	n := 0
	var errs []error
	for k, v := range all {
		var ri ReadInfo
		if json.Unmarshal(v, &ri) == nil && !ri.At.Before(cutoff) {
			continue
		}
		err := t.st.UpdateState(ctx, ReadsNamespace, k, func(old []byte) ([]byte, error) {
			var cur ReadInfo
			if old != nil && json.Unmarshal(old, &cur) == nil && !cur.At.Before(cutoff) {
				return old, nil // re-read meanwhile: keep
			}
			return nil, nil
		})
		if err != nil {
			errs = append(errs, err)
			continue
		}
		n++
	}
	return n, errors.Join(errs...)
}

// MaxRecordedRead is the largest file whose read is remembered (as large
// as Overseer's own file tools read, builtin.MaxReadBytes). A read is
// recorded with its file's hash while the call is judged, so a file an
// agent makes huge (a sparse file costs nothing) would keep the judgement
// hashing it; an edit of a file now larger cannot be of the content read.
const MaxRecordedRead = 64 << 20

// HashFile returns the hex SHA-256 of the regular file at p and its
// modification time (guard.ErrNotRegular for anything else).
func HashFile(p string) (hash string, mtime time.Time, err error) {
	f, err := guard.OpenRegular(p)
	if err != nil {
		return "", time.Time{}, err
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return "", time.Time{}, err
	}
	h := sha256.New()
	// A pooled buffer: io.Copy would allocate 32 KB per file (an
	// *os.File copies through its WriterTo, which allocates), and every
	// auto read hashes the file it reads.
	buf := hashBufs.Get().(*[]byte)
	defer hashBufs.Put(buf)
	if _, err := io.CopyBuffer(h, struct{ io.Reader }{f}, *buf); err != nil {
		return "", time.Time{}, err
	}
	return hex.EncodeToString(h.Sum(nil)), fi.ModTime(), nil
}

// hashBufs are HashFile's and HashFileLines' read buffers.
var hashBufs = sync.Pool{New: func() any { b := make([]byte, 32<<10); return &b }}

// HashFileLines is HashFile that also counts the file's lines (a last
// line without a new line counts), from the same read.
func HashFileLines(p string) (hash string, mtime time.Time, lines int, err error) {
	f, err := guard.OpenRegular(p)
	if err != nil {
		return "", time.Time{}, 0, err
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return "", time.Time{}, 0, err
	}
	h := sha256.New()
	pb := hashBufs.Get().(*[]byte) // pooled: every recorded auto read hashes its file
	defer hashBufs.Put(pb)
	buf := *pb
	var last byte
	for {
		n, rerr := f.Read(buf)
		if n > 0 {
			h.Write(buf[:n])
			lines += bytes.Count(buf[:n], []byte{'\n'})
			last = buf[n-1]
		}
		if rerr == io.EOF {
			break
		}
		if rerr != nil {
			return "", time.Time{}, 0, rerr
		}
	}
	if fi.Size() > 0 && last != '\n' {
		lines++
	}
	return hex.EncodeToString(h.Sum(nil)), fi.ModTime(), lines, nil
}

// HashBytes returns the hex SHA-256 of b, as HashFile computes it.
func HashBytes(b []byte) string {
	s := sha256.Sum256(b)
	return hex.EncodeToString(s[:])
}

// Tracking is the request-scoped read tracking of one tool call: where the
// call's reads are recorded and the session they belong to. The kernel puts
// it into the context of a builtin tool's Execute.
type Tracking struct {
	Reads   ReadTracker
	Session string
}

type trackingKey struct{}

// WithTracking returns ctx carrying t.
func WithTracking(ctx context.Context, t Tracking) context.Context {
	return context.WithValue(ctx, trackingKey{}, t)
}

// TrackingFrom returns the tracking ctx carries, if any.
func TrackingFrom(ctx context.Context) (Tracking, bool) {
	t, ok := ctx.Value(trackingKey{}).(Tracking)
	return t, ok && t.Reads != nil
}
