package perception

import (
	"crypto/sha256"
	"encoding/hex"
)

// MaxName is the longest session key or tool name a sample carries as
// it is; BoundName shortens longer ones.
const MaxName = 256

// BoundName returns name when it is at most MaxName bytes long, and
// otherwise its first 64 bytes followed by "#" and its SHA-256 (hex): a
// name as distinct as the original, and short enough that the samples an
// instance publishes to the others sharing its database (at most
// store.MaxPublish bytes a batch) always hold it. Callers that record
// samples and callers that read them bound the names alike.
func BoundName(name string) string {
	if len(name) <= MaxName {
		return name
	}
	h := sha256.Sum256([]byte(name))
	return name[:64] + "#" + hex.EncodeToString(h[:])
}
