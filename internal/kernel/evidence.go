package kernel

// Everything that decides is covered by the audit log.
//
// The approvals queue and the user policy layer are tables beside the
// audit log: whoever can write the database file could add an allow-all
// rule or turn a denied approval into an approved one without a record.
// So every change to them is committed in the same transaction as the
// audit record that describes it (store effects, see store.AuditWrite),
// and what the kernel reads back is checked against those records:
//
//   - a user rule is used only when the latest policy_change record for
//     its id adds exactly that rule (same JSON, position, origin, author,
//     times); a rule the log says was added but that is missing from the
//     table is put back (fail closed: a removed "block" still blocks);
//   - an approval is honoured only when its approval_request record holds
//     the same request and its answers are the answer records, in order;
//     otherwise it reads as refused (status denied, Unaudited saying why).
//
// Findings lists what is refused, for `overseer audit verify` and the
// console.

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/overseer-dev/overseer/internal/action"
	"github.com/overseer-dev/overseer/internal/audit"
	"github.com/overseer-dev/overseer/internal/autorule"
	"github.com/overseer-dev/overseer/internal/clock"
	"github.com/overseer-dev/overseer/internal/firewall"
	"github.com/overseer-dev/overseer/internal/gate"
	"github.com/overseer-dev/overseer/internal/policy"
	"github.com/overseer-dev/overseer/internal/store"
)

// Finding is a rule or an approval with no audited record behind it.
type Finding struct {
	Kind string `json:"kind"` // rule, approval
	ID   string `json:"id"`
	Why  string `json:"why"`
}

func (f Finding) String() string { return fmt.Sprintf("%s %s: %s", f.Kind, f.ID, f.Why) }

// audited is the store as the kernel's parts see it: reads of approvals
// and user rules are checked against the audit log, and the user layer's
// writes (the adaptive layer's) go through the audit log as effects.
type audited struct {
	store.Store
	k *Kernel
}

// errNoVersion: the store has no OthersVersion.
var errNoVersion = errors.New("the store does not tell others' commits apart")

// OthersVersion is the store's, when it has one (see
// sqlite.DB.OthersVersion).
func (s audited) OthersVersion(ctx context.Context) (int64, error) {
	if v, ok := s.Store.(interface {
		OthersVersion(context.Context) (int64, error)
	}); ok {
		return v.OthersVersion(ctx)
	}
	return 0, errNoVersion
}

type actionKey struct{}

// withAction tells the audited store which action a rule change answers.
func withAction(ctx context.Context, a *action.Action) context.Context {
	return context.WithValue(ctx, actionKey{}, a)
}

// GetApproval implements store.ApprovalStore, checked.
func (s audited) GetApproval(ctx context.Context, id string) (*store.Approval, error) {
	ap, err := s.Store.GetApproval(ctx, id)
	if err != nil {
		return nil, err
	}
	if err := s.k.checkApproval(ctx, ap); err != nil {
		return nil, err
	}
	return ap, nil
}

// ListApprovals implements store.ApprovalStore, checked. An approval that
// is refused no longer matches a status filter other than denied; it is
// kept in the list, marked, so that the console can show it.
func (s audited) ListApprovals(ctx context.Context, f store.ApprovalFilter) ([]*store.Approval, error) {
	list, err := s.Store.ListApprovals(ctx, f)
	if err != nil {
		return nil, err
	}
	if err := s.k.checkApprovals(ctx, list); err != nil {
		return nil, err
	}
	out := list[:0]
	for _, ap := range list {
		if ap.Unaudited != "" && f.Status != "" && f.Status != store.StatusPending && f.Status != ap.Status {
			continue
		}
		out = append(out, ap)
	}
	return out, nil
}

// ListUserRules implements store.RuleStore, checked.
func (s audited) ListUserRules(ctx context.Context, now time.Time) ([]store.UserRule, error) {
	rules, _, err := s.k.checkedRules(ctx, now)
	return rules, err
}

// PutUserRule implements store.RuleStore through the audit log (the
// adaptive layer's escalations).
func (s audited) PutUserRule(ctx context.Context, r *store.UserRule) error {
	pc := PolicyChange{Origin: r.Origin, Op: "add", RuleID: r.ID, Who: r.CreatedBy}
	var pr policy.Rule
	if err := json.Unmarshal(r.Rule, &pr); err == nil {
		pc.Rule, pc.After, pc.Tool = &pr, pr.Level, strings.Join(pr.Tool, ",")
		pc.Reason = pr.Message
	}
	if c := firewall.ChangeFrom(ctx); c != nil {
		pc.Tool, pc.Before, pc.After, pc.Reason = c.Tool, c.Before, c.After, c.Reason
	}
	return s.k.putRule(ctx, r, pc, false)
}

