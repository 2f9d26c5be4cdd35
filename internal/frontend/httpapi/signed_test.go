package httpapi_test

import (
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/overseer-dev/overseer/internal/apiauth"
	"github.com/overseer-dev/overseer/internal/frontend/client"
)

// signedCall sends a request signed with tok and returns the status, the
// nonce and the answer's proof header.
func signedCall(t *testing.T, srv *httptest.Server, method, path, tok, header string) (int, string, string) {
	t.Helper()
	req, _ := http.NewRequest(method, srv.URL+path, nil)
	nonce := ""
	if header == "" {
		header, nonce = apiauth.Sign(tok, method, req.URL.RequestURI(), time.Now())
	}
	req.Header.Set("Authorization", header)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	_, _ = io.Copy(io.Discard, resp.Body)
	return resp.StatusCode, nonce, resp.Header.Get(apiauth.ProofHeader)
}

// TestSignedRequests: a request signed with the daemon's token is taken
// as the token on every route that needs it and answered with the proof;
// a replay, another token, another route or a forged header are refused
// with no proof; the bearer token still works for people's scripts.
func TestSignedRequests(t *testing.T) {
	srv, _ := server(t)
	for _, path := range []string{"/api/v1/approvals", "/api/v1/audit/verify", "/api/v1/policy", "/metrics", "/healthz"} {
		code, nonce, proof := signedCall(t, srv, "GET", path, token, "")
		if code != http.StatusOK || !apiauth.CheckProof(token, nonce, proof) {
			t.Fatalf("GET %s signed: %d, proof %q", path, code, proof)
		}
	}
	// Replay: the same header again.
	req, _ := http.NewRequest("GET", srv.URL+"/api/v1/approvals", nil)
	h, _ := apiauth.Sign(token, "GET", req.URL.RequestURI(), time.Now())
	if code, _, _ := signedCall(t, srv, "GET", "/api/v1/approvals", token, h); code != http.StatusOK {
		t.Fatalf("first use: %d", code)
	}
	if code, _, proof := signedCall(t, srv, "GET", "/api/v1/approvals", token, h); code != http.StatusUnauthorized || proof != "" {
		t.Fatalf("a replayed signature: %d, proof %q", code, proof)
	}
	// Signed for another route, or with another token.
	other, _ := apiauth.Sign(token, "GET", "/api/v1/policy", time.Now())
	if code, _, proof := signedCall(t, srv, "GET", "/api/v1/approvals", token, other); code != http.StatusUnauthorized || proof != "" {
		t.Fatalf("a signature for another route: %d, proof %q", code, proof)
	}
	if code, _, proof := signedCall(t, srv, "POST", "/api/v1/approvals/apr_x/approve", "not-"+token, ""); code != http.StatusUnauthorized || proof != "" {
		t.Fatalf("signed with another token: %d, proof %q", code, proof)
	}
	// A public route answers an unsigned or wrongly signed request, with no proof.
	if code, _, proof := signedCall(t, srv, "GET", "/healthz", "not-"+token, ""); code != http.StatusOK || proof != "" {
		t.Fatalf("healthz signed with another token: %d, proof %q", code, proof)
	}
	if code, _ := call(t, srv, "GET", "/api/v1/approvals", nil, true); code != http.StatusOK {
		t.Fatalf("bearer: %d", code)
	}
}

// TestClientRefusesImpostor: a server at the daemon's address that does
// not hold the token learns nothing it can use (no token, a signature
// good once, for its route, for two minutes), and the client takes none
// of its answers; the real daemon's answers are taken.
func TestClientRefusesImpostor(t *testing.T) {
	var mu sync.Mutex
	var seen []string
	impostor := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		seen = append(seen, r.Header.Get("Authorization"))
		mu.Unlock()
		_, _ = io.WriteString(w, `[]`)
	}))
	defer impostor.Close()
	c := &client.Client{Base: impostor.URL, Token: token, HTTP: http.DefaultClient}
	if _, err := c.Approvals(context.Background(), ""); !errors.Is(err, apiauth.ErrImpostor) {
		t.Fatalf("the impostor's answer: %v", err)
	}
	mu.Lock()
	if len(seen) == 0 {
		t.Fatal("the impostor was never asked")
	}
	for _, a := range seen {
		if strings.Contains(a, token) || !apiauth.Signed(a) {
			t.Fatalf("the impostor was sent %q", a)
		}
	}
	mu.Unlock()

	srv, _ := server(t)
	c = &client.Client{Base: srv.URL, Token: token, HTTP: http.DefaultClient}
	if _, err := c.Approvals(context.Background(), ""); err != nil {
		t.Fatalf("the daemon's answer: %v", err)
	}
}
