package cli

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/signal"
	"path/filepath"
	"syscall"
	"time"

	"github.com/overseer-dev/overseer/internal/audit"
	"github.com/overseer-dev/overseer/internal/frontend/httpapi"
	"github.com/overseer-dev/overseer/internal/frontend/notify"
	"github.com/overseer-dev/overseer/internal/kernel"
)

func init() {
	mounts = append(mounts, mountAnchors)
}

// AnchorIntervalEnv overrides how often the daemon publishes the audit
// chain's head to the notification channels (a Go duration; for tests).
const AnchorIntervalEnv = "OVERSEER_ANCHOR_INTERVAL"

// journalInterval is how often the head goes to the system journal.
const journalInterval = time.Minute

// mountAnchors starts publishing the audit chain's head (sequence, hash,
// time) where the agent cannot rewrite it: the system journal, when there
// is one, and the notification channels of notify.yaml (all but desktop).
// `overseer audit verify --anchor` checks the log against what was
// published. The work stops with the daemon's stop signal.
func mountAnchors(k *kernel.Kernel, _ *httpapi.Server) error {
	ncfg, err := notify.Load(filepath.Join(k.Home, notify.ConfigName))
	switch {
	case errors.Is(err, notify.ErrNoConfig):
		ncfg = nil
	case err != nil:
		return err
	}
	logf := func(f string, a ...any) { fmt.Fprintf(os.Stderr, "overseer: "+f+"\n", a...) }
	var n *notify.Notifier
	every := notify.DefaultAnchorInterval
	if ncfg != nil {
		if n, err = notify.New(ncfg, notify.Options{Logf: logf}); err != nil {
			return err
		}
		if ncfg.AnchorInterval > 0 {
			every = time.Duration(ncfg.AnchorInterval)
		}
	}
	if d, err := time.ParseDuration(os.Getenv(AnchorIntervalEnv)); err == nil && d > 0 {
		every = d
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	go func() { // owned by ctx, which ends with the daemon's stop signal
		defer stop()
		publishHeads(ctx, k, n, every, logf)
	}()
	return nil
}

// publishHeads publishes the head whenever it changed: to the journal every
// journalInterval, to the channels every `every`.
func publishHeads(ctx context.Context, k *kernel.Kernel, n *notify.Notifier, every time.Duration, logf func(string, ...any)) {
	var lastJournal, lastNotify int64
	journalOK := true
	jt := time.NewTicker(min(journalInterval, every))
	defer jt.Stop()
	nt := time.NewTicker(every)
	defer nt.Stop()
	publish := func(toChannels bool) {
		h, err := audit.CurrentHead(ctx, k.Store)
		if err != nil || h.Seq == 0 {
			return
		}
		// A head is published only once it is on disk: a commit may be
		// seen a moment before its sync, and a head the disk then lost
		// would make the log look cut short.
		if s, ok := k.Raw().(interface{ SyncCommitted() error }); ok {
			if err := s.SyncCommitted(); err != nil {
				logf("syncing the audit log before publishing its head: %v", err)
				return
			}
		}
		if journalOK && h.Seq != lastJournal {
			switch err := audit.PublishJournal(h); {
			case errors.Is(err, audit.ErrNoJournal):
				logf("no system journal here: the audit log's head is not published there")
				journalOK = false
			case err != nil:
				logf("publishing the audit head to the journal: %v", err)
			default:
				lastJournal = h.Seq
			}
		}
		if toChannels && n != nil && h.Seq != lastNotify {
			if err := n.PublishHead(ctx, h); err != nil && ctx.Err() == nil {
				logf("publishing the audit head: %v", err)
			} else {
				lastNotify = h.Seq
			}
		}
	}
	publish(true)
	for {
		select {
		case <-ctx.Done():
			return
		case <-jt.C:
			publish(false)
		case <-nt.C:
			publish(true)
		}
	}
}
