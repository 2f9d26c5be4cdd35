package shell

import (
	_ "embed" // the tables

	"github.com/overseer-dev/overseer/internal/action"
)

// The default tables in a compact binary form (see embedded.go), decoded
// on first use. The form is the value's fields in declaration order:
//
//   - an integer as a varint (zig-zag), a bool or a byte as one byte;
//   - a string as uvarint(2n) and its n bytes, or, when the same string
//     came before in the table, as uvarint(2·offset+1) and uvarint(n): a
//     reference to its first copy (decoded strings share the table's
//     memory: they cost no allocation);
//   - a slice or map as uvarint(0) when nil, else uvarint(n+1) and its n
//     elements (a map's as key, value, in key order);
//   - a pointer as one byte, 0 for nil or 1 followed by the value.
//
// The tests check that each table decodes to what its YAML file says
// (TestEmbeddedJSON); the encoder is theirs (encodeTable, in
// tables_test.go).

var (
	//go:embed rules.bin
	rulesBin string // rules.yaml as compile makes it
	//go:embed config.bin
	configBin string // rules.yaml as a Config
	//go:embed effects.bin
	effectsBin string // effects.yaml as compileEffectsDoc makes it
)

// dec reads a table. A malformed table panics (index out of range): the
// tables are the binary's own, checked by the tests. Slices are cut from
// larger ones (with no room to grow into each other), a few allocations
// instead of one per slice.
type dec struct {
	s string
	i int

	comps_   arena[comp]
	ints_    arena[int]
	strs_    arena[string]
	entries  arena[listEntry]
	indexes  arena[listIndex]
	patterns arena[cpattern]
}

// arena hands out slices of a larger one.
type arena[T any] struct{ buf []T }

// take returns a slice of n elements, its capacity n.
func (a *arena[T]) take(n int) []T {
	if n > len(a.buf) {
		a.buf = make([]T, max(n, 256))
	}
	s := a.buf[:n:n]
	a.buf = a.buf[n:]
	return s
}

// done panics unless the whole table was read.
func (d *dec) done() {
	if d.i != len(d.s) {
		panic("shell: a built-in table has bytes left over")
	}
}

func (d *dec) uvarint() int {
	var x uint64
	for shift := 0; ; shift += 7 {
		b := d.s[d.i]
		d.i++
		x |= uint64(b&0x7f) << shift
		if b < 0x80 {
			return int(x)
		}
	}
}

func (d *dec) int() int {
	u := uint64(d.uvarint())
	return int(int64(u>>1) ^ -int64(u&1))
}

func (d *dec) byte() byte {
	b := d.s[d.i]
	d.i++
	return b
}

func (d *dec) bool() bool { return d.byte() != 0 }

func (d *dec) str() string {
	x := d.uvarint()
	if x&1 == 0 {
		n := x >> 1
		s := d.s[d.i : d.i+n]
		d.i += n
		return s
	}
	off, n := x>>1, d.uvarint()
	return d.s[off : off+n]
}

// len reads a slice's or map's length; nil reports a nil one.
func (d *dec) len() (n int, isNil bool) {
	x := d.uvarint()
	return x - 1, x == 0
}

func (d *dec) ptr() bool { return d.bool() }

func (d *dec) strs() []string {
	n, isNil := d.len()
	if isNil {
		return nil
	}
	out := d.strs_.take(n)
	for i := range out {
		out[i] = d.str()
	}
	return out
}

func (d *dec) ints() []int {
	n, isNil := d.len()
	if isNil {
		return nil
	}
	out := d.ints_.take(n)
	for i := range out {
		out[i] = d.int()
	}
	return out
}

func (d *dec) set() set {
	n, isNil := d.len()
	if isNil {
		return nil
	}
	out := make(set, n)
	for range n {
		out[d.str()] = struct{}{}
	}
	return out
}

func (d *dec) strsMap() map[string][]string {
	n, isNil := d.len()
	if isNil {
		return nil
	}
	out := make(map[string][]string, n)
	for range n {
		k := d.str()
		out[k] = d.strs()
	}
	return out
}

func (d *dec) comps() []comp {
	n, isNil := d.len()
	if isNil {
		return nil
	}
	out := d.comps_.take(n)
	for i := range out {
		out[i] = comp{s: d.str(), glob: d.bool()}
	}
	return out
}

func (d *dec) level() action.Level { return action.Level(d.byte()) }