// DeleteUserRule implements store.RuleStore through the audit log.
func (s audited) DeleteUserRule(ctx context.Context, id string) error {
	pc := PolicyChange{Origin: "adaptive", Op: "remove", RuleID: id, Reason: "escalation reverted after consecutive approvals"}
	if strings.HasPrefix(id, firewall.AdaptivePrefix) {
		pc.Tool = strings.TrimPrefix(id, firewall.AdaptivePrefix)
		pc.Before = action.Approve
	} else {
		pc.Origin, pc.Reason = "human", "rule removed"
	}
	if c := firewall.ChangeFrom(ctx); c != nil {
		pc.Tool, pc.Before, pc.After, pc.Reason = c.Tool, c.Before, c.After, c.Reason
	}
	return s.k.deleteRule(ctx, id, pc)
}

// putRule saves r and its policy_change record pc in one transaction.
func (k *Kernel) putRule(ctx context.Context, r *store.UserRule, pc PolicyChange, person bool) error {
	e := audit.Entry{Type: audit.TypePolicyChange, Tool: pc.Tool, Seal: person}
	if a, _ := ctx.Value(actionKey{}).(*action.Action); a != nil {
		e.ActionID, e.Agent, e.Session = a.ID, a.Agent, a.Session
	}
	e.Effect = &store.PutUserRuleEffect{Rule: r, Describe: func(stored *store.UserRule) (json.RawMessage, error) {
		c := pc
		cp := *stored
		c.Stored = &cp
		return k.signedData(audit.TypePolicyChange, c)
	}}
	if _, err := k.Audit.Append(ctx, e); err != nil {
		return fmt.Errorf("saving the rule and its audit record: %w", err)
	}
	return nil
}

// deleteRule deletes rule id and records pc in one transaction.
func (k *Kernel) deleteRule(ctx context.Context, id string, pc PolicyChange) error {
	e := audit.Entry{Type: audit.TypePolicyChange, Tool: pc.Tool, Seal: pc.Origin == "human"}
	if a, _ := ctx.Value(actionKey{}).(*action.Action); a != nil {
		e.ActionID, e.Agent, e.Session = a.ID, a.Agent, a.Session
	}
	e.Effect = &store.DeleteUserRuleEffect{ID: id, Describe: func(old *store.UserRule) (json.RawMessage, error) {
		c := pc
		if c.Tool == "" && old != nil {
			var pr policy.Rule
			if json.Unmarshal(old.Rule, &pr) == nil {
				c.Tool = strings.Join(pr.Tool, ",")
			}
		}
		return k.signedData(audit.TypePolicyChange, c)
	}}
	if _, err := k.Audit.Append(ctx, e); err != nil {
		return fmt.Errorf("deleting the rule with its audit record: %w", err)
	}
	return nil
}

// ---- the gate's journal

// journal commits the gate's changes with their audit records.
type journal struct{ k *Kernel }

func (j journal) CreateApproval(ctx context.Context, ap *store.Approval) error {
	e := audit.Entry{Type: audit.TypeApprovalRequest, ActionID: ap.ActionID, Agent: ap.Agent, Session: ap.Session,
		Tool: ap.Tool, Data: ap, Effect: &store.CreateApprovalEffect{Approval: ap}}
	_, err := j.k.Audit.Append(ctx, e)
	return err
}

func (j journal) AnswerApproval(ctx context.Context, id string, status store.ApprovalStatus, ans store.Answer, person bool) (*store.Approval, bool, error) {
	cur, err := j.k.raw.GetApproval(ctx, id)
	if err != nil {
		return nil, false, err
	}
	eff := &store.AnswerApprovalEffect{ID: id, Status: status, Answer: ans}
	eff.Describe = func(ap *store.Approval, applied bool) (json.RawMessage, error) {
		a := ans
		a.Applied = applied
		return j.k.signedData(audit.TypeAnswer, answerRecord{ApprovalID: ap.ID, Status: ap.Status, ArgsHash: ap.ArgsHash, Level: ap.Level, Answer: a})
	}
	e := audit.Entry{Type: audit.TypeAnswer, ActionID: cur.ActionID, Agent: cur.Agent, Session: cur.Session, Tool: cur.Tool,
		Effect: eff, Seal: person}
	if _, err := j.k.Audit.Append(ctx, e); err != nil {
		return nil, false, err
	}
	ap := eff.Result
	if err := j.k.checkApproval(ctx, ap); err != nil {
		return nil, false, err
	}
	return ap, eff.Applied, nil
}

