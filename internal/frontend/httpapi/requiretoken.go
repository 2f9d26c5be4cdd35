package httpapi

import "net/http"

// RequireToken wraps h for a route mounted by another front end that needs
// the daemon's token: a request without it is refused as the API's own
// routes refuse it (401, and wrong guesses throttled).
func (s *Server) RequireToken(h http.HandlerFunc) http.HandlerFunc { return s.auth(h) }
