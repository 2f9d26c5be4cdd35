package audit

// Forward-secure sealing, in the spirit of systemd-journald's Forward Secure
// Sealing and of CloudTrail's digest files.
//
// At setup a random 16-byte seed is drawn. It is the verification key: shown
// once to the person, kept by them elsewhere, never kept by Overseer (see
// KeyFile for the copy that waits to be exported). From it come the epoch
// keys:
//
//	k_0     = HMAC-SHA256(seed, "overseer audit seal v1 key")
//	k_{e+1} = SHA-256(k_e || "evolve")
//
// and the key's fingerprint, HMAC-SHA256(seed, "overseer audit seal v1
// fingerprint"), first 8 bytes in hex. The sealing key file (SealFile) holds
// only the current epoch and its key; when an epoch closes, the next key is
// derived and written over the old one in place, and the old one is gone:
// from the sealing key nobody can go back to an earlier epoch's key.
//
// Every record appended after setup carries its epoch and its tag,
//
//	tag = hex(HMAC-SHA256(k_epoch, "ovs1\n" + epoch + "\n" + seq + "\n" + hash))
//
// where hash is the record's chain hash (which covers its content and,
// through prev_hash, everything before it). The first sealed record is a
// "seal_start" record naming the key's fingerprint; an epoch ends with a
// "seal" record (the epoch marker) sealed with that epoch's key, after which
// the key evolves. Epochs close every SealInterval or SealRecords records,
// on every answer a person gives, and when a process that wrote records
// stops. A verifier holding the seed derives every epoch key forward, so it
// needs nothing from the machine; an attacker holding the current key can
// write records of the current epoch only.

import (
	"bytes"
	"context"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base32"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"hash"
	"hash/crc32"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/overseer-dev/overseer/internal/store"
)

// Seal record types.
const (
	// TypeSealStart starts sealing: its data (SealStart) names the key.
	TypeSealStart = "seal_start"
	// TypeSeal closes an epoch: its data is a SealMarker.
	TypeSeal = "seal"
)

// Defaults of the epoch length.
const (
	SealInterval = 30 * time.Second
	SealRecords  = 10000
)

// File names in Overseer's home.
const (
	// SealFile holds the current sealing key (mode 0600).
	SealFile = "audit.seal"
	// KeyFile holds the verification key until the person exports it with
	// `overseer audit key --out` (or forgets it with --forget).
	KeyFile = "audit-verify.key"
)

// Scheme names the sealing construction in SealStart.
const Scheme = "hmac-sha256-evolve-v1"

// Errors.
var (
	// ErrBadKey is returned for a verification key that does not parse.
	ErrBadKey = errors.New("audit: not a verification key")
	// ErrSeal wraps a failure of the sealing state (missing or damaged key
	// file, a log that does not match it): the log refuses to append.
	ErrSeal = errors.New("audit: sealing")
)

// SealStart is the data of a seal_start record.
type SealStart struct {
	Fingerprint string `json:"fingerprint"`
	Scheme      string `json:"scheme"`
	// Interval and Records are the epoch length the sealer used (a hint
	// for readers: markers also come on answers and at stop).
	Interval string `json:"interval"`
	Records  int    `json:"records"`
}

// SealMarker is the data of a seal record: it closes Epoch (every record
// from the previous marker or the seal_start on).
type SealMarker struct {
	Epoch  int64  `json:"epoch"`
	Reason string `json:"reason"` // interval, records, answer, stop
}

// VerifyKey is the verification key: the seed every epoch key derives from.
type VerifyKey [16]byte

// NewVerifyKey draws a random verification key.
func NewVerifyKey() (VerifyKey, error) {
	var k VerifyKey
	if _, err := rand.Read(k[:]); err != nil {
		return k, fmt.Errorf("audit: random key: %w", err)
	}
	return k, nil
}

var keyEnc = base32.StdEncoding.WithPadding(base32.NoPadding)

