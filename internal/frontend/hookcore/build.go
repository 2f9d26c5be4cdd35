package hookcore

import (
	"runtime/debug"
	"strings"
)

// BuildFlag makes the lean hook print its BuildID and exit.
const BuildFlag = "--build-id"

// BuildID names the source a binary was built from: the module's version
// and, when the build recorded them, the commit and whether the tree had
// changes. `overseer init` installs the lean hook only when its BuildID is
// the full binary's: a lean hook left from another version could speak
// another API.
func BuildID() string {
	bi, ok := debug.ReadBuildInfo()
	if !ok {
		return "unknown"
	}
	parts := []string{bi.Main.Path, bi.Main.Version}
	for _, s := range bi.Settings {
		switch s.Key {
		case "vcs.revision", "vcs.modified", "vcs.time":
			parts = append(parts, s.Key+"="+s.Value)
		}
	}
	return strings.Join(parts, " ")
}
