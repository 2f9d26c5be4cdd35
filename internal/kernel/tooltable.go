package kernel

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"

	"go.yaml.in/yaml/v3"

	"github.com/overseer-dev/overseer/internal/action"
)

// HooksFile is the hooks' configuration file in the home. Its `tools:`
// section extends the agents' tool table, which the engine applies at every
// entry point that names the agent (hooks, eval, the HTTP API, the MCP
// gateway, explain); the hooks read the rest of the file.
const HooksFile = "hooks.yaml"

// LoadToolTable returns the agents' tool table: the built-in one extended
// by the tools section of home/hooks.yaml. A missing file is the built-in
// table. Only the tools section is read here (the hooks decode the whole
// file strictly and deny every call while it is invalid).
func LoadToolTable(home string) (*action.ToolTable, error) {
	p := filepath.Join(home, HooksFile)
	b, err := os.ReadFile(p)
	if errors.Is(err, fs.ErrNotExist) {
		return action.NewToolTable(nil)
	}
	if err != nil {
		return nil, fmt.Errorf("%s: %w", p, err)
	}
	var c struct {
		Tools map[string]map[string]action.ToolMapping `yaml:"tools"`
	}
	if err := yaml.Unmarshal(b, &c); err != nil {
		return nil, fmt.Errorf("%s: %w", p, err)
	}
	t, err := action.NewToolTable(c.Tools)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", p, err)
	}
	return t, nil
}
