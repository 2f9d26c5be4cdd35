package shell

import (
	"bytes"
	_ "embed"
	"errors"
	"fmt"
	"io"
	"path"
	"slices"
	"strings"
	"sync"

	"go.yaml.in/yaml/v3"

	"github.com/overseer-dev/overseer/internal/action"
	"github.com/overseer-dev/overseer/internal/lazyre"
)

//go:embed rules.yaml
var defaultRulesYAML []byte

// ErrConfig is wrapped by every error about an invalid Config.
var ErrConfig = errors.New("invalid shell guard config")

// Config holds the shell guard's lists. The embedded defaults are a Config;
// a policy's Config is merged onto them: its lists are added to the
// defaults, its patterns are consulted before the default patterns, and a
// non-zero PreviewLimit replaces the default.
type Config struct {
	// PreviewLimit is the number of items a deletion preview lists before
	// it counts the rest (default 20).
	PreviewLimit int `yaml:"preview_limit,omitempty" json:"preview_limit,omitempty"`
	// ReadOnly are programs, optionally followed by subcommands or flags
	// ("git status", "node --version"), that only read: auto.
	ReadOnly []string `yaml:"read_only,omitempty" json:"read_only,omitempty"`
	// Notify are ordinary development commands, written like ReadOnly:
	// they run with a notification.
	Notify []string `yaml:"notify,omitempty" json:"notify,omitempty"`
	// Patterns classify destructive or sensitive uses of well-known tools;
	// the first matching pattern decides a segment's class.
	Patterns []Pattern `yaml:"patterns,omitempty" json:"patterns,omitempty"`
	// SourceDirs are directory names whose removal needs an approval.
	SourceDirs []string `yaml:"source_dirs,omitempty" json:"source_dirs,omitempty"`
	// SecretPaths are paths of secrets ("~/.ssh/", "/etc/shadow", "*.pem").
	SecretPaths []string `yaml:"secret_paths,omitempty" json:"secret_paths,omitempty"`
	// SecretExceptions are base-name patterns that are never secrets.
	SecretExceptions []string `yaml:"secret_exceptions,omitempty" json:"secret_exceptions,omitempty"`
	// ScratchDirs are directories where writing and deleting is routine.
	ScratchDirs []string `yaml:"scratch_dirs,omitempty" json:"scratch_dirs,omitempty"`
	// BlockDevices are path.Match patterns of raw disk devices.
	BlockDevices []string `yaml:"block_devices,omitempty" json:"block_devices,omitempty"`
	// HarmlessDevices are path.Match patterns of devices that are safe to
	// write to (/dev/null).
	HarmlessDevices []string `yaml:"harmless_devices,omitempty" json:"harmless_devices,omitempty"`
	// Shells are programs that interpret shell code.
	Shells []string `yaml:"shells,omitempty" json:"shells,omitempty"`
	// Interpreters maps an interpreter to the options that take inline code.
	Interpreters map[string][]string `yaml:"interpreters,omitempty" json:"interpreters,omitempty"`
	// Downloaders are programs whose output is downloaded content.
	Downloaders []string `yaml:"downloaders,omitempty" json:"downloaders,omitempty"`
	// Decoders are programs that decode or unpack their input.
	Decoders []string `yaml:"decoders,omitempty" json:"decoders,omitempty"`
	// NetSenders are programs that send data over the network.
	NetSenders []string `yaml:"net_senders,omitempty" json:"net_senders,omitempty"`
	// GlobalOptions maps a program to its options that take a value before
	// the subcommand ("git -C dir status").
	GlobalOptions map[string][]string `yaml:"global_options,omitempty" json:"global_options,omitempty"`
	// Wrappers are programs that run another program given as arguments.
	Wrappers []Wrapper `yaml:"wrappers,omitempty" json:"wrappers,omitempty"`
	// Environment maps environment variables to what they make programs
	// run or read (see envvars.go); a policy's entry replaces the default.
	Environment map[string]EnvVar `yaml:"environment,omitempty" json:"environment,omitempty"`
}

