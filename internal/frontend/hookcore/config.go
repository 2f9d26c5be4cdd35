package hookcore

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"path/filepath"
	"time"

	"github.com/overseer-dev/overseer/internal/smallfile"
	"go.yaml.in/yaml/v3"
)

// ConfigFile is the name of the hooks' configuration file in Overseer's
// home directory (where agents' actions cannot write); the kernel names the
// same file (kernel.HooksFile, checked by a test of package hooks).
const ConfigFile = "hooks.yaml"

// ConfirmMode says who answers a `confirm` verdict.
type ConfirmMode string

const (
	// ConfirmHold holds the call until a person answers through Overseer
	// (CLI, web, phone) or the wait ends (then: deny). The default, and the
	// only mode for agents whose hooks cannot ask (Codex, Gemini CLI).
	ConfirmHold ConfirmMode = "hold"
	// ConfirmAsk hands a `confirm` verdict to the agent's own permission
	// prompt (Claude Code's "ask"). `approve` verdicts are still held.
	ConfirmAsk ConfirmMode = "ask"
)

// ErrConfig means the hooks' configuration is not valid; the hook then
// denies every call until it is fixed.
var ErrConfig = errors.New("invalid hooks configuration")

// DefaultMaxWait is how long a call is held for a person's answer by
// default: the human gate's default timeout, so that the gate's own default
// answer (deny unless configured) is what the agent hears.
const DefaultMaxWait = 10 * time.Minute

// Config is the hooks' configuration ($OVERSEER_HOME/hooks.yaml). Zero
// values take the defaults.
type Config struct {
	// Confirm is "hold" (default) or "ask".
	Confirm ConfirmMode `yaml:"confirm"`
	// MaxWait is how long a call is held for a person (default 10m).
	MaxWait Duration `yaml:"max_wait"`
	// Tools extends the tool table: agent ("claude-code", "codex",
	// "gemini" or "*") → tool name as the agent spells it → mapping.
	Tools map[string]map[string]Mapping `yaml:"tools"`
}

// Duration is a time.Duration written as "90s" or "10m".
type Duration time.Duration

// UnmarshalYAML decodes a duration string.
func (d *Duration) UnmarshalYAML(n *yaml.Node) error {
	var s string
	if err := n.Decode(&s); err != nil {
		return err
	}
	v, err := time.ParseDuration(s)
	if err != nil {
		return fmt.Errorf("line %d: %w", n.Line, err)
	}
	*d = Duration(v)
	return nil
}

// Validate checks the configuration.
func (c *Config) Validate() error {
	switch c.Confirm {
	case "", ConfirmHold, ConfirmAsk:
	default:
		return fmt.Errorf("%w: confirm: %q (want hold or ask)", ErrConfig, c.Confirm)
	}
	if c.MaxWait < 0 {
		return fmt.Errorf("%w: max_wait: negative", ErrConfig)
	}
	if _, err := NewTable(c.Tools); err != nil {
		return fmt.Errorf("%w: %v", ErrConfig, err)
	}
	return nil
}

// ParseConfig decodes a configuration strictly: unknown fields are errors.
func ParseConfig(data []byte) (Config, error) {
	var c Config
	dec := yaml.NewDecoder(bytes.NewReader(data))
	dec.KnownFields(true)
	if err := dec.Decode(&c); err != nil && !errors.Is(err, io.EOF) {
		return Config{}, fmt.Errorf("%w: %v", ErrConfig, err)
	}
	if err := c.Validate(); err != nil {
		return Config{}, err
	}
	return c, nil
}

// LoadConfig reads home/hooks.yaml; a missing file is the default
// configuration.
func LoadConfig(home string) (Config, error) {
	p := filepath.Join(home, ConfigFile)
	b, err := smallfile.Read(p)
	if errors.Is(err, fs.ErrNotExist) {
		return Config{}, nil
	}
	if err != nil {
		return Config{}, fmt.Errorf("%w: %v", ErrConfig, err)
	}
	c, err := ParseConfig(b)
	if err != nil {
		return Config{}, fmt.Errorf("%s: %w", p, err)
	}
	return c, nil
}
