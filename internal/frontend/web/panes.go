package web

import (
	"net/http"
	"time"

	"github.com/overseer-dev/overseer/internal/frontend/watch"
)

// apiPanes lists the panes the running `overseer watch` processes watch:
// each pane's agent, last prompt and state (the console's panes page).
func (c *Console) apiPanes(w http.ResponseWriter, r *http.Request, _ *session) {
	sets, err := watch.ReadPanes(c.k.Home, time.Now())
	if err != nil {
		writeErr(w, http.StatusInternalServerError, "watch", err.Error())
		return
	}
	if sets == nil {
		sets = []watch.PaneSet{}
	}
	writeJSON(w, http.StatusOK, map[string]any{"watchers": sets})
}