// EnvVar describes an environment variable that changes what a program
// runs, reads or loads.
type EnvVar struct {
	// Kind says what the value is: "command" (a command line a program
	// runs), "program" (a program a program runs), "options" (options of
	// Programs), "config" (a configuration file or directory), "loadpath"
	// (directories code is loaded from), "loader" (code every program
	// loads), "script" (a shell script a shell runs first) or "git_config"
	// (git -c through the environment).
	Kind string `yaml:"kind" json:"kind"`
	// Programs are the programs that read the variable (for "options", the
	// programs the options are given to).
	Programs []string `yaml:"programs,omitempty" json:"programs,omitempty"`
	// Prefixes are marks before a command that are not part of it
	// (LESSOPEN's "|").
	Prefixes []string `yaml:"prefixes,omitempty" json:"prefixes,omitempty"`
	// Code are options that load code ("options": NODE_OPTIONS=--require);
	// the variable then needs a person whatever program runs.
	Code []string `yaml:"code,omitempty" json:"code,omitempty"`
	// Level is the level of a "loader" variable, and the least level of a
	// variable whose value is not known (default confirm).
	Level action.Level `yaml:"level,omitempty" json:"level,omitempty"`
}

// Pattern classifies a use of a tool.
type Pattern struct {
	// Command is the program and its subcommands, space-separated; every
	// component after the program may be a path.Match glob ("aws * delete-*").
	Command string `yaml:"command" json:"command"`
	// Flags match when any of them is present; a one-letter flag also
	// matches inside a group ("-f" matches "-fd"), and "--x" matches "--x=v".
	Flags []string `yaml:"flags,omitempty" json:"flags,omitempty"`
	// Args match when any operand after the subcommands matches one of
	// these globs, case-insensitively. With both Flags and Args, both must
	// match.
	Args []string `yaml:"args,omitempty" json:"args,omitempty"`
	// Level is the level a match asks for.
	Level action.Level `yaml:"level" json:"level"`
	// Check names the finding ("git-push" becomes "shell.git-push").
	Check string `yaml:"check" json:"check"`
	// Message says what the command does, for a person.
	Message string `yaml:"message" json:"message"`
}

// Wrapper describes a program that runs another program given as its
// arguments ("sudo -u bob make").
type Wrapper struct {
	// Name is the program, or the program and a subcommand ("uv run").
	Name string `yaml:"name" json:"name"`
	// ValueOptions take a value ("-u bob", "-ubob", "--user=bob").
	ValueOptions []string `yaml:"value_options,omitempty" json:"value_options,omitempty"`
	// StopFlags mean the wrapper does not run a program ("command -v").
	StopFlags []string `yaml:"stop_flags,omitempty" json:"stop_flags,omitempty"`
	// ChdirOptions change the working directory of the wrapped program.
	ChdirOptions []string `yaml:"chdir_options,omitempty" json:"chdir_options,omitempty"`
	// Operands is the number of operands before the wrapped program
	// ("timeout 5 cmd" has one).
	Operands int `yaml:"operands,omitempty" json:"operands,omitempty"`
	// Assignments are allowed before the program ("env A=1 cmd").
	Assignments bool `yaml:"assignments,omitempty" json:"assignments,omitempty"`
	// Privileged wrappers run the program as another user, usually root.
	Privileged bool `yaml:"privileged,omitempty" json:"privileged,omitempty"`
	// PairOptions take two values ("bwrap --bind SRC DEST").
	PairOptions []string `yaml:"pair_options,omitempty" json:"pair_options,omitempty"`
	// CommandOptions take a command line the wrapper runs with a shell
	// ("nodemon --exec 'cmd'").
	CommandOptions []string `yaml:"command_options,omitempty" json:"command_options,omitempty"`
	// Script means the wrapped words are joined and run by a shell, as
	// watch does ("tmux new -d 'cmd'").
	Script bool `yaml:"script,omitempty" json:"script,omitempty"`
}