// usedRecord is the data of an approval_used record.
type usedRecord struct {
	ApprovalID string    `json:"approval_id"`
	ArgsHash   string    `json:"args_hash"`
	AnsweredAt time.Time `json:"answered_at"`
}

// ConsumeApproval marks ap used with its approval_used record, in one
// transaction: the record stays in the log, sealed and chained, when the
// mark is deleted from the database (UsedApproval).
func (j journal) ConsumeApproval(ctx context.Context, ap *store.Approval, mark json.RawMessage) error {
	rec := usedRecord{ApprovalID: ap.ID, ArgsHash: ap.ArgsHash}
	if ap.Answer != nil {
		rec.AnsweredAt = ap.Answer.At
	}
	e := audit.Entry{Type: audit.TypeApprovalUsed, ActionID: ap.ActionID, Agent: ap.Agent, Session: ap.Session, Tool: ap.Tool,
		Data: rec, Effect: &store.PutStateEffect{NS: gate.ConsumedNS, Key: ap.ID, Value: mark, IfAbsent: true}}
	_, err := j.k.Audit.Append(ctx, e)
	return err
}

// UsedApproval reports whether the audit log records a use of ap. Any
// record counts, signed or not: it can only keep an approval from being
// used again.
func (j journal) UsedApproval(ctx context.Context, ap *store.Approval) (bool, error) {
	recs, err := j.k.raw.QueryAudit(ctx, store.AuditQuery{ActionID: ap.ActionID, Types: []string{audit.TypeApprovalUsed}})
	if err != nil {
		return true, fmt.Errorf("reading the uses of approval %s: %w", ap.ID, err)
	}
	for _, r := range recs {
		var u usedRecord
		if json.Unmarshal(r.Data, &u) != nil || u.ApprovalID == ap.ID {
			return true, nil // one that cannot be read may be its own
		}
	}
	return false, nil
}

// ---- checks

// normalApproval is the approval as created: what its approval_request
// record holds.
func normalApproval(ap *store.Approval) ([]byte, error) {
	c := *ap
	c.Status, c.Answer, c.Answers, c.Unaudited = "", nil, nil, ""
	b, err := json.Marshal(&c)
	if err != nil {
		return nil, err
	}
	// Decode and encode again so that both sides went through JSON alike.
	var d store.Approval
	if err := json.Unmarshal(b, &d); err != nil {
		return nil, err
	}
	return json.Marshal(&d)
}

func sameJSON(a, b any) bool {
	x, err1 := json.Marshal(a)
	y, err2 := json.Marshal(b)
	return err1 == nil && err2 == nil && bytes.Equal(x, y)
}

// approvalProblem says why ap is not backed by its records ("" when it is).
func (k *Kernel) approvalProblem(ap *store.Approval, recs []store.AuditRecord) string {
	var (
		request *store.Approval
		answers []answerRecord
	)
	for _, r := range recs {
		switch r.Type {
		case audit.TypeApprovalRequest:
			var a store.Approval
			if json.Unmarshal(r.Data, &a) == nil && a.ID == ap.ID {
				request = &a
			}
		case audit.TypeAnswer:
			var ar answerRecord
			if json.Unmarshal(r.Data, &ar) == nil && ar.ApprovalID == ap.ID {
				ar.signed = k.signedRecord(r)
				answers = append(answers, ar)
			}
		}
	}
	if request == nil {
		return "no approval_request record in the audit log"
	}
	want, err1 := normalApproval(request)
	got, err2 := normalApproval(ap)
	if err1 != nil || err2 != nil || !bytes.Equal(want, got) {
		return "the stored request differs from its approval_request record"
	}
	if len(ap.Answers) != len(answers) {
		return fmt.Sprintf("it has %d answers, the audit log records %d", len(ap.Answers), len(answers))
	}
	var applied *answerRecord
	for i := range answers {
		if !sameJSON(ap.Answers[i], answers[i].Answer) {
			return fmt.Sprintf("answer %d differs from its audit record", i+1)
		}
		if answers[i].Answer.Applied && applied == nil {
			applied = &answers[i]
		}
	}
	switch {
	case applied == nil && ap.Status != store.StatusPending:
		return fmt.Sprintf("its status is %s but no answer that decided it is recorded", ap.Status)
	case applied == nil:
		if ap.Answer != nil {
			return "it carries an answer that is not recorded"
		}
	case ap.Status != applied.Status:
		return fmt.Sprintf("its status is %s but the audit log records %s", ap.Status, applied.Status)
	case ap.Answer == nil || !sameJSON(*ap.Answer, applied.Answer):
		return "its deciding answer differs from its audit record"
	case applied.Status == store.StatusApproved && (applied.ArgsHash != ap.ArgsHash || !applied.signed):
		// An approval lets the agent's call run: its record must be one an
		// instance wrote (signing.go), for these arguments.
		return "its approving answer is not signed with this instance's key (it was written outside Overseer, " +
			"or by an instance whose " + ConsoleKeyName + " differs: copy the key as docs/deploy.md says)"
	}
	return ""
}

