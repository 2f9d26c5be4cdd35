// Package price estimates what a model call cost from a configured table of
// prices per million tokens.
package price

import (
	"fmt"
	"strings"

	"github.com/overseer-dev/overseer/plugin"
)

// Price is what one million input and output tokens cost, in US dollars.
type Price struct {
	InputPerMTok  float64 `json:"input_per_mtok"`
	OutputPerMTok float64 `json:"output_per_mtok"`
}

// Table maps a model name to its price. A key ending in "*" matches every
// model name with that prefix; the exact name wins, then the longest prefix.
type Table map[string]Price

// Validate rejects negative prices.
func (t Table) Validate() error {
	for m, p := range t {
		if p.InputPerMTok < 0 || p.OutputPerMTok < 0 {
			return fmt.Errorf("price: negative price for %q", m)
		}
	}
	return nil
}

// Lookup returns the price of model and whether one is configured.
func (t Table) Lookup(model string) (Price, bool) {
	if p, ok := t[model]; ok {
		return p, true
	}
	best, found := -1, Price{}
	for k, p := range t {
		if pre, ok := strings.CutSuffix(k, "*"); ok && strings.HasPrefix(model, pre) && len(pre) > best {
			best, found = len(pre), p
		}
	}
	return found, best >= 0
}

// Apply returns u with CostUSD estimated for model (unchanged when no price
// is configured).
func (t Table) Apply(model string, u plugin.Usage) plugin.Usage {
	p, ok := t.Lookup(model)
	if !ok {
		return u
	}
	u.CostUSD = (float64(u.InputTokens)*p.InputPerMTok + float64(u.OutputTokens)*p.OutputPerMTok) / 1e6
	return u
}