// ParseConfig decodes a Config from YAML or JSON (JSON is YAML). Unknown
// fields are errors, and the result is validated.
func ParseConfig(data []byte) (Config, error) {
	var c Config
	if len(bytes.TrimSpace(data)) == 0 {
		return c, nil
	}
	dec := yaml.NewDecoder(bytes.NewReader(data))
	dec.KnownFields(true)
	if err := dec.Decode(&c); err != nil {
		return Config{}, fmt.Errorf("%w: %v", ErrConfig, err)
	}
	var extra yaml.Node
	if err := dec.Decode(&extra); err != io.EOF {
		if err == nil {
			err = errors.New("more than one document")
		}
		return Config{}, fmt.Errorf("%w: %v", ErrConfig, err)
	}
	if err := c.Validate(); err != nil {
		return Config{}, err
	}
	return c, nil
}

// DefaultConfig returns the embedded default lists (a fresh copy): rules.yaml
// as a table (config.bin, see tables.go), which the tests check is valid and
// up to date.
func DefaultConfig() Config { return decodeConfig(configBin) }

// defaultConfig is the parsed embedded defaults, shared read-only: merge
// copies what it changes.
var defaultConfig = sync.OnceValue(DefaultConfig)

// Validate reports the first problem of the config, wrapped in ErrConfig.
func (c Config) Validate() error {
	_, err := compile(c)
	return err
}

// merge returns base with ext added to it.
func merge(base, ext Config) Config {
	out := base
	if ext.PreviewLimit != 0 {
		out.PreviewLimit = ext.PreviewLimit
	}
	cat := func(a, b []string) []string { return slices.Concat(a, b) }
	out.ReadOnly = cat(base.ReadOnly, ext.ReadOnly)
	out.Notify = cat(base.Notify, ext.Notify)
	out.Patterns = slices.Concat(ext.Patterns, base.Patterns)
	out.SourceDirs = cat(base.SourceDirs, ext.SourceDirs)
	out.SecretPaths = cat(base.SecretPaths, ext.SecretPaths)
	out.SecretExceptions = cat(base.SecretExceptions, ext.SecretExceptions)
	out.ScratchDirs = cat(base.ScratchDirs, ext.ScratchDirs)
	out.BlockDevices = cat(base.BlockDevices, ext.BlockDevices)
	out.HarmlessDevices = cat(base.HarmlessDevices, ext.HarmlessDevices)
	out.Shells = cat(base.Shells, ext.Shells)
	out.Downloaders = cat(base.Downloaders, ext.Downloaders)
	out.Decoders = cat(base.Decoders, ext.Decoders)
	out.NetSenders = cat(base.NetSenders, ext.NetSenders)
	out.Wrappers = slices.Concat(base.Wrappers, ext.Wrappers)
	mergeMap := func(a, b map[string][]string) map[string][]string {
		m := make(map[string][]string, len(a)+len(b))
		for k, v := range a {
			m[k] = v
		}
		for k, v := range b {
			m[k] = cat(m[k], v)
		}
		return m
	}
	out.Interpreters = mergeMap(base.Interpreters, ext.Interpreters)
	out.GlobalOptions = mergeMap(base.GlobalOptions, ext.GlobalOptions)
	if len(base.Environment)+len(ext.Environment) > 0 {
		out.Environment = make(map[string]EnvVar, len(base.Environment)+len(ext.Environment))
		for k, v := range base.Environment {
			out.Environment[k] = v
		}
		for k, v := range ext.Environment {
			out.Environment[k] = v
		}
	}
	return out
}

// set is a set of strings.
type set map[string]struct{}

func (s set) has(k string) bool { _, ok := s[k]; return ok }

func makeSet(items []string, lower bool) set {
	s := make(set, len(items))
	for _, it := range items {
		if lower {
			it = strings.ToLower(it)
		}
		s[it] = struct{}{}
	}
	return s
}