// checkApproval marks ap refused (Unaudited, status denied with the
// reason as its answer) when its records do not back it. The row and the
// records are read in two snapshots, so an answer committed between the
// two reads can make them disagree: on a disagreement both are read again
// (the row into ap), and only a lasting one refuses it.
func (k *Kernel) checkApproval(ctx context.Context, ap *store.Approval) error {
	if ap == nil {
		return nil
	}
	for try := 0; ; try++ {
		recs, err := k.raw.QueryAudit(ctx, store.AuditQuery{ActionID: ap.ActionID,
			Types: []string{audit.TypeApprovalRequest, audit.TypeAnswer}})
		if err != nil {
			return fmt.Errorf("checking approval %s against the audit log: %w", ap.ID, err)
		}
		why := k.approvalProblem(ap, recs)
		if why == "" {
			return nil
		}
		if try == 2 {
			refuse(ap, why)
			return nil
		}
		fresh, err := k.raw.GetApproval(ctx, ap.ID)
		if err != nil {
			refuse(ap, why)
			return nil
		}
		*ap = *fresh
	}
}

func refuse(ap *store.Approval, why string) {
	if why == "" {
		return
	}
	ap.Unaudited = why
	ap.Status = store.StatusDenied
	ap.Answer = &store.Answer{Decision: "deny", Who: "overseer", Channel: "audit",
		Reason: "refused: " + why + " (the database was changed outside Overseer; run overseer audit verify)"}
}

// bulkAfter is how many approvals make checkApprovals read their records
// in one query rather than one query each.
const bulkAfter = 16

// checkApprovals is checkApproval for many approvals.
func (k *Kernel) checkApprovals(ctx context.Context, aps []*store.Approval) error {
	if len(aps) < bulkAfter {
		for _, ap := range aps {
			if err := k.checkApproval(ctx, ap); err != nil {
				return err
			}
		}
		return nil
	}
	oldest := aps[0].CreatedAt
	for _, ap := range aps {
		if ap.CreatedAt.Before(oldest) {
			oldest = ap.CreatedAt
		}
	}
	// Records are sealed after their approval is stamped; an hour's margin
	// covers clocks of other processes.
	recs, err := k.raw.QueryAudit(ctx, store.AuditQuery{Since: oldest.Add(-time.Hour),
		Types: []string{audit.TypeApprovalRequest, audit.TypeAnswer}})
	if err != nil {
		return fmt.Errorf("checking approvals against the audit log: %w", err)
	}
	byAction := map[string][]store.AuditRecord{}
	for _, r := range recs {
		byAction[r.ActionID] = append(byAction[r.ActionID], r)
	}
	for _, ap := range aps {
		if k.approvalProblem(ap, byAction[ap.ActionID]) != "" {
			if err := k.checkApproval(ctx, ap); err != nil { // read both again
				return err
			}
		}
	}
	return nil
}

// ruleRecord is a policy_change record and whether an instance signed it
// (signing.go).
type ruleRecord struct {
	PolicyChange
	signed bool
}

