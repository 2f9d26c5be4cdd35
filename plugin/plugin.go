// Package plugin is the registry of Overseer's replaceable parts and the
// small interfaces they implement. A plugin registers a constructor from its
// package's init function; the kernel builds instances per engine through
// New, so no plugin state is global.
//
// Plugins execute, infer, remember or assemble; they never make a security
// decision. The kernel never imports a plugin package: the binary's main
// imports the standard set for their registrations.
package plugin

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sort"
	"strings"
	"sync"
)

// Info describes a plugin: its ID (namespace.name, e.g. "tool.builtin") and
// its constructor.
type Info struct {
	ID  string
	New func(cfg json.RawMessage) (any, error)
}

// Namespace is the part of the ID before the first dot ("tool", "llm", ...).
func (i Info) Namespace() string {
	ns, _, _ := strings.Cut(i.ID, ".")
	return ns
}

var (
	mu       sync.RWMutex
	registry = map[string]Info{}
)

// Register adds a plugin. It panics on a missing ID or constructor and on a
// duplicate ID, which are programming errors found at start-up.
func Register(info Info) {
	if info.ID == "" || !strings.Contains(info.ID, ".") {
		panic(fmt.Sprintf("plugin: invalid ID %q (want namespace.name)", info.ID))
	}
	if info.New == nil {
		panic(fmt.Sprintf("plugin: %s has no constructor", info.ID))
	}
	mu.Lock()
	defer mu.Unlock()
	if _, dup := registry[info.ID]; dup {
		panic(fmt.Sprintf("plugin: %s registered twice", info.ID))
	}
	registry[info.ID] = info
}

// Get returns the registration of id.
func Get(id string) (Info, error) {
	mu.RLock()
	defer mu.RUnlock()
	info, ok := registry[id]
	if !ok {
		return Info{}, fmt.Errorf("plugin %q is not registered (registered: %s)", id, strings.Join(idsLocked(""), ", "))
	}
	return info, nil
}

// New builds a fresh instance of plugin id with its configuration.
func New(id string, cfg json.RawMessage) (any, error) {
	info, err := Get(id)
	if err != nil {
		return nil, err
	}
	inst, err := info.New(cfg)
	if err != nil {
		return nil, fmt.Errorf("plugin %s: %w", id, err)
	}
	return inst, nil
}

// IDs lists the registered IDs in a namespace ("" for all), sorted.
func IDs(namespace string) []string {
	mu.RLock()
	defer mu.RUnlock()
	return idsLocked(namespace)
}

func idsLocked(namespace string) []string {
	var ids []string
	for id, info := range registry {
		if namespace == "" || info.Namespace() == namespace {
			ids = append(ids, id)
		}
	}
	sort.Strings(ids)
	return ids
}

// Call is one tool call handed to a Tool plugin after the firewall let it
// through: the tool's name, its (possibly rewritten) arguments and the
// working directory.
type Call struct {
	Tool string
	Args map[string]any
	Cwd  string
}

// Result is what a tool returned.
type Result struct {
	Output  string         `json:"output"`
	IsError bool           `json:"is_error,omitempty"`
	Meta    map[string]any `json:"meta,omitempty"`
}

// ToolSpec describes a tool a Tool plugin offers.
type ToolSpec struct {
	Name        string          `json:"name"`
	Description string          `json:"description,omitempty"`
	InputSchema json.RawMessage `json:"input_schema,omitempty"`
	Kind        string          `json:"kind,omitempty"` // canonical kind, when known
}

// Tool executes calls. It never decides whether a call may run.
type Tool interface {
	Tools(ctx context.Context) ([]ToolSpec, error)
	Execute(ctx context.Context, c Call) (Result, error)
}

// DecodeConfig decodes a plugin's JSON configuration into v strictly: an
// unknown field, a wrong type or trailing data is an error. Empty input
// (or JSON null) leaves v as it is, so a plugin's zero configuration is its
// default.
func DecodeConfig(raw json.RawMessage, v any) error {
	trimmed := bytes.TrimSpace(raw)
	if len(trimmed) == 0 || bytes.Equal(trimmed, []byte("null")) {
		return nil
	}
	dec := json.NewDecoder(bytes.NewReader(trimmed))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		return err
	}
	if dec.More() {
		return errors.New("trailing data after the configuration")
	}
	return nil
}
