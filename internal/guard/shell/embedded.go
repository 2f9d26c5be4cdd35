package shell

// The shell guard's tables are written in YAML (rules.yaml, effects.yaml,
// selfapi.yaml) and built into the binary in forms that load without
// parsing YAML: rules.yaml as compile makes it (rules.bin) and as a Config
// (config.bin), effects.yaml compiled (effects.bin), each a compact binary
// table decoded on first use (tables.go), and selfapi.yaml as Go code
// (selfapi_gen.go, selfListsValue). A hook process that judges a call
// itself loads them at every start: decoding the YAML was much of its
// time, and the tables held as Go code (which built them at run time) took
// about 0.5 MB of the binary. The tests check that the generated files are
// the YAML files' content; after editing a YAML file, regenerate them:
//
//go:generate go test -run ^TestEmbeddedJSON$ -update-json .