// comp is a compiled command component, operand or flag: a literal or a
// path.Match glob.
type comp struct {
	s    string
	glob bool
}

func newComp(s string) comp { return comp{s: s, glob: strings.ContainsAny(s, "*?[")} }

func newComps(ss []string, lower bool) []comp {
	out := make([]comp, len(ss))
	for i, s := range ss {
		if lower {
			s = strings.ToLower(s)
		}
		out[i] = newComp(s)
	}
	return out
}

// match matches a component or operand, case-insensitively.
func (c comp) match(v string) bool {
	if !c.glob {
		return strings.EqualFold(c.s, v)
	}
	ok, _ := path.Match(c.s, strings.ToLower(v))
	return ok
}

// listEntry is a compiled read_only or notify entry.
type listEntry struct {
	subs  []comp // operands after the program, in order
	flags []comp // flags that must be present
	level action.Level
	check string
}

// listIndex holds the entries of one program, indexed by their first
// operand.
type listIndex struct {
	entries []listEntry
	byFirst map[string][]int // lower-cased literal first operand → entries; nil when none
	other   []int            // entries without operands or with a glob first operand
}

// cpattern is a compiled Pattern.
type cpattern struct {
	subs  []comp
	flags []comp
	args  []comp
	level action.Level
	check string
	msg   string
}

// cwrapper is a compiled Wrapper.
type cwrapper struct {
	name       string
	sub        string // second word of a two-word wrapper ("run" of "uv run")
	valueOpts  set
	shortValue string // letters of one-letter value options
	stop       set
	chdir      set
	operands   int
	assigns    bool
	privileged bool
	pairOpts   set
	cmdOpts    set
	script     bool
}

// secretRule is one compiled secret path pattern.
type secretRule struct {
	kind byte   // 'd' directory in a home, 's' suffix in a home, 'a' absolute, 'A' absolute dir, 'b' base-name glob
	text string // for 'd' "/.ssh", for 's' "/.docker/config.json", for 'a'/'A' the path, for 'b' the glob
}

// rules is the compiled, immutable form of a Config.
type rules struct {
	previewLimit int
	lists        map[string]*listIndex
	patterns     map[string][]cpattern
	sourceDirs   set
	secrets      []secretRule
	secretExc    []string
	scratch      []string
	blockDev     []string
	harmlessDev  []string
	shells       set
	interp       map[string][]string
	downloaders  set
	decoders     set
	netSenders   set
	globalOpts   map[string]set
	wrappers     map[string][]*cwrapper
	envVars      map[string]*cenv // by name; npm_config_ names in lower case
}

var checkName = lazyre.New(`^[a-z0-9][a-z0-9-]*$`)

func validGlob(p string) error {
	_, err := path.Match(p, "")
	return err
}

