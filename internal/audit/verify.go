package audit

import (
	"context"
	"crypto/hmac"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"time"

	"github.com/overseer-dev/overseer/internal/store"
)

// Report is the outcome of verifying a chain.
type Report struct {
	OK       bool   `json:"ok"`
	Records  int64  `json:"records"`             // records read
	LastSeq  int64  `json:"last_seq"`            // highest sequence number read
	FirstBad int64  `json:"first_bad,omitempty"` // seq of the first bad record; 0 when OK
	Problem  string `json:"problem,omitempty"`   // what is wrong, for people
	// LastBad is the last record found bad (FirstBad when only one is), and
	// BadFrom and BadUntil the time range affected: from the last record
	// before FirstBad that verified to the first record after LastBad that
	// did (zero: from the log's start, or to its end and on).
	LastBad  int64     `json:"last_bad,omitempty"`
	BadFrom  time.Time `json:"bad_from,omitzero"`
	BadUntil time.Time `json:"bad_until,omitzero"`
	// Problems lists every problem found, by record.
	Problems []Problem `json:"problems,omitempty"`

	// Sealed is true when the log has a seal_start record; SealChecked
	// when a verification key was given and its seal was checked.
	Sealed      bool   `json:"sealed"`
	SealChecked bool   `json:"seal_checked"`
	Fingerprint string `json:"fingerprint,omitempty"`
	// Epochs is how many epochs are closed by a marker; SealedThrough the
	// last record they cover, at SealedAt. Records after it are in the open
	// epoch, sealed with the key now on the machine.
	Epochs        int64     `json:"epochs"`
	SealedThrough int64     `json:"sealed_through,omitempty"`
	SealedAt      time.Time `json:"sealed_at,omitzero"`
	KeyEpoch      int64     `json:"key_epoch,omitempty"` // the sealing key file's epoch, when read
	Anchors       int       `json:"anchors,omitempty"`   // published heads checked
	// Notes say what this verification could not prove.
	Notes []string `json:"notes,omitempty"`
}

// Problem is one problem found by a verification.
type Problem struct {
	Seq  int64  `json:"seq"`
	What string `json:"what"`
}

// Head is a published chain head: the hash of record Seq at Time.
type Head struct {
	Seq  int64     `json:"seq"`
	Hash string    `json:"hash"`
	Time time.Time `json:"time"`
	// Epoch is the sealing epoch of the record (informational).
	Epoch int64 `json:"epoch,omitempty"`
}

// Options say what Verify checks beyond the unkeyed chain.
type Options struct {
	// Key, when set, checks every record's seal.
	Key *VerifyKey
	// SealFile, when set, is the sealing key file: the log must end in the
	// epoch the key is at (a key ahead of the log means epochs were cut).
	SealFile string
	// Heads are published heads the log must contain.
	Heads []Head
	// KeyCopies says SealFile is one of several copies of the sealing key:
	// the log is shared by several instances (one database), each with a
	// copy in its own home that follows the chain when the instance writes.
	// A copy behind the log's epoch is then an instance that has not
	// written since, not a replaced file; one ahead still shows a cut.
	KeyCopies bool
}

// Verify walks the whole chain in st and reports the first record that was
// altered (its hash does not match its content), is missing (a gap in the
// sequence), or does not follow its predecessor (inserted or reordered).
//
// A chain cut short at its end cannot be told from a shorter chain: compare
// LastSeq and the last hash with a copy kept elsewhere to detect that (see
// VerifyWith: published heads, and the sealing key's epoch).
//
// The error is non-nil when the chain could not be read to its end (the
// report then is not OK and FirstBad is the first record not verified).
func Verify(ctx context.Context, st store.AuditStore) (Report, error) {
	return VerifyWith(ctx, st, Options{})
}

