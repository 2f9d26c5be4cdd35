package cli

import (
	"time"

	"github.com/overseer-dev/overseer/internal/frontend/httpapi"
	"github.com/overseer-dev/overseer/internal/frontend/watch"
	"github.com/overseer-dev/overseer/internal/kernel"
)

func init() {
	mounts = append(mounts, func(k *kernel.Kernel, api *httpapi.Server) error {
		mountWatchPanes(k.Home, api)
		return nil
	})
}

// mountWatchPanes serves the panes view of the watchers running on this
// machine: what each watched pane's agent last asked, and its state.
func mountWatchPanes(home string, api *httpapi.Server) {
	api.WatchPanes(func() (any, error) {
		sets, err := watch.ReadPanes(home, time.Now())
		if sets == nil {
			sets = []watch.PaneSet{}
		}
		return sets, err
	})
}
