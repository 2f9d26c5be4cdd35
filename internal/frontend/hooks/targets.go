package hooks

import (
	"context"
	"sync"

	"github.com/overseer-dev/overseer/internal/action"
	"github.com/overseer-dev/overseer/internal/guard/shell"
)

var (
	shellOnce  sync.Once
	shellGuard *shell.Guard
	shellErr   error
)

// FillTargets fills a.Facts.Paths, when no analyzer has yet, with the paths
// the call writes or deletes: the path arguments of file tools, and what the
// shell guard finds a shell command deletes or writes. These are the files
// whose previous content is kept before the call runs.
func FillTargets(ctx context.Context, a *action.Action) error {
	if len(a.Facts.Paths) > 0 {
		return nil
	}
	switch a.Kind {
	case action.KindFileWrite, action.KindFileEdit, action.KindFileDelete:
		action.DeriveFileFacts(a)
	case action.KindShell:
		shellOnce.Do(func() { shellGuard, shellErr = shell.New(shell.Config{}) })
		if shellErr != nil {
			return shellErr
		}
		c := *a
		c.Facts = action.Facts{}
		if _, err := shellGuard.Check(ctx, &c); err != nil {
			return err
		}
		for _, p := range c.Facts.Paths {
			if p.Intent == action.PathWrite || p.Intent == action.PathDelete {
				a.Facts.Paths = append(a.Facts.Paths, p)
			}
		}
	}
	return nil
}
