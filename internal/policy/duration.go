package policy

import (
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"go.yaml.in/yaml/v3"
)

// errDuration is wrapped by every duration parse error.
var errDuration = errors.New("bad duration")

// ParseDuration parses a non-negative duration such as "30s", "10m" or
// "1h30m" (the syntax of time.ParseDuration; a unit is required).
func ParseDuration(s string) (Duration, error) {
	d, err := time.ParseDuration(s)
	if err != nil {
		return 0, fmt.Errorf("%w %q: want a number with a unit, like \"30s\" or \"10m\"", errDuration, s)
	}
	if d < 0 {
		return 0, fmt.Errorf("%w %q: must not be negative", errDuration, s)
	}
	return Duration(d), nil
}

// Std returns d as a time.Duration.
func (d Duration) Std() time.Duration { return time.Duration(d) }

// String formats d like time.Duration ("5m0s").
func (d Duration) String() string { return time.Duration(d).String() }

// MarshalText encodes d as "5m0s".
func (d Duration) MarshalText() ([]byte, error) { return []byte(d.String()), nil }

// UnmarshalText decodes "30s"; an empty string decodes to zero (unset).
func (d *Duration) UnmarshalText(b []byte) error {
	if len(b) == 0 {
		*d = 0
		return nil
	}
	v, err := ParseDuration(string(b))
	if err != nil {
		return err
	}
	*d = v
	return nil
}

// MarshalJSON encodes d as a JSON string such as "5m0s".
func (d Duration) MarshalJSON() ([]byte, error) { return json.Marshal(d.String()) }

// UnmarshalJSON decodes a JSON string such as "30s". Numbers are refused: a
// bare number has no unit and would be read as nanoseconds.
func (d *Duration) UnmarshalJSON(b []byte) error {
	var s string
	if err := json.Unmarshal(b, &s); err != nil {
		return fmt.Errorf("%w %s: want a string with a unit, like \"30s\"", errDuration, b)
	}
	return d.UnmarshalText([]byte(s))
}

// MarshalYAML encodes d as "5m0s".
func (d Duration) MarshalYAML() (any, error) { return d.String(), nil }

// UnmarshalYAML decodes a scalar such as 30s or "10m".
func (d *Duration) UnmarshalYAML(n *yaml.Node) error {
	if n.Kind != yaml.ScalarNode {
		return fmt.Errorf("%w: want a scalar like \"30s\"", errDuration)
	}
	if n.Tag == "!!null" {
		*d = 0
		return nil
	}
	return d.UnmarshalText([]byte(n.Value))
}
