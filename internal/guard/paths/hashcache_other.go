//go:build !linux

package paths

import (
	"errors"

	"github.com/overseer-dev/overseer/internal/guard"
)

// hashFileID is not used on this system: its stat does not give a file's
// identity (guard.StampOf is never ok), so HashCache hashes every time.
func hashFileID(string) (string, guard.Stamp, error) {
	return "", guard.Stamp{}, errors.New("paths: no file identity on this system")
}
