package audit

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"

	"github.com/overseer-dev/overseer/internal/store"
)

// Report is the outcome of verifying a chain.
type Report struct {
	OK       bool   `json:"ok"`
	Records  int64  `json:"records"`             // records read
	LastSeq  int64  `json:"last_seq"`            // highest sequence number read
	FirstBad int64  `json:"first_bad,omitempty"` // seq of the first bad record; 0 when OK
	Problem  string `json:"problem,omitempty"`   // what is wrong, for people
}

// Verify walks the whole chain in st and reports the first record that was
// altered (its hash does not match its content), is missing (a gap in the
// sequence), or does not follow its predecessor (inserted or reordered).
//
// A chain cut short at its end cannot be told from a shorter chain: compare
// LastSeq and the last hash with a copy kept elsewhere to detect that.
//
// The error is non-nil when the chain could not be read to its end (the
// report then is not OK and FirstBad is the first record not verified).
func Verify(ctx context.Context, st store.AuditStore) (Report, error) {
	var v verifier
	err := st.ScanAudit(ctx, math.MinInt64, func(r store.AuditRecord) error {
		v.add(r)
		return nil
	})
	if err != nil {
		v.unreadable(fmt.Sprintf("the log could not be read after record %d: %v", v.lastSeq, err))
		return v.report(), fmt.Errorf("audit: verify: %w", err)
	}
	return v.report(), nil
}

// VerifyJSONL verifies a chain exported by Export (one record per line, in
// ascending order, from the first record on). Content that is not a record
// makes the report not OK; the error is for failures to read r.
func VerifyJSONL(ctx context.Context, r io.Reader) (Report, error) {
	var v verifier
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
	records  int64
	lastSeq  int64
	prevHash string
	firstBad int64
	problem  string
}

func (v *verifier) bad(seq int64, format string, args ...any) {
	if v.problem == "" {
		v.firstBad = seq
		v.problem = fmt.Sprintf(format, args...)
	}
}

// unreadable records that verification could not go on after lastSeq.
func (v *verifier) unreadable(problem string) {
	if v.problem == "" {
		v.firstBad = v.lastSeq + 1
		v.problem = problem
	}
}

func (v *verifier) add(r store.AuditRecord) {
	first := v.records == 0
	v.records++
	if v.problem != "" {
		v.lastSeq = max(v.lastSeq, r.Seq)
		return
	}
	want := v.lastSeq + 1
	prev := v.prevHash
	if first {
		want, prev = 1, Genesis
	}
	switch {
	case r.Seq > want:
		if want == r.Seq-1 {
			v.bad(want, "record %d is missing", want)
		} else {
			v.bad(want, "records %d to %d are missing", want, r.Seq-1)
		}
	case r.Seq < want:
		v.bad(r.Seq, "record %d is out of sequence (inserted or reordered)", r.Seq)
	case r.PrevHash != prev:
		if first {
			v.bad(r.Seq, "record %d does not start the chain (inserted or reordered)", r.Seq)
		} else {
			v.bad(r.Seq, "record %d does not follow record %d (inserted or reordered)", r.Seq, r.Seq-1)
		}
	case Hash(r.PrevHash, r) != r.Hash:
		v.bad(r.Seq, "record %d was altered", r.Seq)
	}
	v.lastSeq = max(v.lastSeq, r.Seq)
	v.prevHash = r.Hash
}

func (v *verifier) report() Report {
	return Report{OK: v.problem == "", Records: v.records, LastSeq: v.lastSeq, FirstBad: v.firstBad, Problem: v.problem}
}