// VerifyWith is Verify with the checks o asks for: the seal under a
// verification key, the end of the log against the sealing key file, and
// published heads.
func VerifyWith(ctx context.Context, st store.AuditStore, o Options) (Report, error) {
	v := newVerifier(o)
	err := st.ScanAudit(ctx, math.MinInt64, func(r store.AuditRecord) error {
		v.add(r)
		return nil
	})
	if err != nil {
		v.unreadable(fmt.Sprintf("the log could not be read after record %d: %v", v.lastSeq, err))
		return v.report(), fmt.Errorf("audit: verify: %w", err)
	}
	if o.SealFile != "" {
		// Read the key file under the write lock, then the records that
		// came meanwhile: the key and the log's end are then one moment's.
		var state SealState
		var serr error
		var tail int64
		b := &store.AuditBatch{Seal: func(t store.AuditTail, _ []*store.AuditRecord) ([]store.AuditRecord, error) {
			state, serr = ReadSealState(o.SealFile)
			tail = t.Seq
			return nil, nil
		}}
		if err := st.AppendAuditBatch(ctx, b); err != nil {
			return v.report(), fmt.Errorf("audit: verify: %w", err)
		}
		if tail > v.lastSeq {
			err := st.ScanAudit(ctx, v.lastSeq, func(r store.AuditRecord) error {
				if r.Seq <= tail {
					v.add(r)
				}
				return nil
			})
			if err != nil {
				return v.report(), fmt.Errorf("audit: verify: %w", err)
			}
		}
		v.checkKeyFile(state, serr)
	}
	return v.report(), nil
}

// VerifyJSONL verifies a chain exported by Export (one record per line, in
// ascending order, from the first record on). Content that is not a record
// makes the report not OK; the error is for failures to read r.
func VerifyJSONL(ctx context.Context, r io.Reader) (Report, error) {
	return VerifyJSONLWith(ctx, r, Options{})
}

// VerifyJSONLWith is VerifyJSONL with the checks o asks for (SealFile is
// read as it is, with no lock: verify a copy of both).
func VerifyJSONLWith(ctx context.Context, r io.Reader, o Options) (Report, error) {
	v := newVerifier(o)
	defer func() {
		if o.SealFile != "" {
			state, err := ReadSealState(o.SealFile)
			v.checkKeyFile(state, err)
		}
	}()
	src := &readErr{r: r}
	dec := json.NewDecoder(src)
	dec.DisallowUnknownFields()
	for n := 1; ; n++ {
		if err := ctx.Err(); err != nil {
			v.unreadable(fmt.Sprintf("verification stopped after record %d: %v", v.lastSeq, err))
			return v.report(), fmt.Errorf("audit: verify: %w", err)
		}
		var rec store.AuditRecord
		err := dec.Decode(&rec)
		switch {
		case err == nil:
			v.add(rec)
		case src.err != nil && !errors.Is(src.err, io.EOF):
			v.unreadable(fmt.Sprintf("the export could not be read after record %d: %v", v.lastSeq, src.err))
			return v.report(), fmt.Errorf("audit: verify: %w", src.err)
		case errors.Is(err, io.EOF):
			return v.report(), nil
		default:
			v.unreadable(fmt.Sprintf("entry %d (after record %d) is not an audit record: %v", n, v.lastSeq, err))
			return v.report(), nil
		}
	}
}

// readErr remembers the error its reader returned.
type readErr struct {
	r   io.Reader
	err error
}

func (e *readErr) Read(p []byte) (int, error) {
	n, err := e.r.Read(p)
	if err != nil && e.err == nil {
		e.err = err
	}
	return n, err
}

// verifier checks records one by one, in sequence order.
type verifier struct {
	o        Options
	keyEpoch int64
	records  int64
	lastSeq  int64
	prevHash string
	firstBad int64
	problem  string
	problems []Problem

	// the range of bad records
	lastGood     store.AuditRecord // the last record that verified before the first problem
	haveLastGood bool
	lastBad      int64
	afterBad     time.Time // the first good record after lastBad
	prevOK       bool      // the previous record verified

	// the seal
	chain       *keyChain
	tagger      *tagger
	taggerEpoch int64
	started     bool
	fp          string
	epoch       int64 // the epoch the next record belongs to
	epochs      int64
	sealedThru  store.AuditRecord
	lastRec     store.AuditRecord
	heads       map[int64][]Head
	headsSeen   map[int64]bool
	unsealedLog bool // a record without a seal came after sealing began
}

