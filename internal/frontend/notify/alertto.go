package notify

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
)

// AlertTo is Alert for the channels named in names (by name or by type);
// no names means every channel. Names no channel has are skipped ("web" is
// the console, which shows every alert on its own).
func (n *Notifier) AlertTo(ctx context.Context, m *Message, names []string) error {
	if len(names) == 0 {
		return n.Alert(ctx, m)
	}
	var wg sync.WaitGroup
	var mu sync.Mutex
	var errs []error
	for _, nc := range n.chans {
		if !slices.Contains(names, nc.name) && !slices.Contains(names, nc.typ) {
			continue
		}
		wg.Add(1)
		go func() { // owned by AlertTo, which waits for it
			defer wg.Done()
			if err := n.deliver(ctx, nc, m); err != nil {
				mu.Lock()
				errs = append(errs, fmt.Errorf("%s: %w", nc.name, err))
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	return errors.Join(errs...)
}
