package egress

import (
	"bytes"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/overseer-dev/overseer/internal/guard"
	"github.com/overseer-dev/overseer/internal/guard/secrets"
	"github.com/overseer-dev/overseer/internal/lazyre"
	"github.com/overseer-dev/overseer/internal/smallfile"
)

// KeyFile is the name, in Overseer's home, of the key of the egress
// guard's fingerprints. Agents cannot read Overseer's home (any effect on
// it is block), so the fingerprints in the store cannot be tested against
// guesses by them.
const KeyFile = "egress.key"

// loadKey reads the fingerprint key from home, creating it on first use.
// Without a home the key is random for this process only.
func loadKey(home string) ([]byte, error) {
	if home == "" {
		return secrets.NewKey(), nil
	}
	p := filepath.Join(home, KeyFile)
	b, err := smallfile.Read(p)
	if err == nil {
		if len(b) != secrets.KeySize {
			return nil, fmt.Errorf("egress: %s is not a %d-byte key", p, secrets.KeySize)
		}
		return b, nil
	}
	if !errors.Is(err, os.ErrNotExist) {
		return nil, err
	}
	if err := os.MkdirAll(home, 0o700); err != nil {
		return nil, err
	}
	k := secrets.NewKey()
	f, err := os.OpenFile(p, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if errors.Is(err, os.ErrExist) {
		return loadKey(home) // another process made it first
	}
	if err != nil {
		return nil, err
	}
	if _, err := f.Write(k); err != nil {
		f.Close()
		return nil, err
	}
	return k, f.Close()
}

// KeyID returns a name of the fingerprint key in home (creating the key
// if there is none): the instances of a fleet compare it, since a
// fingerprint one of them stored finds its secret only under the same key
// (see kernel: egress key check). It tells nothing of the key.
func KeyID(home string) (string, error) {
	if home == "" {
		return "", errors.New("egress: no home for the fingerprint key")
	}
	k, err := loadKey(home)
	if err != nil {
		return "", err
	}
	m := hmac.New(sha256.New, k)
	m.Write([]byte("overseer egress key id v1"))
	return hex.EncodeToString(m.Sum(nil)[:16]), nil
}

// secretEnvName matches the names of environment variables that hold
// secrets.
var secretEnvName = envNameMatcher{re: lazyre.New(`(?i)(KEY|TOKEN|SECRET|PASSW|PWD$|CREDENTIAL|AUTH|PRIVATE|COOKIE|SESSION|DSN$|DATABASE_URL|_URI$|WEBHOOK)`)}

// envNameMatcher is secretEnvName's expression, matched without the regexp
// engine for ASCII names (every hook process fingerprints its environment,
// and compiling and running the expression was most of that); a name with
// other bytes goes to the expression, whose case folding knows Unicode's.
// FuzzSecretEnvName keeps the two equal.
type envNameMatcher struct{ re *lazyre.Regexp }

// secretEnvParts are the expression's unanchored parts, secretEnvEnds its
// parts anchored at the end.
var (
	secretEnvParts = []string{"KEY", "TOKEN", "SECRET", "PASSW", "CREDENTIAL", "AUTH", "PRIVATE", "COOKIE", "SESSION", "DATABASE_URL", "WEBHOOK"}
	secretEnvEnds  = []string{"PWD", "DSN", "_URI"}
)

// MatchString reports whether name matches the expression.
func (m envNameMatcher) MatchString(name string) bool {
	for i := 0; i < len(name); i++ {
		if name[i] >= 0x80 {
			return m.re.MatchString(name)
		}
	}
	up := strings.ToUpper(name)
	for _, p := range secretEnvParts {
		if strings.Contains(up, p) {
			return true
		}
	}
	for _, e := range secretEnvEnds {
		if strings.HasSuffix(up, e) {
			return true
		}
	}
	return false
}

// envValues returns the values of the secret-looking variables of environ
// (NAME=value): the whole value, and the passwords inside it (a URL's).
func envValues(environ []string) map[string][]string {
	out := map[string][]string{}
	for _, kv := range environ {
		name, val, ok := strings.Cut(kv, "=")
		if !ok || !secretEnvName.MatchString(name) || strings.HasPrefix(name, "OVERSEER_") && name != "OVERSEER_ANSWER_TOKEN" {
			continue
		}
		up := strings.ToUpper(name)
		if up == "PWD" || up == "OLDPWD" || strings.HasSuffix(up, "_PATH") || strings.HasSuffix(up, "_FILE") ||
			strings.Contains(up, "SESSION_BUS") || strings.Contains(up, "SESSION_MANAGER") || strings.HasPrefix(up, "XDG_SESSION") ||
			strings.HasSuffix(up, "_SOCK") || strings.HasSuffix(up, "SESSION_ID") || strings.HasSuffix(up, "_TYPE") {
			continue // paths, sockets, desktop sessions: not secrets
		}
		val = strings.TrimSpace(val)
		if len(val) < secrets.MinWhole || strings.HasPrefix(val, "/") || strings.HasPrefix(val, "~/") ||
			strings.HasPrefix(val, "unix:") || !secrets.ValueLike(val) {
			continue
		}
		vals := []string{val}
		for _, v := range secrets.ValuesOf(val) {
			if v != val {
				vals = append(vals, v)
			}
		}
		out[name] = vals
	}
	return out
}

// homeSecretFiles are the credential files of the home directory whose
// values an agent could have seen, fingerprinted whatever the session did.
var homeSecretFiles = []string{
	".aws/credentials", ".netrc", ".git-credentials", ".config/gh/hosts.yml", ".npmrc", ".pypirc",
	".docker/config.json", ".vault-token", ".pgpass", ".cargo/credentials.toml", ".cargo/credentials",
	".gem/credentials", ".terraform.d/credentials.tfrc.json", ".ssh/id_rsa", ".ssh/id_ed25519", ".ssh/id_ecdsa",
	".config/hub", ".kaggle/kaggle.json", ".kube/config", ".config/glab-cli/config.yml", ".config/rclone/rclone.conf",
	".s3cfg", ".config/containers/auth.json", ".databrickscfg", ".claude/.credentials.json", ".codex/auth.json",
	".gemini/oauth_creds.json",
}

// projectSecretFiles are the secret files of a working directory.
var projectSecretFiles = []string{".env", ".env.local", ".env.production", ".env.development", "secrets.json", ".dev.vars"}

// maxSecretFile is the largest secret file whose values are fingerprinted.
const maxSecretFile = 256 << 10

// fileValues caches the fingerprints of secret files by path and the
// file's stamp (guard.Stamp: inode, size, modification and change times),
// so that a process judging many actions reads each file once. A file
// changed within guard.RacyWindow of its read is not remembered, and read
// again next time: a rewrite in the same tick of the file system's clock
// could leave its stamp as it was.
type fileValues struct {
	fp *secrets.Fingerprints // the key's empty set, to compute with
	mu sync.Mutex
	c  map[string]fileEntry
}

type fileEntry struct {
	stamp guard.Stamp
	vals  []secrets.ValueFP
}

// of returns the fingerprints of the values of the file at p (nil when it
// cannot be read or is not a regular file).
func (fv *fileValues) of(p, source string) []secrets.ValueFP {
	vals, _ := fv.read(p, source)
	return vals
}

// read is of, and reports whether the values may be remembered by the
// file's stamp: the file read is the one stat saw, and it had settled.
func (fv *fileValues) read(p, source string) ([]secrets.ValueFP, bool) {
	start := time.Now()
	st, err := os.Stat(p)
	if err != nil || !st.Mode().IsRegular() || st.Size() > maxSecretFile {
		return nil, false
	}
	stamp, stamped := guard.StampOf(st)
	if stamped {
		fv.mu.Lock()
		e, ok := fv.c[p]
		fv.mu.Unlock()
		if ok && e.stamp == stamp {
			return e.vals, true
		}
	}
	// The stat above may be of another file than the one opened (a project's
	// .env is the agent's to replace): the open does not block, and reads
	// only a regular file (a named pipe would hold the judgement).
	f, err := guard.OpenRegular(p)
	if err != nil {
		return nil, false
	}
	read, _ := f.Stat()
	b, err := io.ReadAll(io.LimitReader(f, maxSecretFile))
	f.Close()
	if err != nil || bytes.IndexByte(b, 0) >= 0 {
		return nil, false // unreadable, or binary (a keystore)
	}
	var vals []secrets.ValueFP
	for i, v := range secrets.ValuesOf(string(b)) {
		if i == maxValuesRead {
			break
		}
		if fp, ok := fv.fp.Fingerprint(source, v); ok {
			vals = append(vals, fp)
		}
	}
	got, ok := guard.StampOf(read)
	if !stamped || !ok || got != stamp || !stamp.Settled(start) {
		return vals, false
	}
	fv.mu.Lock()
	if fv.c == nil || len(fv.c) >= maxFileEntries {
		fv.c = map[string]fileEntry{}
	}
	fv.c[p] = fileEntry{stamp: stamp, vals: vals}
	fv.mu.Unlock()
	return vals, true
}

// maxFileEntries bounds the cache of secret files; when it is full it
// starts over.
const maxFileEntries = 1024