func newVerifier(o Options) *verifier {
	v := &verifier{o: o}
	if o.Key != nil {
		v.chain = newKeyChain(*o.Key)
	}
	if len(o.Heads) > 0 {
		v.heads = map[int64][]Head{}
		v.headsSeen = map[int64]bool{}
		for _, h := range o.Heads {
			v.heads[h.Seq] = append(v.heads[h.Seq], h)
		}
	}
	return v
}

// bad records a problem at seq. The first problem (in the order found) is
// the report's Problem; FirstBad is the lowest seq of any.
func (v *verifier) bad(seq int64, format string, args ...any) {
	p := Problem{Seq: seq, What: fmt.Sprintf(format, args...)}
	v.problems = append(v.problems, p)
	if v.problem == "" || seq < v.firstBad {
		v.firstBad = seq
		v.problem = p.What
	}
	v.lastBad = max(v.lastBad, seq)
	v.afterBad = time.Time{}
}

// unreadable records that verification could not go on after lastSeq.
func (v *verifier) unreadable(problem string) {
	v.bad(v.lastSeq+1, "%s", problem)
}

// tagOK reports whether r's tag is right for its own epoch.
func (v *verifier) tagOK(r store.AuditRecord) bool {
	if r.Tag == "" || r.Epoch < 0 {
		return false
	}
	if v.tagger == nil || v.taggerEpoch != r.Epoch {
		v.tagger = newTagger(v.chain.at(*v.o.Key, r.Epoch))
		v.taggerEpoch = r.Epoch
	}
	return hmac.Equal([]byte(v.tagger.tag(r.Epoch, r.Seq, r.Hash)), []byte(r.Tag))
}

func (v *verifier) add(r store.AuditRecord) {
	first := v.records == 0
	v.records++
	ok := true // r verified: it follows its predecessor, and its hash and seal are right
	chainBroken := v.problem != ""
	want := v.lastSeq + 1
	prev := v.prevHash
	if first {
		want, prev = 1, Genesis
	}
	switch {
	case r.Seq > want:
		ok = false
		if want == r.Seq-1 {
			v.bad(want, "record %d is missing", want)
		} else {
			v.bad(want, "records %d to %d are missing", want, r.Seq-1)
		}
	case r.Seq < want:
		ok = false
		v.bad(r.Seq, "record %d is out of sequence (inserted or reordered)", r.Seq)
	case r.PrevHash != prev:
		ok = false
		if first {
			v.bad(r.Seq, "record %d does not start the chain (inserted or reordered)", r.Seq)
		} else if !chainBroken || v.prevOK {
			v.bad(r.Seq, "record %d does not follow record %d (inserted, removed or reordered)", r.Seq, r.Seq-1)
		}
	}
	if Hash(r.PrevHash, r) != r.Hash {
		ok = false
		v.bad(r.Seq, "record %d was altered", r.Seq)
	}
	if !v.sealCheck(r) {
		ok = false
	}
	if h, found := v.heads[r.Seq]; found {
		v.headsSeen[r.Seq] = true
		for _, head := range h {
			if head.Hash != r.Hash {
				ok = false
				v.bad(r.Seq, "record %d is not the one published at %s (its hash was %s…): the log was rewritten",
					r.Seq, head.Time.UTC().Format(time.RFC3339), short(head.Hash))
			}
		}
	}
	if ok {
		if v.problem == "" {
			v.lastGood, v.haveLastGood = r, true
		} else if v.afterBad.IsZero() {
			v.afterBad = r.Time
		}
	}
	v.prevOK = ok
	v.lastSeq = max(v.lastSeq, r.Seq)
	v.prevHash = r.Hash
	v.lastRec = r
}

func short(h string) string {
	if len(h) > 12 {
		return h[:12]
	}
	return h
}

