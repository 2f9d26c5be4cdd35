package shell

import (
	"bytes"
	_ "embed"
	"encoding/json"
	"fmt"
)

// The shell guard's tables are written in YAML (rules.yaml, effects.yaml)
// and embedded in their JSON form (rules.json, effects.json), which decodes
// several times faster: a hook process that judges a call itself decodes
// them at every start. The tests check that each JSON file is the YAML file
// decoded and encoded again; after editing a YAML file, regenerate them:
//
//go:generate go test -run ^TestEmbeddedJSON$ -update-json .

//go:embed rules.json
var defaultRulesJSON []byte

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