// String formats the key for people: "ovk1-" and the seed with a two-byte
// check in lower-case base32, in groups of five.
func (k VerifyKey) String() string {
	sum := sha256.Sum256(k[:])
	raw := append(append([]byte{}, k[:]...), sum[:2]...)
	s := strings.ToLower(keyEnc.EncodeToString(raw))
	var b strings.Builder
	b.WriteString("ovk1")
	for i := 0; i < len(s); i += 5 {
		b.WriteByte('-')
		b.WriteString(s[i:min(i+5, len(s))])
	}
	return b.String()
}

// ParseVerifyKey parses what VerifyKey.String writes (case, spaces and
// dashes do not matter).
func ParseVerifyKey(s string) (VerifyKey, error) {
	var k VerifyKey
	s = strings.ToLower(strings.TrimSpace(s))
	if !strings.HasPrefix(s, "ovk1") {
		return k, fmt.Errorf("%w: it does not start with ovk1", ErrBadKey)
	}
	s = strings.NewReplacer("-", "", " ", "", "\n", "", "\t", "").Replace(strings.TrimPrefix(s, "ovk1"))
	raw, err := keyEnc.DecodeString(strings.ToUpper(s))
	if err != nil || len(raw) != len(k)+2 {
		return k, fmt.Errorf("%w: it is not 18 bytes of base32", ErrBadKey)
	}
	copy(k[:], raw)
	sum := sha256.Sum256(k[:])
	if !bytes.Equal(sum[:2], raw[len(k):]) {
		return k, fmt.Errorf("%w: its check does not match (a typo?)", ErrBadKey)
	}
	return k, nil
}

// ReadVerifyKey reads a key given as the key itself or as a file holding it.
func ReadVerifyKey(arg string) (VerifyKey, error) {
	if k, err := ParseVerifyKey(arg); err == nil {
		return k, nil
	}
	b, err := os.ReadFile(arg)
	if err != nil {
		return VerifyKey{}, fmt.Errorf("%w: %q is neither a key nor a readable file", ErrBadKey, arg)
	}
	for _, line := range strings.Split(string(b), "\n") {
		if f := strings.TrimSpace(line); strings.HasPrefix(strings.ToLower(f), "ovk1") {
			return ParseVerifyKey(f)
		}
	}
	return VerifyKey{}, fmt.Errorf("%w: no key in %s", ErrBadKey, arg)
}

// Fingerprint names the key without giving it away.
func (k VerifyKey) Fingerprint() string {
	m := hmac.New(sha256.New, k[:])
	m.Write([]byte("overseer audit seal v1 fingerprint"))
	return hex.EncodeToString(m.Sum(nil)[:8])
}

// EpochKey is one epoch's sealing key.
type EpochKey [32]byte

// FirstKey returns k_0.
func (k VerifyKey) FirstKey() EpochKey {
	m := hmac.New(sha256.New, k[:])
	m.Write([]byte("overseer audit seal v1 key"))
	var e EpochKey
	copy(e[:], m.Sum(nil))
	return e
}

// Next returns the key of the next epoch.
func (e EpochKey) Next() EpochKey {
	h := sha256.New()
	h.Write(e[:])
	h.Write([]byte("evolve"))
	var n EpochKey
	copy(n[:], h.Sum(nil))
	return n
}

// Tag returns the tag of the record (seq, hash) in epoch under key e.
func Tag(e EpochKey, epoch, seq int64, hash string) string {
	return newTagger(e).tag(epoch, seq, hash)
}

type tagger struct {
	m   hash.Hash
	buf []byte
}

func newTagger(e EpochKey) *tagger { return &tagger{m: hmac.New(sha256.New, e[:])} }

func (t *tagger) tag(epoch, seq int64, hash string) string {
	t.m.Reset()
	b := append(t.buf[:0], "ovs1\n"...)
	b = strconv.AppendInt(b, epoch, 10)
	b = append(b, '\n')
	b = strconv.AppendInt(b, seq, 10)
	b = append(b, '\n')
	b = append(b, hash...)
	t.buf = b
	t.m.Write(b)
	var sum [32]byte
	return hex.EncodeToString(t.m.Sum(sum[:0]))
}

