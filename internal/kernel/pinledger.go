package kernel

import (
	"context"
	"encoding/json"
	"fmt"
	"sync"

	"github.com/overseer-dev/overseer/internal/audit"
	"github.com/overseer-dev/overseer/internal/mcppin"
	"github.com/overseer-dev/overseer/internal/store"
)

// pinLedger keeps the MCP gateway's acceptances of definitions
// (mcppin.Ledger) in the audit log, on a shared store: each is an
// mcp_pinned record signed as the records that let an agent do more are
// (signing.go). A pin's row is a cache of its latest acceptance that the
// log backs: a writer of the database who deletes the row, or puts back
// an older signed copy, does not get another definition offered; the
// records cannot be taken back without a gap that audit verify names, nor
// forged without the key.
type pinLedger struct {
	k *Kernel

	mu     sync.Mutex
	after  int64 // the last record read
	latest map[string]mcppin.Acceptance
}

var _ mcppin.Ledger = (*pinLedger)(nil)

// maxPinnedTool is the longest tool column an mcp_pinned record is given.
const maxPinnedTool = 512

func ledgerKey(server string, kind mcppin.Kind, name string) string {
	return server + "\x00" + string(kind) + "\x00" + name
}

// Record appends a, signed, and reads it back with any records before it.
func (l *pinLedger) Record(ctx context.Context, a mcppin.Acceptance) error {
	data, err := l.k.signedData(mcppin.TypePinned, a)
	if err != nil {
		return err
	}
	tool := a.Server + "__" + a.Tool
	if len(tool) > maxPinnedTool {
		tool = "" // a resource's long URI: in the data only (the tool column is indexed)
	}
	if _, err := l.k.Audit.Append(ctx, audit.Entry{Type: mcppin.TypePinned, Tool: tool, Data: data}); err != nil {
		return err
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.read(ctx)
}

// Latest returns the latest acceptance of a pin that an instance signed.
// The records written since the last read are read first (by the index
// of the log's types: none, most of the time), so that a pin put back
// from an older copy just after another instance recorded a newer
// acceptance is not taken.
func (l *pinLedger) Latest(ctx context.Context, server string, kind mcppin.Kind, name string) (mcppin.Acceptance, bool, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if err := l.read(ctx); err != nil {
		return mcppin.Acceptance{}, false, err
	}
	a, ok := l.latest[ledgerKey(server, kind, name)]
	return a, ok, nil
}

// read reads the records written since the last read. A record no
// instance signed is skipped: it would let a definition through. l.mu is
// held.
func (l *pinLedger) read(ctx context.Context) error {
	recs, err := l.k.raw.QueryAudit(ctx, store.AuditQuery{AfterSeq: l.after, Types: []string{mcppin.TypePinned}})
	if err != nil {
		return fmt.Errorf("reading the MCP definitions' acceptances: %w", err)
	}
	if l.latest == nil {
		l.latest = map[string]mcppin.Acceptance{}
	}
	for _, r := range recs {
		l.after = max(l.after, r.Seq)
		if !l.k.signedRecord(r) {
			continue
		}
		var a mcppin.Acceptance
		if json.Unmarshal(r.Data, &a) != nil || a.Hash == "" || a.Seq <= 0 {
			continue
		}
		k := ledgerKey(a.Server, a.Kind, a.Tool)
		if cur, ok := l.latest[k]; ok && cur.Seq >= a.Seq {
			// The first of a number stands: a copy of a signed record
			// appended later (or a concurrent acceptance that lost the
			// race) does not take its place.
			continue
		}
		l.latest[k] = a
	}
	return nil
}
