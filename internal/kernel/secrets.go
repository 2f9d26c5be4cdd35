package kernel

import (
	"context"
	"strings"

	"github.com/overseer-dev/overseer/internal/guard"
	"github.com/overseer-dev/overseer/internal/guard/egress"
	"github.com/overseer-dev/overseer/internal/guard/resultscan"
	"github.com/overseer-dev/overseer/internal/guard/secrets"
)

// secretFinder is the shared secret analyser as the result scanner's
// SecretScanner: every occurrence of each secret found as written, by
// offsets. Secrets found only in a decoding (base64 …) have no place in
// the text to mask and are left out.
type secretFinder struct {
	eg *egress.Guard // for the known values; nil: formats only
}

func (f secretFinder) FindSecrets(text string) []resultscan.Secret {
	a := secrets.New(secrets.Options{})
	if f.eg != nil {
		a = f.eg.Analyzer()
	}
	var out []resultscan.Secret
	seen := map[string]bool{}
	for _, fd := range a.Scan(text) {
		if fd.End <= fd.Start || fd.End > len(text) {
			continue
		}
		v := text[fd.Start:fd.End]
		if seen[v] {
			continue
		}
		seen[v] = true
		for off := 0; ; {
			i := strings.Index(text[off:], v)
			if i < 0 {
				break
			}
			out = append(out, resultscan.Secret{Kind: fd.Rule, Start: off + i, End: off + i + len(v), Masked: fd.Masked})
			off += i + len(v)
		}
	}
	return out
}

// egressOf returns the egress guard among guards, or nil.
func egressOf(guards []guard.Guard) *egress.Guard {
	for _, g := range guards {
		if eg, ok := g.(*egress.Guard); ok {
			return eg
		}
	}
	return nil
}

// KnownValue is the fingerprint of a secret value (never the value).
type KnownValue = secrets.ValueFP

// EnvFingerprints fingerprints the secret-looking values of environ with
// the egress key in home: what an agent's hook reports with its calls so
// that a daemon also knows the agent's environment (see egress).
func EnvFingerprints(home string, environ []string) []KnownValue {
	return egress.EnvFingerprints(home, environ)
}

// WithReportedValues returns ctx carrying the fingerprints a caller
// reported with a call: the egress guard adds them to the values it finds
// in that call (they can only make more text count as a secret).
func WithReportedValues(ctx context.Context, fps []KnownValue) context.Context {
	return egress.WithReported(ctx, fps)
}