// sealCheck checks r's seal and the epochs; it reports whether r passed.
func (v *verifier) sealCheck(r store.AuditRecord) bool {
	if r.Type == TypeSealStart {
		if v.started {
			v.bad(r.Seq, "record %d starts sealing again (sealing restarted with another key)", r.Seq)
			return false
		}
		v.started = true
		var ss SealStart
		_ = json.Unmarshal(r.Data, &ss)
		v.fp = ss.Fingerprint
		v.epoch = 0
		if v.chain == nil {
			return true
		}
		if ss.Fingerprint != v.o.Key.Fingerprint() {
			v.bad(r.Seq, "the log is sealed with another key (fingerprint %s, not %s): it was replaced, or the wrong key was given",
				ss.Fingerprint, v.o.Key.Fingerprint())
			return false
		}
		if r.Epoch != 0 || !v.tagOK(r) {
			v.bad(r.Seq, "record %d (the start of sealing) does not carry a valid seal", r.Seq)
			return false
		}
		return true
	}
	if !v.started {
		if r.Tag != "" && v.chain != nil {
			v.bad(r.Seq, "record %d carries a seal but comes before sealing began", r.Seq)
			return false
		}
		return true
	}
	ok := true
	switch {
	case r.Tag == "":
		v.bad(r.Seq, "record %d is not sealed (written without the sealing key, or its seal was removed)", r.Seq)
		ok = false
	case r.Epoch != v.epoch:
		v.bad(r.Seq, "record %d is sealed in epoch %d where epoch %d was expected (epochs removed, reordered or forged)",
			r.Seq, r.Epoch, v.epoch)
		ok = false
	case v.chain != nil && !v.tagOK(r):
		v.bad(r.Seq, "record %d does not carry a valid seal for epoch %d (altered, inserted or moved)", r.Seq, r.Epoch)
		ok = false
	}
	if r.Type == TypeSeal && r.Tag != "" {
		var m SealMarker
		if err := json.Unmarshal(r.Data, &m); err != nil || m.Epoch != r.Epoch {
			v.bad(r.Seq, "record %d is a malformed epoch marker", r.Seq)
			ok = false
		}
		if ok || r.Epoch == v.epoch {
			v.epoch = r.Epoch + 1
		}
		if ok {
			v.epochs++
			v.sealedThru = r
		}
	}
	return ok
}

// checkKeyFile compares the end of the log with the sealing key file: its
// epoch must be the log's (or the one before, when the last marker's key
// has not evolved yet), and with a verification key its key must be that
// epoch's.
func (v *verifier) checkKeyFile(state SealState, err error) {
	end := v.lastSeq + 1
	switch {
	case !v.started && err == nil:
		v.bad(max(end, 1), "a sealing key exists (epoch %d) but the log has no sealed record: the log was replaced or emptied", state.Epoch)
		return
	case !v.started:
		return
	case errors.Is(err, os.ErrNotExist):
		v.bad(end, "the sealing key file is missing: whether records were cut from the end of the log cannot be told")
		return
	case err != nil:
		v.bad(end, "the sealing key file cannot be read: %v", err)
		return
	}
	v.keyEpoch = state.Epoch
	if state.Fingerprint != v.fp {
		v.bad(end, "the sealing key file belongs to another key (fingerprint %s, the log's is %s)", state.Fingerprint, v.fp)
		return
	}
	if v.chain != nil && state.Key != v.chain.at(*v.o.Key, state.Epoch) {
		v.bad(end, "the sealing key file does not derive from the verification key (it was replaced)")
		return
	}
	pendingEvolve := v.lastRec.Type == TypeSeal && state.Epoch == v.epoch-1
	switch {
	case state.Epoch == v.epoch || pendingEvolve:
	case state.Epoch > v.epoch:
		if state.Epoch == v.epoch+1 {
			v.bad(end, "epoch %d is missing: the sealing key is at epoch %d but the log ends in epoch %d: "+
				"records after %d were cut off, or the log was replaced by an older copy", v.epoch, state.Epoch, v.epoch, v.lastSeq)
		} else {
			v.bad(end, "epochs %d to %d are missing: the sealing key is at epoch %d but the log ends in epoch %d: "+
				"records after %d were cut off, or the log was replaced by an older copy", v.epoch, state.Epoch-1, state.Epoch, v.epoch, v.lastSeq)
		}
	case v.o.KeyCopies:
		// A copy of an instance that has not written since the log moved on.
	default:
		v.bad(end, "the sealing key is at epoch %d, behind the log's epoch %d: the key file was replaced by an older copy",
			state.Epoch, v.epoch)
	}
}

