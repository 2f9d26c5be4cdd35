package kernel

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/overseer-dev/overseer/internal/action"
	"github.com/overseer-dev/overseer/internal/audit"
	"github.com/overseer-dev/overseer/internal/store"
)

// Tools under which the agent loop's questions to a person are recorded.
const (
	// AskTool is a question the agent puts to a person.
	AskTool = "overseer.ask_human"
	// ConfirmDoneTool asks a person to confirm that a task is finished.
	ConfirmDoneTool = "overseer.confirm_done"
)

// Ask puts a question from an agent to a person: it records the question
// and opens an approval whose answer (approve, deny, abort, with the
// person's words as its reason) the caller waits for with Wait. tool is
// AskTool or ConfirmDoneTool; a.Args should carry the question. An answer
// to a question never adapts the policy.
func (k *Kernel) Ask(ctx context.Context, a *action.Action, question string) (*Submission, error) {
	if strings.TrimSpace(question) == "" {
		return nil, errors.New("ask: empty question")
	}
	MintID(a)
	a.Kind = action.KindOther
	if a.Args == nil {
		a.Args = map[string]any{}
	}
	a.Args["question"] = question
	r := action.Reason{Layer: "L5", Source: action.SourceAgent, Name: "question", Level: action.Confirm, Message: question}
	v := action.Verdict{ActionID: a.ID, Level: action.Confirm, Reasons: []action.Reason{r}, Decider: &r, ArgsHash: a.ArgsHash()}
	sub := &Submission{Action: *a, Verdict: v}
	if _, err := k.Audit.AppendAll(ctx, entry(audit.TypeAction, a, a), entry(audit.TypeVerdict, a, v)); err != nil {
		return nil, fmt.Errorf("recording the question: %w", err)
	}
	apr, err := k.Gate.Request(ctx, *a, v) // with its approval_request record
	if err != nil {
		return nil, fmt.Errorf("opening the question: %w", err)
	}
	sub.Approval = apr
	return sub, nil
}

// Withdraw ends a pending approval nobody needs any more (its asker gave
// up, its task was aborted) as withdrawn, recording why; a withdrawal is not
// a refusal and never adapts the policy. An answered approval is left as it
// is.
func (k *Kernel) Withdraw(ctx context.Context, id, reason string) (*store.Approval, bool, error) {
	return k.Gate.Withdraw(ctx, id, reason)
}
