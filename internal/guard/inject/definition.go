package inject

import (
	"encoding/json"
	"sort"
	"strings"
)

// DefinitionText joins the texts of a tool definition that reach the
// model: its title and description, and every text inside its schemas
// (descriptions, titles, enum values, defaults, examples, property
// names), one a line, in a stable order. A schema is any JSON value
// (a map, a struct, raw JSON); one that cannot be encoded contributes
// nothing.
func DefinitionText(title, description string, schemas ...any) string {
	var lines []string
	add := func(s string) {
		if s = strings.TrimSpace(s); s != "" {
			lines = append(lines, s)
		}
	}
	add(title)
	add(description)
	for _, s := range schemas {
		if s == nil {
			continue
		}
		var v any
		switch s := s.(type) {
		case json.RawMessage:
			_ = json.Unmarshal(s, &v)
		case []byte:
			_ = json.Unmarshal(s, &v)
		default:
			b, err := json.Marshal(s)
			if err != nil {
				continue
			}
			_ = json.Unmarshal(b, &v)
		}
		walkSchema(v, "", add, 0)
	}
	return strings.Join(lines, "\n")
}

// skipKeys hold schema machinery, not prose.
var skipKeys = map[string]bool{"type": true, "$schema": true, "$ref": true, "$id": true, "format": true,
	"pattern": true, "required": true, "additionalProperties": false}

func walkSchema(v any, key string, add func(string), depth int) {
	if depth > 64 {
		return
	}
	switch v := v.(type) {
	case string:
		if !skipKeys[key] {
			add(v)
		}
	case []any:
		if key == "required" {
			return
		}
		for _, e := range v {
			walkSchema(e, key, add, depth+1)
		}
	case map[string]any:
		keys := make([]string, 0, len(v))
		for k := range v {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		for _, k := range keys {
			if key == "properties" || key == "patternProperties" || key == "$defs" || key == "definitions" {
				add(k) // a property's name is read by the model too
			}
			walkSchema(v[k], k, add, depth+1)
		}
	}
}