// keyChain derives epoch keys forward from a verification key, remembering
// the last one so that walking epochs in order costs one step each.
type keyChain struct {
	epoch int64
	key   EpochKey
}

func newKeyChain(k VerifyKey) *keyChain { return &keyChain{key: k.FirstKey()} }

// at returns the key of epoch e (e >= 0). Going back restarts from k_0.
func (c *keyChain) at(vk VerifyKey, e int64) EpochKey {
	if e < c.epoch {
		c.epoch, c.key = 0, vk.FirstKey()
	}
	for c.epoch < e {
		c.key = c.key.Next()
		c.epoch++
	}
	return c.key
}

// ---- the sealing key file

const (
	sealMagic    = "OVSEAL01"
	sealFileSize = 64 // magic 8, epoch 8, key 32, fingerprint 8, crc 4, zero 4
)

// SealState is the content of the sealing key file.
type SealState struct {
	Epoch       int64
	Key         EpochKey
	Fingerprint string // 16 hex digits
}

func (s SealState) encode() []byte {
	b := make([]byte, sealFileSize)
	copy(b, sealMagic)
	binary.BigEndian.PutUint64(b[8:], uint64(s.Epoch))
	copy(b[16:], s.Key[:])
	fp, _ := hex.DecodeString(s.Fingerprint)
	copy(b[48:56], fp)
	binary.BigEndian.PutUint32(b[56:], crc32.ChecksumIEEE(b[:56]))
	return b
}

func decodeSealState(b []byte) (SealState, error) {
	var s SealState
	if len(b) != sealFileSize || string(b[:8]) != sealMagic {
		return s, errors.New("not a sealing key file")
	}
	if crc32.ChecksumIEEE(b[:56]) != binary.BigEndian.Uint32(b[56:]) {
		return s, errors.New("the sealing key file is damaged (checksum)")
	}
	e := binary.BigEndian.Uint64(b[8:])
	if e > 1<<62 {
		return s, errors.New("the sealing key file has an impossible epoch")
	}
	s.Epoch = int64(e)
	copy(s.Key[:], b[16:48])
	s.Fingerprint = hex.EncodeToString(b[48:56])
	return s, nil
}

// ReadSealState reads a sealing key file; a missing file is os.ErrNotExist.
func ReadSealState(path string) (SealState, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return SealState{}, err
	}
	s, err := decodeSealState(b)
	if err != nil {
		return s, fmt.Errorf("%s: %w", path, err)
	}
	return s, nil
}

// writeSealState writes s over the file at path in place (creating it with
// mode 0600) and syncs it: the bytes of the previous key are overwritten,
// not left in a freed block.
func writeSealState(path string, s SealState) error {
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return err
	}
	b := s.encode()
	_, err = f.WriteAt(b, 0)
	if err == nil {
		err = f.Truncate(int64(len(b)))
	}
	if err == nil {
		err = f.Sync()
	}
	for i := range b {
		b[i] = 0
	}
	return errors.Join(err, f.Close())
}

// ---- the sealer

// Sealer seals the records a Log appends. Its state (the current epoch and
// key) is re-read from the key file under the store's write lock whenever
// the log's tail says another process moved the epoch on, so that several
// processes sharing a database and a home seal one chain.
type Sealer struct {
	path     string
	interval time.Duration
	records  int

	mu      sync.Mutex
	state   SealState
	loaded  bool
	tg      *tagger
	since   time.Time // when this process first sealed in the current epoch
	count   int       // records this process sealed in the current epoch
	pending bool      // an epoch marker was committed; the key must evolve
}

// SealerOptions tune a Sealer. Zero values take the defaults.
type SealerOptions struct {
	Interval time.Duration // SealInterval
	Records  int           // SealRecords
}

