package hooks

import (
	"context"

	"github.com/overseer-dev/overseer/internal/frontend/hookcore"
	"github.com/overseer-dev/overseer/internal/kernel"
)

// Transcripts are read by hookcore.ReadTranscriptUse.

// MaxTranscript bounds the transcript read at each call.
const MaxTranscript = hookcore.MaxTranscript

// TranscriptUse is what a transcript says of its session's model use.
type TranscriptUse = hookcore.TranscriptUse

// ReadTranscriptUse reads the cumulative use from agent's transcript r.
var ReadTranscriptUse = hookcore.ReadTranscriptUse

// UsageReporter is an optional ability of a Backend: report an agent's
// cumulative model use of a session.
type UsageReporter interface {
	ReportUsage(ctx context.Context, u kernel.Use) error
}

// ReportUsage implements UsageReporter through the daemon.
func (d *Daemon) ReportUsage(ctx context.Context, u kernel.Use) error {
	return d.C.ReportUsage(ctx, u.Agent, u.Session, u.Model, u.Input, u.Output, true)
}

// ReportUsage implements UsageReporter in this process.
func (p *InProcess) ReportUsage(ctx context.Context, u kernel.Use) error {
	p.K.RecordReported(ctx, u)
	return nil
}

var (
	_ UsageReporter = (*Daemon)(nil)
	_ UsageReporter = (*InProcess)(nil)
)

// reportUsage reads ev's transcript and reports its use, if there is
// any to report. Failures are ignored (see above).
func reportUsage(ctx context.Context, b Backend, ev *Event) {
	rep, ok := b.(UsageReporter)
	if !ok || ev.TranscriptPath == "" || ev.SessionID == "" || (ev.Agent != ClaudeCode && ev.Agent != Codex) {
		return
	}
	f, err := hookcore.OpenTranscript(ev.TranscriptPath)
	if err != nil {
		return
	}
	defer f.Close()
	u, err := ReadTranscriptUse(ev.Agent, f)
	if err != nil || u.Input == 0 && u.Output == 0 {
		return
	}
	if u.Model == "" {
		u.Model = ev.Model
	}
	_ = rep.ReportUsage(ctx, kernel.Use{Agent: ev.Agent, Session: ev.SessionID, Model: u.Model, Input: u.Input, Output: u.Output})
}

// ReportUsage implements UsageReporter: to the daemon, else in this
// process.
func (a *Auto) ReportUsage(ctx context.Context, u kernel.Use) error {
	if a.daemon != nil {
		err := a.daemon.ReportUsage(ctx, u)
		if err == nil || !notConnected(err) {
			return err
		}
		a.daemon = nil
	}
	p, err := a.inProcess(ctx)
	if err != nil {
		return err
	}
	return p.ReportUsage(ctx, u)
}

var _ UsageReporter = (*Auto)(nil)
