package httpapi

import "net/http"

// WatchPanes serves GET /api/v1/watch/panes (with the token): the panes
// views that the running `overseer watch` processes publish, read by read.
func (s *Server) WatchPanes(read func() (any, error)) {
	s.r.HandleFunc("GET /api/v1/watch/panes", AccessToken, s.auth(func(w http.ResponseWriter, r *http.Request) {
		v, err := read()
		if err != nil {
			WriteError(w, http.StatusInternalServerError, "internal", "reading the watchers' panes failed")
			return
		}
		writeJSON(w, http.StatusOK, map[string]any{"watchers": v})
	}))
}
