// Package router is an LLM plugin that sends each call to a model chosen by
// its purpose: typically the primary model to decide and a cheaper one to
// reflect and compress. A configuration with only a default route is a
// single-model setup. It registers as "llm.router"; its targets are built
// through the plugin registry, so the binary must import them too.
package router

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sort"
	"sync/atomic"

	"github.com/overseer-dev/overseer/plugin"
)

func init() {
	plugin.Register(plugin.Info{ID: "llm.router", New: func(raw json.RawMessage) (any, error) {
		cfg, err := ParseConfig(raw)
		if err != nil {
			return nil, err
		}
		return Build(cfg)
	}})
}

// Sentinel errors.
var (
	// ErrConfig wraps every configuration error.
	ErrConfig = errors.New("router: bad configuration")
	// ErrNoRoute: a purpose with no route and no default.
	ErrNoRoute = errors.New("router: no model for purpose")
)

// Target names an LLM plugin and its configuration.
type Target struct {
	Plugin string          `json:"plugin"` // e.g. "llm.openai"
	Config json.RawMessage `json:"config"`
}

// Config maps purposes to targets. Default serves every purpose not named in
// Routes.
type Config struct {
	Default *Target           `json:"default,omitempty"`
	Routes  map[string]Target `json:"routes,omitempty"`
	// Cheaper is the model every purpose switches to when a budget cap
	// asks to downgrade. Unset: the route for compress, else for reflect
	// (the cheaper model by convention).
	Cheaper *Target `json:"cheaper,omitempty"`
}

// knownPurposes are the purposes a route may name.
var knownPurposes = map[string]bool{
	plugin.PurposeDecide: true, plugin.PurposeReflect: true,
	plugin.PurposePlan: true, plugin.PurposeCompress: true,
}

// ParseConfig decodes raw strictly.
func ParseConfig(raw json.RawMessage) (Config, error) {
	var c Config
	if err := plugin.DecodeConfig(raw, &c); err != nil {
		return c, fmt.Errorf("%w: %v", ErrConfig, err)
	}
	return c, nil
}

// Router sends each request to the model for its purpose.
type Router struct {
	def     plugin.LLM
	routes  map[string]plugin.LLM
	cheaper plugin.LLM
	// down is set once Downgrade switched every purpose to cheaper.
	down atomic.Bool
}

var (
	_ plugin.LLM         = (*Router)(nil)
	_ plugin.LLMStreamer = (*Router)(nil)
	_ plugin.Downgrader  = (*Router)(nil)
)

// SetCheaper sets the model Downgrade switches to.
func (r *Router) SetCheaper(m plugin.LLM) { r.cheaper = m }

// cheaperModel is the configured cheaper model, else the compress or the
// reflect route's model when it is not the default.
func (r *Router) cheaperModel() plugin.LLM {
	if r.cheaper != nil {
		return r.cheaper
	}
	for _, p := range []string{plugin.PurposeCompress, plugin.PurposeReflect} {
		if m, ok := r.routes[p]; ok && m != r.def {
			return m
		}
	}
	return nil
}

// Downgrade implements plugin.Downgrader: every later call goes to the
// cheaper model. Without one it reports false and changes nothing.
func (r *Router) Downgrade() bool {
	if r.cheaperModel() == nil {
		return false
	}
	r.down.Store(true)
	return true
}

// New builds a Router from ready models. def may be nil when every purpose
// that will be asked for has a route.
func New(def plugin.LLM, routes map[string]plugin.LLM) (*Router, error) {
	if def == nil && len(routes) == 0 {
		return nil, fmt.Errorf("%w: no default and no routes", ErrConfig)
	}
	r := &Router{def: def, routes: map[string]plugin.LLM{}}
	for p, m := range routes {
		if !knownPurposes[p] {
			return nil, fmt.Errorf("%w: unknown purpose %q", ErrConfig, p)
		}
		if m == nil {
			return nil, fmt.Errorf("%w: nil model for %q", ErrConfig, p)
		}
		r.routes[p] = m
	}
	return r, nil
}

// Build constructs each target through the plugin registry.
func Build(cfg Config) (*Router, error) {
	mk := func(name string, t Target) (plugin.LLM, error) {
		if t.Plugin == "" {
			return nil, fmt.Errorf("%w: %s: plugin is required", ErrConfig, name)
		}
		inst, err := plugin.New(t.Plugin, t.Config)
		if err != nil {
			return nil, fmt.Errorf("%w: %s: %w", ErrConfig, name, err)
		}
		m, ok := inst.(plugin.LLM)
		if !ok {
			return nil, fmt.Errorf("%w: %s: %s is not an LLM plugin", ErrConfig, name, t.Plugin)
		}
		return m, nil
	}
	var def plugin.LLM
	if cfg.Default != nil {
		var err error
		if def, err = mk("default", *cfg.Default); err != nil {
			return nil, err
		}
	}
	names := make([]string, 0, len(cfg.Routes))
	for p := range cfg.Routes {
		names = append(names, p)
	}
	sort.Strings(names)
	routes := map[string]plugin.LLM{}
	for _, p := range names {
		if !knownPurposes[p] {
			return nil, fmt.Errorf("%w: unknown purpose %q", ErrConfig, p)
		}
		m, err := mk(p, cfg.Routes[p])
		if err != nil {
			return nil, err
		}
		routes[p] = m
	}
	r, err := New(def, routes)
	if err != nil {
		return nil, err
	}
	if cfg.Cheaper != nil {
		m, err := mk("cheaper", *cfg.Cheaper)
		if err != nil {
			return nil, err
		}
		r.SetCheaper(m)
	}
	return r, nil
}

// For returns the model serving purpose.
func (r *Router) For(purpose string) (plugin.LLM, error) {
	if r.down.Load() {
		if m := r.cheaperModel(); m != nil {
			return m, nil
		}
	}
	if m, ok := r.routes[purpose]; ok {
		return m, nil
	}
	if r.def != nil {
		return r.def, nil
	}
	return nil, fmt.Errorf("%w %q", ErrNoRoute, purpose)
}

// Complete sends req to the model for its purpose.
func (r *Router) Complete(ctx context.Context, req plugin.Request) (plugin.Response, error) {
	m, err := r.For(req.Purpose)
	if err != nil {
		return plugin.Response{}, err
	}
	return m.Complete(ctx, req)
}

// Stream streams from the model for req's purpose; a model without the
// streaming ability answers whole, delivered as one piece.
func (r *Router) Stream(ctx context.Context, req plugin.Request, onDelta func(plugin.Delta)) (plugin.Response, error) {
	m, err := r.For(req.Purpose)
	if err != nil {
		return plugin.Response{}, err
	}
	if s, ok := m.(plugin.LLMStreamer); ok {
		return s.Stream(ctx, req, onDelta)
	}
	resp, err := m.Complete(ctx, req)
	if err == nil && onDelta != nil && (resp.Text != "" || resp.Thinking != "") {
		onDelta(plugin.Delta{Text: resp.Text, Thinking: resp.Thinking})
	}
	return resp, err
}
