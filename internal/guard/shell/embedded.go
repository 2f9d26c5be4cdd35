package shell

import (
	"bytes"
	_ "embed"
	"encoding/json"
	"fmt"
)

// The shell guard's tables are written in YAML (rules.yaml, effects.yaml)
// and built into the binary in a form that is quicker to load: rules.yaml as
// Go code (rules_gen.go, defaultConfigValue), effects.yaml as JSON
// (effects.json). A hook process that judges a call itself loads them at
// every start, and decoding the YAML was most of its time. The tests check
// that both are the YAML files' content; after editing a YAML file,
// regenerate them:
//
//go:generate go test -run ^TestEmbeddedJSON$ -update-json .

//go:embed effects.json
var effectsJSON []byte

// decodeEmbedded decodes one of the embedded JSON tables strictly.
func decodeEmbedded(b []byte, v any) error {
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		return fmt.Errorf("embedded table: %w", err)
	}
	return nil
}