// decodeRules decodes rulesBin.
func decodeRules(s string) *rules {
	d := &dec{s: s}
	if !d.ptr() {
		panic("shell: the rules table is nil")
	}
	r := &rules{previewLimit: d.int()}
	if n, isNil := d.len(); !isNil {
		r.lists = make(map[string]*listIndex, n)
		for range n {
			k := d.str()
			var li *listIndex
			if d.ptr() {
				li = &d.indexes.take(1)[0]
				if n, isNil := d.len(); !isNil {
					li.entries = d.entries.take(n)
					for i := range li.entries {
						li.entries[i] = listEntry{subs: d.comps(), flags: d.comps(), level: d.level(), check: d.str()}
					}
				}
				if n, isNil := d.len(); !isNil {
					li.byFirst = make(map[string][]int, n)
					for range n {
						k := d.str()
						li.byFirst[k] = d.ints()
					}
				}
				li.other = d.ints()
			}
			r.lists[k] = li
		}
	}
	if n, isNil := d.len(); !isNil {
		r.patterns = make(map[string][]cpattern, n)
		for range n {
			k := d.str()
			var ps []cpattern
			if n, isNil := d.len(); !isNil {
				ps = d.patterns.take(n)
				for i := range ps {
					ps[i] = cpattern{subs: d.comps(), flags: d.comps(), args: d.comps(), level: d.level(), check: d.str(), msg: d.str()}
				}
			}
			r.patterns[k] = ps
		}
	}
	r.sourceDirs = d.set()
	if n, isNil := d.len(); !isNil {
		r.secrets = make([]secretRule, n)
		for i := range r.secrets {
			r.secrets[i] = secretRule{kind: d.byte(), text: d.str()}
		}
	}
	r.secretExc = d.strs()
	r.scratch = d.strs()
	r.blockDev = d.strs()
	r.harmlessDev = d.strs()
	r.shells = d.set()
	r.interp = d.strsMap()
	r.downloaders = d.set()
	r.decoders = d.set()
	r.netSenders = d.set()
	if n, isNil := d.len(); !isNil {
		r.globalOpts = make(map[string]set, n)
		for range n {
			k := d.str()
			r.globalOpts[k] = d.set()
		}
	}
	if n, isNil := d.len(); !isNil {
		r.wrappers = make(map[string][]*cwrapper, n)
		for range n {
			k := d.str()
			var ws []*cwrapper
			if n, isNil := d.len(); !isNil {
				ws = make([]*cwrapper, n)
				for i := range ws {
					if d.ptr() {
						ws[i] = &cwrapper{name: d.str(), sub: d.str(), valueOpts: d.set(), shortValue: d.str(), stop: d.set(),
							chdir: d.set(), operands: d.int(), assigns: d.bool(), privileged: d.bool(), pairOpts: d.set(),
							cmdOpts: d.set(), script: d.bool()}
					}
				}
			}
			r.wrappers[k] = ws
		}
	}
	if n, isNil := d.len(); !isNil {
		r.envVars = make(map[string]*cenv, n)
		for range n {
			k := d.str()
			var e *cenv
			if d.ptr() {
				e = &cenv{name: d.str(), kind: d.str(), programs: d.strs(), prefixes: d.strs(), code: d.set(), level: d.level()}
			}
			r.envVars[k] = e
		}
	}
	d.done()
	return r
}

// decodeConfig decodes configBin.
func decodeConfig(s string) Config {
	d := &dec{s: s}
	c := Config{PreviewLimit: d.int(), ReadOnly: d.strs(), Notify: d.strs()}
	if n, isNil := d.len(); !isNil {
		c.Patterns = make([]Pattern, n)
		for i := range c.Patterns {
			c.Patterns[i] = Pattern{Command: d.str(), Flags: d.strs(), Args: d.strs(), Level: d.level(), Check: d.str(), Message: d.str()}
		}
	}
	c.SourceDirs = d.strs()
	c.SecretPaths = d.strs()
	c.SecretExceptions = d.strs()
	c.ScratchDirs = d.strs()
	c.BlockDevices = d.strs()
	c.HarmlessDevices = d.strs()
	c.Shells = d.strs()
	c.Interpreters = d.strsMap()
	c.Downloaders = d.strs()
	c.Decoders = d.strs()
	c.NetSenders = d.strs()
	c.GlobalOptions = d.strsMap()
	if n, isNil := d.len(); !isNil {
		c.Wrappers = make([]Wrapper, n)
		for i := range c.Wrappers {
			c.Wrappers[i] = Wrapper{Name: d.str(), ValueOptions: d.strs(), StopFlags: d.strs(), ChdirOptions: d.strs(),
				Operands: d.int(), Assignments: d.bool(), Privileged: d.bool(), PairOptions: d.strs(), CommandOptions: d.strs(),
				Script: d.bool()}
		}
	}
	if n, isNil := d.len(); !isNil {
		c.Environment = make(map[string]EnvVar, n)
		for range n {
			k := d.str()
			c.Environment[k] = EnvVar{Kind: d.str(), Programs: d.strs(), Prefixes: d.strs(), Code: d.strs(), Level: d.level()}
		}
	}
	d.done()
	return c
}

// decodeEffects decodes effectsBin.
func decodeEffects(s string) map[string]*effectSpec {
	d := &dec{s: s}
	m := d.effectSpecs()
	d.done()
	return m
}

func (d *dec) intents() map[string]intent {
	n, isNil := d.len()
	if isNil {
		return nil
	}
	out := make(map[string]intent, n)
	for range n {
		k := d.str()
		out[k] = intent(d.byte())
	}
	return out
}

func (d *dec) effectSpecs() map[string]*effectSpec {
	n, isNil := d.len()
	if isNil {
		return nil
	}
	out := make(map[string]*effectSpec, n)
	for range n {
		k := d.str()
		var e *effectSpec
		if d.ptr() {
			e = &effectSpec{operands: intent(d.byte()), first: intent(d.byte()), last: intent(d.byte()),
				hasOperands: d.bool(), hasFirst: d.bool(), hasLast: d.bool(), skip: d.int(), options: d.intents(),
				when: d.intents(), recursive: d.strs(), always: d.bool(), subs: d.effectSpecs(), chdir: d.strs(),
				include: d.strs(), copy: d.bool(), links: d.strs(), lastWhen: d.intents(), modes: d.bool(),
				extract: d.strs(), patch: d.bool(), prints: d.strs(), printsWhen: d.strs()}
		}
		out[k] = e
	}
	return out
}
