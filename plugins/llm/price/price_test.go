package price

import (
	"math"
	"testing"

	"github.com/overseer-dev/overseer/plugin"
)

func TestApply(t *testing.T) {
	tab := Table{
		"gpt-4o":            {InputPerMTok: 2.5, OutputPerMTok: 10},
		"gpt-4o*":           {InputPerMTok: 1, OutputPerMTok: 1},
		"gpt-4o-mini*":      {InputPerMTok: 0.15, OutputPerMTok: 0.6},
		"claude-sonnet-4-5": {InputPerMTok: 3, OutputPerMTok: 15},
	}
	u := plugin.Usage{InputTokens: 1_000_000, OutputTokens: 100_000}
	tests := []struct {
		model string
		want  float64
	}{
		{"gpt-4o", 2.5 + 1},
		{"gpt-4o-2024-08-06", 1 + 0.1},
		{"gpt-4o-mini-2024", 0.15 + 0.06},
		{"claude-sonnet-4-5", 3 + 1.5},
		{"llama3", 0},
	}
	for _, tt := range tests {
		t.Run(tt.model, func(t *testing.T) {
			got := tab.Apply(tt.model, u)
			if math.Abs(got.CostUSD-tt.want) > 1e-9 || got.InputTokens != u.InputTokens {
				t.Errorf("Apply(%s) = %+v, want cost %v", tt.model, got, tt.want)
			}
		})
	}
	if err := (Table{"x": {InputPerMTok: -1}}).Validate(); err == nil {
		t.Error("negative price accepted")
	}
}

func TestUsageAdd(t *testing.T) {
	got := plugin.Usage{InputTokens: 1, OutputTokens: 2, CostUSD: 0.5}.Add(plugin.Usage{InputTokens: 10, OutputTokens: 20, CostUSD: 0.25})
	if got != (plugin.Usage{InputTokens: 11, OutputTokens: 22, CostUSD: 0.75}) {
		t.Errorf("Add = %+v", got)
	}
}