// NewSealer returns a sealer keeping its key in home/SealFile.
func NewSealer(home string, o SealerOptions) *Sealer {
	if o.Interval <= 0 {
		o.Interval = SealInterval
	}
	if o.Records <= 0 {
		o.Records = SealRecords
	}
	return &Sealer{path: filepath.Join(home, SealFile), interval: o.Interval, records: o.Records}
}

// Path returns the key file's path.
func (s *Sealer) Path() string { return s.path }

// sealedEpoch returns the epoch the next record belongs to after tail, and
// whether the tail is a marker that closed the epoch before it.
func sealedEpoch(tail store.AuditTail) (next int64, closed bool) {
	if tail.Type == TypeSeal && tail.Tag != "" {
		return tail.Epoch + 1, true
	}
	return tail.Epoch, false
}

// sync brings the in-memory state in step with the log's tail; it runs
// under the store's write lock. It evolves the key file when the tail is a
// marker of the file's epoch (a close whose evolution did not happen yet).
func (s *Sealer) sync(tail store.AuditTail) error {
	want, closed := sealedEpoch(tail)
	if s.loaded && s.state.Epoch == want {
		return nil
	}
	st, err := ReadSealState(s.path)
	if err != nil {
		if errors.Is(err, os.ErrNotExist) {
			return fmt.Errorf("%w: the audit log is sealed but the sealing key file %s is missing", ErrSeal, s.path)
		}
		return fmt.Errorf("%w: %v", ErrSeal, err)
	}
	if closed && st.Epoch == tail.Epoch {
		next := SealState{Epoch: st.Epoch + 1, Key: st.Key.Next(), Fingerprint: st.Fingerprint}
		if err := writeSealState(s.path, next); err != nil {
			return fmt.Errorf("%w: evolving the key: %v", ErrSeal, err)
		}
		st = next
	} else if st.Epoch < tail.Epoch && tail.Tag != "" {
		// Another instance with a copy of this key in its own home, sharing
		// the database, closed epochs since this file was written: follow
		// it, but only to a tail sealed by the key derived forward (so a
		// record of anyone without the key cannot move the key on).
		k := st.Key
		for e := st.Epoch; e < tail.Epoch; e++ {
			k = k.Next()
		}
		if hmac.Equal([]byte(Tag(k, tail.Epoch, tail.Seq, tail.Hash)), []byte(tail.Tag)) {
			next := SealState{Epoch: tail.Epoch, Key: k, Fingerprint: st.Fingerprint}
			if closed {
				next.Epoch, next.Key = tail.Epoch+1, k.Next()
			}
			if err := writeSealState(s.path, next); err != nil {
				return fmt.Errorf("%w: evolving the key: %v", ErrSeal, err)
			}
			st = next
		}
	}
	if st.Epoch != want {
		return fmt.Errorf("%w: the sealing key is at epoch %d but the audit log is at epoch %d "+
			"(the log was cut short or replaced, or the key file was changed): run overseer audit verify",
			ErrSeal, st.Epoch, want)
	}
	s.setState(st)
	return nil
}

func (s *Sealer) setState(st SealState) {
	if s.loaded {
		for i := range s.state.Key {
			s.state.Key[i] = 0
		}
	}
	s.state, s.loaded = st, true
	s.tg = newTagger(st.Key)
	s.since, s.count = time.Time{}, 0
}