// ruleRecords returns the latest policy_change record of every rule id. A
// record no instance signed that follows one an instance did is skipped:
// it is someone else's, and a removal or a new rule under the same id
// could let through what the rule stopped.
func (k *Kernel) ruleRecords(ctx context.Context) (map[string]ruleRecord, error) {
	out := map[string]ruleRecord{}
	recs, err := k.raw.QueryAudit(ctx, store.AuditQuery{Types: []string{audit.TypePolicyChange}})
	if err != nil {
		return nil, err
	}
	for _, r := range recs {
		var pc PolicyChange
		if json.Unmarshal(r.Data, &pc) != nil || pc.RuleID == "" {
			continue
		}
		rr := ruleRecord{PolicyChange: pc, signed: k.signedRecord(r)}
		if prev, ok := out[pc.RuleID]; ok && !rr.signed && prev.signed {
			continue
		}
		out[pc.RuleID] = rr
	}
	return out, nil
}

// unasked reports whether a user rule (as stored) may let a call run
// without a person: its level is below confirm, or it cannot be read.
func unasked(raw json.RawMessage) bool {
	r, err := policy.DecodeRuleJSON(raw)
	return err != nil || r.Level < action.Confirm
}

// ruleProblem says why the stored rule is not backed by rr ("" when it
// is). A rule that lets calls run unasked needs a record an instance
// signed; one that asks a person or blocks may rest on an older record.
func ruleProblem(ur store.UserRule, rr ruleRecord, found bool) string {
	if why := ruleRecordProblem(ur, rr.PolicyChange, found); why != "" {
		return why
	}
	if !rr.signed && unasked(ur.Rule) {
		return "its policy_change record is not signed by an instance of Overseer (written outside Overseer, " +
			"or before records were signed: add the rule again), and the rule lets calls run unasked"
	}
	return ""
}

// ruleRecordProblem says why the stored rule is not what pc adds.
func ruleRecordProblem(ur store.UserRule, pc PolicyChange, found bool) string {
	switch {
	case !found:
		return "no policy_change record in the audit log adds it"
	case pc.Op != "add":
		return "the audit log records its removal"
	case pc.Stored != nil:
		s := pc.Stored
		if s.ID != ur.ID || s.Position != ur.Position || s.Origin != ur.Origin || s.CreatedBy != ur.CreatedBy ||
			!s.CreatedAt.Equal(ur.CreatedAt) || !s.ExpiresAt.Equal(ur.ExpiresAt) || !sameRaw(s.Rule, ur.Rule) {
			return "it differs from the rule its policy_change record adds"
		}
		return ""
	}
	// A record written before records carried the stored rule.
	r, err := policy.DecodeRuleJSON(ur.Rule)
	if err != nil {
		return "it cannot be read"
	}
	if pc.Rule != nil {
		if !sameJSON(r, *pc.Rule) {
			return "it differs from the rule its policy_change record adds"
		}
		return ""
	}
	if pc.Origin == "adaptive" && r.Name == ur.ID && r.Level == action.Approve {
		return "" // an escalation: it can only ask a person more
	}
	return "its policy_change record does not say what rule it adds"
}

func sameRaw(a, b json.RawMessage) bool {
	var x, y bytes.Buffer
	if json.Compact(&x, a) != nil || json.Compact(&y, b) != nil {
		return false
	}
	return bytes.Equal(x.Bytes(), y.Bytes())
}

