package egress

import (
	"context"
	"sort"

	"github.com/overseer-dev/overseer/internal/guard/secrets"
	"github.com/overseer-dev/overseer/internal/lazyre"
)

// Reported known values: with a daemon, the environment the guard
// fingerprints at start is the daemon's, not the agent's. The agent's
// hook — a process of the agent's own environment — fingerprints the
// secret-looking values of its environment with the same key (the home's
// egress.key: the hook reads the home, agents cannot) and sends the
// fingerprints, never the values, with the call (EnvFingerprints); the
// daemon's guard adds them to what it finds for that call (WithReported).
//
// They can only add to what is found: a reported fingerprint makes more
// text count as a secret, never less, so a caller that forges them (any
// process that may submit calls) can at worst have its own calls put to a
// person. What is reported is bounded and its names are checked, since a
// person reads them in previews.

// Bounds of what one call may report.
const (
	MaxReported       = 64   // values
	MaxReportedLength = 4096 // bytes of one value (longer values are cut: their pieces still match)
)

// reportedName is the only source a reported value may name.
var reportedName = lazyre.New(`^the agent's environment variable [A-Za-z_][A-Za-z0-9_]{0,127}$`)

// EnvFingerprints fingerprints the secret-looking values of environ (the
// filter the guard applies to its own environment) with the key in home.
// Sources are "the agent's environment variable NAME". Nothing is returned
// when the key cannot be read or made (the daemon then knows only its own
// environment).
func EnvFingerprints(home string, environ []string) []secrets.ValueFP {
	if home == "" {
		return nil
	}
	vals := envValues(environ)
	if len(vals) == 0 {
		return nil // the key is not even read
	}
	key, err := loadKey(home)
	if err != nil {
		return nil
	}
	fp, err := secrets.NewFingerprints(key)
	if err != nil {
		return nil
	}
	names := make([]string, 0, len(vals))
	for n := range vals {
		names = append(names, n)
	}
	sort.Strings(names)
	var out []secrets.ValueFP
	for _, n := range names {
		for _, v := range vals[n] {
			if len(out) == MaxReported {
				return out
			}
			if len(v) > MaxReportedLength {
				v = v[:MaxReportedLength]
			}
			if f, ok := fp.Fingerprint("the agent's environment variable "+n, v); ok {
				out = append(out, f)
			}
		}
	}
	return out
}

type reportedKey struct{}

// WithReported returns ctx carrying fingerprints a caller reported with a
// call (EnvFingerprints); Check adds them to the values it finds.
func WithReported(ctx context.Context, fps []secrets.ValueFP) context.Context {
	if len(fps) == 0 {
		return ctx
	}
	return context.WithValue(ctx, reportedKey{}, fps)
}

// maxWindowsText bounds the encoded windows of one reported value.
const maxWindowsText = (MaxReportedLength*8*4 + 2) / 3

// reported returns the reported fingerprints of ctx as a set made with
// the guard's key, keeping only well-formed ones within the bounds.
func (g *Guard) reported(ctx context.Context) *secrets.Fingerprints {
	fps, _ := ctx.Value(reportedKey{}).([]secrets.ValueFP)
	if len(fps) == 0 || g.files == nil {
		return nil
	}
	set := g.files.fp.Clone() // empty, with the guard's key
	n := 0
	for _, f := range fps {
		if n == MaxReported {
			break
		}
		if !reportedName.MatchString(f.Source) || f.Length < secrets.MinWhole || f.Length > MaxReportedLength ||
			len(f.Windows) > maxWindowsText || f.Whole == 0 && f.Windows == "" {
			continue
		}
		set.AddFP(f)
		n++
	}
	if n == 0 {
		return nil
	}
	return set
}