// compile validates c and builds its immutable form.
func compile(c Config) (*rules, error) {
	fail := func(format string, args ...any) (*rules, error) {
		return nil, fmt.Errorf("%w: %s", ErrConfig, fmt.Sprintf(format, args...))
	}
	r := &rules{
		previewLimit: 20,
		lists:        map[string]*listIndex{},
		patterns:     map[string][]cpattern{},
		sourceDirs:   makeSet(c.SourceDirs, false),
		shells:       makeSet(c.Shells, true),
		interp:       map[string][]string{},
		downloaders:  makeSet(c.Downloaders, true),
		decoders:     makeSet(c.Decoders, true),
		netSenders:   makeSet(c.NetSenders, true),
		globalOpts:   map[string]set{},
		wrappers:     map[string][]*cwrapper{},
		envVars:      map[string]*cenv{},
	}
	switch {
	case c.PreviewLimit < 0 || c.PreviewLimit > 1000:
		return fail("preview_limit %d is outside 0..1000", c.PreviewLimit)
	case c.PreviewLimit > 0:
		r.previewLimit = c.PreviewLimit
	}
	addList := func(field string, entries []string, level action.Level, check string) error {
		for _, e := range entries {
			f := strings.Fields(e)
			if len(f) == 0 {
				return fmt.Errorf("%w: %s: empty entry", ErrConfig, field)
			}
			le := listEntry{level: level, check: check}
			for _, c := range f[1:] {
				if err := validGlob(c); err != nil {
					return fmt.Errorf("%w: %s: %q: %v", ErrConfig, field, e, err)
				}
				if strings.HasPrefix(c, "-") {
					le.flags = append(le.flags, newComp(c))
				} else {
					le.subs = append(le.subs, newComp(strings.ToLower(c)))
				}
			}
			name := strings.ToLower(f[0])
			li := r.lists[name]
			if li == nil {
				li = &listIndex{}
				r.lists[name] = li
			}
			i := len(li.entries)
			li.entries = append(li.entries, le)
			if len(le.subs) == 0 || le.subs[0].glob {
				li.other = append(li.other, i)
			} else {
				if li.byFirst == nil {
					li.byFirst = map[string][]int{}
				}
				li.byFirst[le.subs[0].s] = append(li.byFirst[le.subs[0].s], i)
			}
		}
		return nil
	}
	if err := addList("read_only", c.ReadOnly, action.Auto, "readonly"); err != nil {
		return nil, err
	}
	if err := addList("notify", c.Notify, action.Notify, "dev"); err != nil {
		return nil, err
	}
	for i, p := range c.Patterns {
		f := strings.Fields(p.Command)
		switch {
		case len(f) == 0:
			return fail("pattern %d: empty command", i)
		case !p.Level.Valid():
			return fail("pattern %d (%s): missing or invalid level", i, p.Command)
		case !checkName.MatchString(p.Check):
			return fail("pattern %d (%s): check %q must be lower-case letters, digits and dashes", i, p.Command, p.Check)
		case strings.TrimSpace(p.Message) == "":
			return fail("pattern %d (%s): empty message", i, p.Command)
		}
		cp := cpattern{subs: newComps(f[1:], true), flags: newComps(p.Flags, false), args: newComps(p.Args, true),
			level: p.Level, check: p.Check, msg: p.Message}
		for _, g := range slices.Concat(f[1:], p.Args, p.Flags) {
			if err := validGlob(g); err != nil {
				return fail("pattern %d (%s): %q: %v", i, p.Command, g, err)
			}
		}
		for _, fl := range p.Flags {
			if !strings.HasPrefix(fl, "-") {
				return fail("pattern %d (%s): flag %q must start with -", i, p.Command, fl)
			}
		}
		name := strings.ToLower(f[0])
		r.patterns[name] = append(r.patterns[name], cp)
	}
	for _, s := range c.SecretPaths {
		rule, err := compileSecret(s)
		if err != nil {
			return nil, err
		}
		r.secrets = append(r.secrets, rule)
	}
	globs := []struct {
		field string
		in    []string
		out   *[]string
	}{
		{"secret_exceptions", c.SecretExceptions, &r.secretExc},
		{"block_devices", c.BlockDevices, &r.blockDev},
		{"harmless_devices", c.HarmlessDevices, &r.harmlessDev},
	}
	for _, g := range globs {
		for _, p := range g.in {
			if p == "" {
				return fail("%s: empty pattern", g.field)
			}
			if err := validGlob(p); err != nil {
				return fail("%s: %q: %v", g.field, p, err)
			}
			*g.out = append(*g.out, p)
		}
	}
	for _, d := range c.ScratchDirs {
		if !strings.HasPrefix(d, "/") {
			return fail("scratch_dirs: %q is not absolute", d)
		}
		r.scratch = append(r.scratch, path.Clean(d))
	}
	for k, v := range c.Interpreters {
		if k == "" {
			return fail("interpreters: empty name")
		}
		k = strings.ToLower(k)
		for _, o := range v {
			r.interp[k] = append(r.interp[k], strings.ToLower(o))
		}
		if r.interp[k] == nil {
			r.interp[k] = []string{}
		}
	}
	for k, v := range c.GlobalOptions {
		if k == "" {
			return fail("global_options: empty name")
		}
		k = strings.ToLower(k)
		s := r.globalOpts[k]
		if s == nil {
			s = set{}
			r.globalOpts[k] = s
		}
		for _, o := range v {
			if !strings.HasPrefix(o, "-") {
				return fail("global_options: %s: %q must start with -", k, o)
			}
			s[o] = struct{}{}
		}
	}
	for i, w := range c.Wrappers {
		f := strings.Fields(strings.ToLower(w.Name))
		if len(f) == 0 || len(f) > 2 {
			return fail("wrapper %d: name %q must be one or two words", i, w.Name)
		}
		if w.Operands < 0 || w.Operands > 4 {
			return fail("wrapper %s: operands %d is outside 0..4", w.Name, w.Operands)
		}
		cw := &cwrapper{
			name: f[0], valueOpts: makeSet(w.ValueOptions, false), stop: makeSet(w.StopFlags, false),
			chdir: makeSet(w.ChdirOptions, false), operands: w.Operands, assigns: w.Assignments, privileged: w.Privileged,
			pairOpts: makeSet(w.PairOptions, false), cmdOpts: makeSet(w.CommandOptions, false), script: w.Script,
		}
		for _, o := range w.CommandOptions {
			cw.valueOpts[o] = struct{}{}
		}
		if len(f) == 2 {
			cw.sub = f[1]
		}
		for _, o := range slices.Concat(w.ValueOptions, w.StopFlags, w.ChdirOptions, w.PairOptions, w.CommandOptions) {
			if !strings.HasPrefix(o, "-") {
				return fail("wrapper %s: option %q must start with -", w.Name, o)
			}
		}
		for _, o := range slices.Concat(w.ValueOptions, w.CommandOptions) {
			if len(o) == 2 && o[1] != '-' {
				cw.shortValue += o[1:]
			}
		}
		// Two-word wrappers are tried first.
		if cw.sub != "" {
			r.wrappers[f[0]] = slices.Insert(r.wrappers[f[0]], 0, cw)
		} else {
			r.wrappers[f[0]] = append(r.wrappers[f[0]], cw)
		}
	}
	for name, v := range c.Environment {
		ce, err := compileEnv(name, v)
		if err != nil {
			return nil, err
		}
		r.envVars[envKey(name)] = ce
	}
	return r, nil
}