// sealBatch seals recs after tail and returns the epoch marker to append
// after them when the epoch is due to close: reason is set (an answer, a
// stop, the interval), or this process has sealed SealRecords records or
// sealed its first record of the epoch SealInterval ago. An epoch closes
// only when it holds a record besides its opening marker. It runs under
// the store's write lock.
func (s *Sealer) sealBatch(tail store.AuditTail, recs []*store.AuditRecord, now time.Time, reason string) ([]store.AuditRecord, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if tail.Seq > 0 && tail.Tag == "" {
		return nil, fmt.Errorf("%w: the log's last record %d is not sealed (sealing was not set up, or the log was replaced)", ErrSeal, tail.Seq)
	}
	if err := s.sync(tail); err != nil {
		return nil, err
	}
	prev := tail.Hash
	seq := tail.Seq
	for _, r := range recs {
		seq++
		r.Seq, r.Time, r.PrevHash = seq, now, prev
		r.Hash = Hash(prev, *r)
		r.Epoch = s.state.Epoch
		r.Tag = s.tg.tag(r.Epoch, r.Seq, r.Hash)
		prev = r.Hash
	}
	if len(recs) > 0 {
		if s.since.IsZero() {
			s.since = now
		}
		s.count += len(recs)
	}
	if reason == "" && s.count > 0 {
		switch {
		case s.count >= s.records:
			reason = "records"
		case now.Sub(s.since) >= s.interval:
			reason = "interval"
		}
	}
	if reason == "" || len(recs) == 0 && tail.Type == TypeSeal {
		return nil, nil
	}
	data, _ := json.Marshal(SealMarker{Epoch: s.state.Epoch, Reason: reason})
	seq++
	mk := store.AuditRecord{Seq: seq, Time: now, Type: TypeSeal, Data: data, PrevHash: prev, Epoch: s.state.Epoch}
	mk.Hash = Hash(prev, mk)
	mk.Tag = s.tg.tag(mk.Epoch, mk.Seq, mk.Hash)
	s.pending = true
	return []store.AuditRecord{mk}, nil
}

// due reports whether this process has records in the current epoch that
// were sealed at least the interval ago (the epoch should close).
func (s *Sealer) due(now time.Time) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.count > 0 && now.Sub(s.since) >= s.interval
}

// wrote reports whether this process sealed records in the current epoch.
func (s *Sealer) wrote() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.count > 0
}

// evolve runs under the store's write lock after a batch with a marker was
// committed: it derives the next key and writes it over the old one.
func (s *Sealer) evolve(tail store.AuditTail) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if !s.pending {
		return nil
	}
	s.pending = false
	if tail.Tag == "" {
		return nil
	}
	return s.sync(tail)
}

// abandon forgets a marker that was not committed.
func (s *Sealer) abandon() {
	s.mu.Lock()
	s.pending = false
	s.mu.Unlock()
}

// Setup is the outcome of SetUp.
type Setup struct {
	// New is true when SetUp created the key now; Key is then the
	// verification key (also written to home/KeyFile).
	New         bool
	Key         VerifyKey
	Fingerprint string
}