// checkedRules returns the user rules in force at now that the audit log
// backs, with those it records but the table lost put back; and the
// findings.
func (k *Kernel) checkedRules(ctx context.Context, now time.Time) ([]store.UserRule, []Finding, error) {
	stored, err := k.raw.ListUserRules(ctx, now)
	if err != nil {
		return nil, nil, err
	}
	recs, err := k.ruleRecords(ctx)
	if err != nil {
		return nil, nil, fmt.Errorf("checking the user rules against the audit log: %w", err)
	}
	var (
		out      []store.UserRule
		findings []Finding
		backed   = map[string]bool{} // rows their records back
		flagged  = map[string]bool{} // ids with a finding
	)
	for _, ur := range stored {
		pc, found := recs[ur.ID]
		if why := ruleProblem(ur, pc, found); why != "" {
			findings = append(findings, Finding{Kind: "rule", ID: ur.ID, Why: "refused: " + why})
			flagged[ur.ID] = true
			continue
		}
		backed[ur.ID] = true
		out = append(out, ur)
	}
	// A rule the log adds is used as recorded when the table lost it, or
	// holds something else under its id (another rule, another expiry: a
	// person's block rule rewritten or expired in the table still blocks).
	all, err := k.raw.ListUserRules(ctx, time.Time{})
	if err != nil {
		return nil, nil, err
	}
	present := map[string]bool{}
	for _, ur := range all {
		present[ur.ID] = true
	}
	for id, pc := range recs {
		if backed[id] || pc.Op != "add" || pc.Stored == nil {
			continue
		}
		if !pc.Stored.ExpiresAt.IsZero() && !pc.Stored.ExpiresAt.After(now) {
			continue
		}
		if !pc.signed && unasked(pc.Stored.Rule) {
			if !flagged[id] {
				findings = append(findings, Finding{Kind: "rule", ID: id,
					Why: "refused: a policy_change record no instance signed adds it, and the rule lets calls run unasked"})
			}
			continue
		}
		why := "removed from the user layer without an audit record; Overseer keeps using it as recorded"
		if present[id] {
			why = "changed in the user layer without an audit record; Overseer keeps using it as recorded"
		}
		if flagged[id] {
			for i := range findings {
				if findings[i].ID == id {
					findings[i].Why += "; " + why
				}
			}
		} else {
			findings = append(findings, Finding{Kind: "rule", ID: id, Why: why})
		}
		out = append(out, *pc.Stored)
	}
	// A rule this process used that has vanished from the table and from
	// the log alike (deleted with its records: a gap only audit verify
	// shows) is kept while it lasts.
	inForce := map[string]bool{}
	for _, ur := range out {
		inForce[ur.ID] = true
	}
	k.known.mu.Lock()
	for id, ur := range k.known.rules {
		if _, recorded := recs[id]; recorded || inForce[id] {
			continue
		}
		if !ur.ExpiresAt.IsZero() && !ur.ExpiresAt.After(now) {
			continue
		}
		findings = append(findings, Finding{Kind: "rule", ID: id,
			Why: "removed from the user layer together with its audit records; Overseer keeps using it until it restarts"})
		out = append(out, ur)
	}
	k.known.rules = make(map[string]store.UserRule, len(out))
	for _, ur := range out {
		k.known.rules[ur.ID] = ur
	}
	k.known.mu.Unlock()
	sort.SliceStable(out, func(i, j int) bool { return out[i].Position < out[j].Position })
	sort.Slice(findings, func(i, j int) bool { return findings[i].ID < findings[j].ID })
	return out, findings, nil
}

// knownState is what the kernel last read of the user rules and the
// controls (see Kernel.known).
type knownState struct {
	mu        sync.Mutex
	rules     map[string]store.UserRule
	controls  map[[2]string]store.Control
	autoRules map[string]autorule.Rule
}

// FindingsOf is Findings for a store with no kernel around it (verify);
// home holds the key the records are signed with (signing.go). sealed is
// the last record whose seal the verification key proved (0: none): those
// records are the instances' whether or not they carry a signature (a
// version before signing wrote them), as far as a signature matters.
func FindingsOf(ctx context.Context, home string, st store.Store, now time.Time, all bool, sealed int64) ([]Finding, error) {
	if home == "" {
		return nil, errors.New("findings: no home to read the signing key from")
	}
	k := &Kernel{Home: home, raw: st, Clock: clock.NewFake(now), sealedThrough: sealed}
	_, k.shared = st.(store.Watcher)
	return k.Findings(ctx, all)
}

// Findings lists the rules and approvals that the audit log does not back:
// every user rule, and the approvals (all of them with all set, else the
// pending ones and those answered in the last day).
func (k *Kernel) Findings(ctx context.Context, all bool) ([]Finding, error) {
	_, out, err := k.checkedRules(ctx, k.Clock.Now())
	if err != nil {
		return nil, err
	}
	aps, err := k.raw.ListApprovals(ctx, store.ApprovalFilter{})
	if err != nil {
		return nil, err
	}
	since := k.Clock.Now().Add(-24 * time.Hour)
	check := aps[:0]
	for _, ap := range aps {
		if all || ap.Status == store.StatusPending || !ap.CreatedAt.Before(since) {
			check = append(check, ap)
		}
	}
	if err := k.checkApprovals(ctx, check); err != nil {
		return nil, err
	}
	for _, ap := range check {
		if ap.Unaudited != "" {
			out = append(out, Finding{Kind: "approval", ID: ap.ID, Why: "refused: " + ap.Unaudited})
		}
	}
	return out, nil
}
