// Package standard is Overseer's standard context plugin: it assembles the
// prompt of one step of the supervised agent loop and keeps it within an
// estimated token budget. It registers as "context.standard".
//
// The prompt is one user message made of sections, highest priority first:
// the goal, the constraints, the perception signals and the human decisions
// that the kernel passed on, the corrections for this step, the plan, the
// step budget, memories, and the history of steps. The first five are never
// shortened. When the whole exceeds the budget (measured by EstimateTokens,
// never by characters) the history gives way, in this order: tool outputs of
// older steps are cut to their head and tail; the oldest steps are summarised
// through the loop's Compressor; the oldest steps are reduced to one line
// each; the outputs of recent steps are cut too; recent steps are reduced to
// one line (the latest step always keeps its details); what is left of the
// outputs is cut to 50 tokens; the one-line accounts become a single count;
// memories are left out; the summary is cut.
//
// Tool output is data, not instructions: every output is put in a
// <tool_output step="N"> block, and anything inside that could pass for the
// block's own markers is escaped.
package standard

import (
	"encoding/json"
	"errors"
	"fmt"

	"github.com/overseer-dev/overseer/plugin"
)

func init() {
	plugin.Register(plugin.Info{ID: "context.standard", New: func(raw json.RawMessage) (any, error) {
		cfg, err := ParseConfig(raw)
		if err != nil {
			return nil, err
		}
		return New(cfg), nil
	}})
}

// ErrConfig wraps every configuration error.
var ErrConfig = errors.New("context.standard: bad configuration")

// ErrEmptySummary is what an empty summary from the Compressor counts as: a
// failed compression.
var ErrEmptySummary = errors.New("context.standard: compressor returned an empty summary")

// Defaults of Config.
const (
	DefaultBudgetTokens    = 12000
	DefaultKeepRecent      = 6
	DefaultMaxOutputTokens = 1500
)

// Limits that keep a configuration meaningful.
const (
	minBudgetTokens    = 200
	minMaxOutputTokens = 50
)

// Config configures a Builder. Zero fields take their defaults.
type Config struct {
	// BudgetTokens is the default estimated token budget of a prompt (a
	// ContextInput's own BudgetTokens overrides it).
	BudgetTokens int `json:"budget_tokens,omitempty"`
	// KeepRecent is how many of the most recent steps keep their tool output
	// (up to MaxOutputTokens) when older outputs are cut.
	KeepRecent int `json:"keep_recent,omitempty"`
	// MaxOutputTokens caps each tool output shown.
	MaxOutputTokens int `json:"max_output_tokens,omitempty"`
}

// ParseConfig decodes raw strictly (unknown fields and trailing data are
// errors) and validates it. Empty input is the default configuration.
func ParseConfig(raw json.RawMessage) (Config, error) {
	var c Config
	if err := plugin.DecodeConfig(raw, &c); err != nil {
		return c, fmt.Errorf("%w: %v", ErrConfig, err)
	}
	return c, c.Validate()
}

// Validate reports a configuration that cannot work: negative values, a
// budget below 200 tokens or an output cap below 50 tokens or above the
// budget.
func (c Config) Validate() error {
	switch {
	case c.BudgetTokens < 0, c.KeepRecent < 0, c.MaxOutputTokens < 0:
		return fmt.Errorf("%w: negative value", ErrConfig)
	case c.BudgetTokens != 0 && c.BudgetTokens < minBudgetTokens:
		return fmt.Errorf("%w: budget_tokens %d is below %d", ErrConfig, c.BudgetTokens, minBudgetTokens)
	case c.MaxOutputTokens != 0 && c.MaxOutputTokens < minMaxOutputTokens:
		return fmt.Errorf("%w: max_output_tokens %d is below %d", ErrConfig, c.MaxOutputTokens, minMaxOutputTokens)
	}
	c = c.withDefaults()
	if c.MaxOutputTokens > c.BudgetTokens {
		return fmt.Errorf("%w: max_output_tokens %d exceeds budget_tokens %d", ErrConfig, c.MaxOutputTokens, c.BudgetTokens)
	}
	return nil
}

func (c Config) withDefaults() Config {
	if c.BudgetTokens <= 0 {
		c.BudgetTokens = DefaultBudgetTokens
	}
	if c.KeepRecent <= 0 {
		c.KeepRecent = DefaultKeepRecent
	}
	if c.MaxOutputTokens <= 0 {
		c.MaxOutputTokens = DefaultMaxOutputTokens
	}
	c.BudgetTokens = max(c.BudgetTokens, minBudgetTokens)
	c.MaxOutputTokens = max(c.MaxOutputTokens, minMaxOutputTokens)
	return c
}

// Builder assembles prompts. It holds only its configuration, so it is safe
// for concurrent use.
type Builder struct {
	cfg Config
}

var _ plugin.Context = (*Builder)(nil)

// New builds a Builder; zero or out-of-range fields of cfg take their
// defaults or nearest allowed value (use Config.Validate to reject them).
func New(cfg Config) *Builder {
	return &Builder{cfg: cfg.withDefaults()}
}

// Config returns the effective configuration.
func (b *Builder) Config() Config { return b.cfg }