func (v *verifier) report() Report {
	rep := Report{OK: v.problem == "", Records: v.records, LastSeq: v.lastSeq, FirstBad: v.firstBad, Problem: v.problem,
		Sealed: v.started, SealChecked: v.chain != nil && v.started, Fingerprint: v.fp, Epochs: v.epochs,
		KeyEpoch: v.keyEpoch}
	if v.epochs > 0 {
		rep.SealedThrough, rep.SealedAt = v.sealedThru.Seq, v.sealedThru.Time
	}
	if !rep.OK {
		rep.LastBad = max(v.lastBad, v.firstBad)
		if v.haveLastGood && v.lastGood.Seq < v.firstBad {
			rep.BadFrom = v.lastGood.Time
		}
		rep.BadUntil = v.afterBad
		rep.Problems = v.problems
	}
	for seq, hs := range v.heads {
		if v.headsSeen[seq] {
			continue
		}
		for _, h := range hs {
			if rep.OK || seq < rep.FirstBad || rep.FirstBad == 0 {
				rep.FirstBad = min(max(v.lastSeq+1, 1), seq)
				rep.Problem = fmt.Sprintf("record %d, published as the head at %s, is not in the log (it ends at %d): "+
					"records were cut from its end, or it was replaced by an older copy", seq, h.Time.UTC().Format(time.RFC3339), v.lastSeq)
				rep.LastBad = max(rep.LastBad, seq)
				if rep.OK && v.records > 0 {
					rep.BadFrom = v.lastRec.Time
				}
				rep.OK = false
			}
			rep.Problems = append(rep.Problems, Problem{Seq: seq, What: "record not in the log, though published as the head at " +
				h.Time.UTC().Format(time.RFC3339)})
		}
	}
	rep.Anchors = len(v.o.Heads)
	switch {
	case !v.started && v.chain != nil && rep.OK && v.records > 0:
		rep.OK, rep.FirstBad = false, 1
		rep.Problem = "no record is sealed: the log was replaced by an unsealed one, or sealing never began"
		rep.Problems = append(rep.Problems, Problem{Seq: 1, What: rep.Problem})
	case !v.started && v.chain != nil && rep.OK:
		rep.OK, rep.FirstBad = false, 1
		rep.Problem = "the log is empty: every record was removed"
		rep.Problems = append(rep.Problems, Problem{Seq: 1, What: rep.Problem})
	}
	rep.Notes = v.notes(rep)
	return rep
}

// notes says what the report cannot prove.
func (v *verifier) notes(rep Report) []string {
	var n []string
	switch {
	case !v.started:
		n = append(n, "the log is not sealed: its hash chain shows accidental damage and careless edits, "+
			"but anyone who can write the file can rewrite it whole")
	case v.chain == nil:
		n = append(n, "the seal was not checked (give the verification key with --key): without it, anyone who can write "+
			"the files could have rewritten the whole log consistently")
	}
	if v.started && v.o.SealFile == "" {
		n = append(n, "the sealing key file was not compared with the log's end: records cut from the end are not found")
	}
	if v.started && rep.LastSeq > 0 {
		open := rep.SealedThrough + 1
		if open <= rep.LastSeq {
			n = append(n, fmt.Sprintf("records %d to %d are in the open epoch, sealed with the key now on this machine: "+
				"someone holding it could have changed or removed them (an anchor shows a cut)", open, rep.LastSeq))
		}
	}
	if len(v.o.Heads) == 0 && v.started {
		n = append(n, "no published heads were given (--anchor): the log and its key file replaced together by an older copy, "+
			"or records cut from the open epoch, are not found")
	}
	return n
}