// SetUp starts sealing the log of st if it is not sealed yet: it draws a
// verification key, writes the first epoch key to the key file and the
// verification key to home/KeyFile (until the person exports it), and
// appends the seal_start record, whose seal covers every record before it.
// A log that is already sealed is left as it is (its state is checked at
// the next append). It runs under the store's write lock.
func (s *Sealer) SetUp(ctx context.Context, st store.AuditStore, home string, clk func() time.Time) (Setup, error) {
	// A log whose last record carries a seal tag is sealed already: the
	// write transaction below would find so and write nothing. Reading the
	// tail first spares every process that opens a sealed log (each hook
	// run without a daemon) the write lock and a sync of nothing. Any
	// other answer, or an error, takes the locked path.
	if tail, err := st.QueryAudit(ctx, store.AuditQuery{Desc: true, Limit: 1}); err == nil && len(tail) == 1 && tail[0].Tag != "" {
		return Setup{}, nil
	}
	var out Setup
	b := &store.AuditBatch{Seal: func(tail store.AuditTail, _ []*store.AuditRecord) ([]store.AuditRecord, error) {
		s.mu.Lock()
		defer s.mu.Unlock()
		if tail.Tag != "" {
			return nil, nil // sealed already
		}
		var vk VerifyKey
		state, err := ReadSealState(s.path)
		switch {
		case err == nil && state.Epoch == 0:
			// A setup that stopped before its seal_start was committed:
			// finish it with the same key (the verification key file was
			// written with it).
			k, kerr := ReadVerifyKey(filepath.Join(home, KeyFile))
			if kerr != nil || k.Fingerprint() != state.Fingerprint {
				return nil, fmt.Errorf("%w: the log is not sealed but a sealing key file exists (%s); "+
					"the log was replaced, or cut to before its sealing began: run overseer audit verify", ErrSeal, s.path)
			}
			vk = k
		case err == nil:
			return nil, fmt.Errorf("%w: the log is not sealed but the sealing key is at epoch %d: "+
				"the log was replaced or cut short; run overseer audit verify", ErrSeal, state.Epoch)
		case !errors.Is(err, os.ErrNotExist):
			return nil, fmt.Errorf("%w: %v", ErrSeal, err)
		default:
			if vk, err = NewVerifyKey(); err != nil {
				return nil, err
			}
			if err := WritePendingKey(home, vk); err != nil {
				return nil, err
			}
			state = SealState{Epoch: 0, Key: vk.FirstKey(), Fingerprint: vk.Fingerprint()}
			if err := writeSealState(s.path, state); err != nil {
				return nil, fmt.Errorf("%w: writing the key: %v", ErrSeal, err)
			}
			out.New = true
		}
		out.Key, out.Fingerprint = vk, vk.Fingerprint()
		s.setState(state)
		data, _ := json.Marshal(SealStart{Fingerprint: state.Fingerprint, Scheme: Scheme,
			Interval: s.interval.String(), Records: s.records})
		prev := tail.Hash
		if tail.Seq == 0 {
			prev = Genesis
		}
		r := store.AuditRecord{Seq: tail.Seq + 1, Time: clk().Round(0).UTC(), Type: TypeSealStart, Data: data, PrevHash: prev}
		r.Hash = Hash(prev, r)
		r.Tag = s.tg.tag(0, r.Seq, r.Hash)
		return []store.AuditRecord{r}, nil
	}}
	if err := st.AppendAuditBatch(ctx, b); err != nil {
		s.mu.Lock()
		s.loaded = false
		s.mu.Unlock()
		return Setup{}, err
	}
	if !out.New {
		out.Key = VerifyKey{}
	}
	return out, nil
}

// ---- the verification key waiting to be exported

// WritePendingKey writes k to home/KeyFile (mode 0600), with a note.
func WritePendingKey(home string, k VerifyKey) error {
	text := "# Overseer's audit verification key. Keep it away from this machine:\n" +
		"#   overseer audit key --out FILE   (moves it out of Overseer's home)\n" +
		"# Anyone who has it can forge the audit log's seal.\n" +
		"# fingerprint " + k.Fingerprint() + "\n" + k.String() + "\n"
	p := filepath.Join(home, KeyFile)
	if err := os.WriteFile(p, []byte(text), 0o600); err != nil {
		return fmt.Errorf("audit: writing the verification key: %w", err)
	}
	return nil
}

// PendingKey returns the verification key still waiting in home, or
// os.ErrNotExist.
func PendingKey(home string) (VerifyKey, error) {
	p := filepath.Join(home, KeyFile)
	if _, err := os.Stat(p); err != nil {
		return VerifyKey{}, err
	}
	return ReadVerifyKey(p)
}

// ForgetPendingKey overwrites home/KeyFile with zeros, syncs and removes it.
func ForgetPendingKey(home string) error {
	p := filepath.Join(home, KeyFile)
	f, err := os.OpenFile(p, os.O_RDWR, 0)
	if err != nil {
		return err
	}
	fi, err := f.Stat()
	if err == nil {
		_, err = f.WriteAt(make([]byte, fi.Size()), 0)
	}
	if err == nil {
		err = f.Sync()
	}
	if err := errors.Join(err, f.Close()); err != nil {
		return err
	}
	return os.Remove(p)
}
