package apiauth

import (
	"strings"
	"testing"
	"time"
)

func TestSignVerifyProve(t *testing.T) {
	now := time.Unix(1_800_000_000, 0)
	h, nonce := Sign("tok", "POST", "/api/v1/actions?facts=1", now)
	if strings.Contains(h, "tok") || !Signed(h) {
		t.Fatalf("header %q", h)
	}
	var v Verifier
	got, ok := v.Verify("tok", h, "POST", "/api/v1/actions?facts=1", now.Add(30*time.Second))
	if !ok || got != nonce {
		t.Fatalf("a valid signature refused (%q, %v)", got, ok)
	}
	if !CheckProof("tok", nonce, Proof("tok", nonce)) {
		t.Fatal("the daemon's proof refused")
	}
	for _, bad := range []string{"", Proof("other", nonce), Proof("tok", nonce+"x"), Proof("tok", nonce)[1:]} {
		if CheckProof("tok", nonce, bad) {
			t.Fatalf("proof %q taken", bad)
		}
	}
	if CheckProof("", nonce, Proof("", nonce)) {
		t.Fatal("a proof under no token taken")
	}
	if _, ok := v.Verify("tok", h, "POST", "/api/v1/actions?facts=1", now); ok {
		t.Fatal("a replayed signature accepted")
	}
}

func TestVerifyRefuses(t *testing.T) {
	now := time.Unix(1_800_000_000, 0)
	h, _ := Sign("tok", "GET", "/api/v1/approvals", now)
	ts, rest, _ := strings.Cut(strings.TrimPrefix(h, Scheme+" "), ".")
	nonce, sig, _ := strings.Cut(rest, ".")
	for name, tc := range map[string]struct {
		token, header, method, target string
		at                            time.Time
	}{
		"another token":       {"tok2", h, "GET", "/api/v1/approvals", now},
		"no token":            {"", h, "GET", "/api/v1/approvals", now},
		"another method":      {"tok", h, "POST", "/api/v1/approvals", now},
		"another target":      {"tok", h, "GET", "/api/v1/approvals/a1/approve", now},
		"another query":       {"tok", h, "GET", "/api/v1/approvals?x=1", now},
		"too late":            {"tok", h, "GET", "/api/v1/approvals", now.Add(Window + time.Second)},
		"too early":           {"tok", h, "GET", "/api/v1/approvals", now.Add(-Window - time.Second)},
		"bearer":              {"tok", "Bearer tok", "GET", "/api/v1/approvals", now},
		"other time":          {"tok", Scheme + " " + "1800000001." + nonce + "." + sig, "GET", "/api/v1/approvals", now},
		"other nonce":         {"tok", Scheme + " " + ts + ".AAAA." + sig, "GET", "/api/v1/approvals", now},
		"no signature":        {"tok", Scheme + " " + ts + "." + nonce + ".", "GET", "/api/v1/approvals", now},
		"no nonce":            {"tok", Scheme + " " + ts + ".." + sig, "GET", "/api/v1/approvals", now},
		"not a number":        {"tok", Scheme + " x" + ts + "." + nonce + "." + sig, "GET", "/api/v1/approvals", now},
		"truncated":           {"tok", h[:len(h)-1], "GET", "/api/v1/approvals", now},
		"the scheme only":     {"tok", Scheme + " ", "GET", "/api/v1/approvals", now},
		"lower-case scheme":   {"tok", strings.ToLower(Scheme) + h[len(Scheme):], "GET", "/api/v1/approvals", now},
		"the proof as a sign": {"tok", Scheme + " " + ts + "." + nonce + "." + Proof("tok", nonce), "GET", "/api/v1/approvals", now},
	} {
		var v Verifier
		if _, ok := v.Verify(tc.token, tc.header, tc.method, tc.target, tc.at); ok {
			t.Errorf("%s: accepted", name)
		}
	}
}

// TestVerifierBounded: the nonces remembered stay bounded; expired ones
// are forgotten to make room, and a full verifier refuses rather than
// forgets a nonce still in its window.
func TestVerifierBounded(t *testing.T) {
	now := time.Unix(1_800_000_000, 0)
	var v Verifier
	v.seen = map[string]int64{}
	for i := 0; i < maxSeen; i++ {
		v.seen[strings.Repeat("n", 1+i%7)+string(rune('a'+i%26))+time.Duration(i).String()] = now.Unix() + 100
	}
	h, _ := Sign("tok", "GET", "/x", now)
	if _, ok := v.Verify("tok", h, "GET", "/x", now); ok {
		t.Fatal("a full verifier accepted a new nonce")
	}
	later := now.Add(200 * time.Second)
	h, _ = Sign("tok", "GET", "/x", later)
	if _, ok := v.Verify("tok", h, "GET", "/x", later); !ok {
		t.Fatal("expired nonces were not forgotten to make room")
	}
	if len(v.seen) != 1 {
		t.Fatalf("%d nonces kept", len(v.seen))
	}
}

func FuzzVerify(f *testing.F) {
	now := time.Unix(1_800_000_000, 0)
	h, _ := Sign("tok", "GET", "/x", now)
	f.Add(h, "GET", "/x")
	f.Add("Overseer-MAC 1800000000.abc.def", "POST", "/")
	f.Add("Bearer tok", "GET", "/x")
	f.Fuzz(func(t *testing.T, header, method, target string) {
		var v Verifier
		nonce, ok := v.Verify("tok", header, method, target, now)
		if !ok {
			return
		}
		// Only a header made with the token verifies: rebuild it.
		ts := strings.SplitN(strings.TrimPrefix(header, Scheme+" "), ".", 2)[0]
		want := Scheme + " " + ts + "." + nonce + "." + mac("tok", "overseer request v1", method, target, ts, nonce)
		if header != want {
			t.Fatalf("accepted %q for %s %s", header, method, target)
		}
		if _, again := v.Verify("tok", header, method, target, now); again {
			t.Fatal("accepted twice")
		}
	})
}
