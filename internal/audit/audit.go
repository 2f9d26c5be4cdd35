// Package audit is Overseer's append-only, hash-chained audit log: every
// action, verdict, approval request, human answer, execution result and
// policy change, each record holding the hash of the one before it, so that
// Verify can name the first record that was altered, removed, inserted or
// moved.
//
// # Hash
//
// Each record's hash is
//
//	hex(sha256(prev_hash + "\n" + canonical))
//
// where prev_hash is the previous record's hash (Genesis for the first
// record) and canonical is the concatenation of these fields, each written
// as a netstring (decimal byte length, ":", the bytes, ","):
//
//	seq (decimal), time (UTC, RFC 3339 with nanoseconds as time.RFC3339Nano
//	writes it), type, action_id, agent, session, tool, data
//
// data is the record's compact JSON, stored byte for byte as hashed.
// Netstrings make the encoding unambiguous for any bytes, and easy to
// recompute outside Overseer.
//
// # Writing
//
// A Log has one writer goroutine that collects whatever entries are waiting
// into one store.AppendAudit call, so that concurrent appenders share one
// durable commit. Append returns only after its record is committed.
package audit

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"strconv"
	"time"

	"github.com/overseer-dev/overseer/internal/store"
)

// Record types.
const (
	TypeAction          = "action"
	TypeVerdict         = "verdict"
	TypeApprovalRequest = "approval_request"
	TypeAnswer          = "answer"
	TypeResult          = "result"
	TypePolicyChange    = "policy_change"
	TypeError           = "error"
	TypeTask            = "task" // a supervised-mode task's lifecycle: created, started, abort requested, ended
	// TypeAlert is something a person should see that is not a request:
	// a tool result carrying prompt injection or secrets, an MCP tool
	// definition withheld as poisoned or changed.
	TypeAlert = "alert"
	// TypeIngested is a tool call an agent made without Overseer in the
	// path, read from its transcript after the fact (audited mode) and
	// judged then: the record holds the action, the verdict and where it
	// was read. It is never an action record: nothing ingested passes for
	// something Overseer let through.
	TypeIngested = "ingested"
	// TypeIngestedResult is an ingested call's recorded result.
	TypeIngestedResult = "ingested_result"
	// TypeRollback is a person's rollback of a file write found by ingest.
	TypeRollback = "rollback"
	// TypeTrust is a change of an agent's trust mode (promotion, demotion).
	TypeTrust = "trust"
	// TypeApprovalUsed is the use of a person's approval: the one call it
	// let through. It is committed with the approval's mark of use, and an
	// approval it names is used whether or not the mark is still there.
	TypeApprovalUsed = "approval_used"
)

// Genesis is the prev_hash of the first record of a chain.
const Genesis = "0000000000000000000000000000000000000000000000000000000000000000"

// Sentinel errors.
var (
	// ErrClosed is returned by Append after Close.
	ErrClosed = errors.New("audit: log closed")
	// ErrInvalid is returned for an entry that cannot be recorded.
	ErrInvalid = errors.New("audit: invalid entry")
)

// Entry is what a caller records; the log adds the sequence number, the
// time and the hashes.
type Entry struct {
	Type     string // one of the Type constants (or another non-empty type)
	ActionID string
	Agent    string
	Session  string
	Tool     string
	Data     any // JSON-encoded; a json.RawMessage is compacted, an Encoded kept, nil is null
	// Effect, when set, is committed in the same transaction as the record
	// (see store.AuditWrite); a failing effect fails the append.
	Effect store.Effect
	// Seal closes the sealing epoch right after this record (a person's
	// answer), so that it is sealed with a key that is then erased.
	Seal bool
}

// Encoded is data as encoding/json.Marshal encoded it (valid and compact):
// as an Entry's Data it is stored as it is, not scanned and compacted
// again as a json.RawMessage is. Only bytes Marshal returned may be given
// as Encoded (the kernel's encodings of an action and its verdict).
type Encoded []byte

// Hash returns the hash of r chained to prev (see the package
// documentation). It reads r's Seq, Time, Type, ActionID, Agent, Session,
// Tool and Data; r.PrevHash and r.Hash are ignored.
func Hash(prev string, r store.AuditRecord) string {
	b := make([]byte, 0, len(prev)+1+96+len(r.Type)+len(r.ActionID)+len(r.Agent)+len(r.Session)+len(r.Tool)+len(r.Data))
	b = append(b, prev...)
	b = append(b, '\n')
	b = netstring(b, strconv.AppendInt(nil, r.Seq, 10))
	b = netstring(b, []byte(FormatTime(r.Time)))
	b = netstringS(b, r.Type)
	b = netstringS(b, r.ActionID)
	b = netstringS(b, r.Agent)
	b = netstringS(b, r.Session)
	b = netstringS(b, r.Tool)
	b = netstring(b, r.Data)
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:])
}

// FormatTime is how a record's time enters its hash.
func FormatTime(t time.Time) string { return t.UTC().Format(time.RFC3339Nano) }

func netstring(b, s []byte) []byte {
	b = strconv.AppendInt(b, int64(len(s)), 10)
	b = append(b, ':')
	b = append(b, s...)
	return append(b, ',')
}

func netstringS(b []byte, s string) []byte {
	b = strconv.AppendInt(b, int64(len(s)), 10)
	b = append(b, ':')
	b = append(b, s...)
	return append(b, ',')
}
