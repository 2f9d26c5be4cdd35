package shell

// The shell guard's tables are written in YAML (rules.yaml, effects.yaml,
// selfapi.yaml) and built into the binary as Go code, which loads without
// decoding anything: rules_gen.go (defaultConfigValue), effects_gen.go
// (effectsDocValue) and selfapi_gen.go (selfListsValue); rules.yaml also
// as compiled (compiled_gen.go, defaultRulesValue). A hook process
// that judges a call itself loads them at every start, and decoding the
// YAML, then the JSON the effects were kept in, was much of its time. The
// tests check that the generated files are the YAML files' content; after
// editing a YAML file, regenerate them:
//
//go:generate go test -run ^TestEmbeddedJSON$ -update-json .
