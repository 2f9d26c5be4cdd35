package usage

import (
	"fmt"
	"strings"
)

// Price is what one million input and output tokens cost, in US dollars.
type Price struct {
	InputPerMTok  float64 `json:"input_per_mtok"`
	OutputPerMTok float64 `json:"output_per_mtok"`
}

// Prices maps a model name to its price (the same table as the LLM
// plugins' price table, which the kernel may not import). A key ending in
// "*" matches every model with that prefix; the exact name wins, then the
// longest prefix; "*" alone is the price of a model nobody priced.
type Prices map[string]Price

// DefaultPrices are the prices used until a person configures the table
// (`overseer budget prices`): list prices per million tokens as published
// by the providers in 2026, and a fallback for unknown models that errs
// high. They are estimates; configure your own.
var DefaultPrices = Prices{
	"claude-opus-*":   {InputPerMTok: 15, OutputPerMTok: 75},
	"claude-sonnet-*": {InputPerMTok: 3, OutputPerMTok: 15},
	"claude-haiku-*":  {InputPerMTok: 1, OutputPerMTok: 5},
	"gpt-4o-mini*":    {InputPerMTok: 0.15, OutputPerMTok: 0.6},
	"gpt-4o*":         {InputPerMTok: 2.5, OutputPerMTok: 10},
	"gpt-5*":          {InputPerMTok: 1.25, OutputPerMTok: 10},
	"*":               {InputPerMTok: 3, OutputPerMTok: 15},
}

// Validate rejects negative or absurd prices.
func (p Prices) Validate() error {
	for m, pr := range p {
		if pr.InputPerMTok < 0 || pr.OutputPerMTok < 0 || pr.InputPerMTok > 1e6 || pr.OutputPerMTok > 1e6 {
			return fmt.Errorf("price of %q is not a sensible amount", m)
		}
	}
	return nil
}

// Lookup returns the price of model and whether one applies.
func (p Prices) Lookup(model string) (Price, bool) {
	if pr, ok := p[model]; ok {
		return pr, true
	}
	best, found := -1, Price{}
	for k, pr := range p {
		if pre, ok := strings.CutSuffix(k, "*"); ok && strings.HasPrefix(model, pre) && len(pre) > best {
			best, found = len(pre), pr
		}
	}
	return found, best >= 0
}

// Cost is what in and out tokens of model cost (0 when no price applies).
func (p Prices) Cost(model string, in, out int64) float64 {
	pr, ok := p.Lookup(model)
	if !ok {
		return 0
	}
	return (float64(in)*pr.InputPerMTok + float64(out)*pr.OutputPerMTok) / 1e6
}