// compileSecret compiles one secret_paths entry.
func compileSecret(s string) (secretRule, error) {
	bad := func(msg string) (secretRule, error) {
		return secretRule{}, fmt.Errorf("%w: secret_paths: %q: %s", ErrConfig, s, msg)
	}
	switch {
	case s == "":
		return bad("empty")
	case strings.HasPrefix(s, "~/"):
		rest := s[1:] // "/.ssh/" or "/.docker/config.json"
		if strings.HasSuffix(rest, "/") {
			rest = strings.TrimSuffix(rest, "/")
			if rest == "" {
				return bad("the whole home directory is not a secret path")
			}
			return secretRule{kind: 'd', text: rest}, nil
		}
		return secretRule{kind: 's', text: rest}, nil
	case strings.HasPrefix(s, "/"):
		if strings.HasSuffix(s, "/") {
			return secretRule{kind: 'A', text: path.Clean(s)}, nil
		}
		return secretRule{kind: 'a', text: path.Clean(s)}, nil
	case strings.Contains(s, "/"):
		return bad("must start with ~/ or /, or be a base name")
	}
	if err := validGlob(s); err != nil {
		return bad(err.Error())
	}
	return secretRule{kind: 'b', text: s}, nil
}

// defaultRules returns the compiled embedded defaults: rules.yaml as
// compile makes it, built into the binary as a table (rules.bin, see
// tables.go; checked by TestEmbeddedJSON), so that a process does not
// compile them at every start.
var defaultRules = sync.OnceValue(func() *rules { return decodeRules(rulesBin) })
