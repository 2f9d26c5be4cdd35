package policy

import (
	"encoding"
	"fmt"
	"reflect"
	"strconv"
	"strings"

	"go.yaml.in/yaml/v3"
)

// maxNodes bounds the nodes one strict decode visits, aliases included, so a
// small file cannot expand into an enormous one ("billion laughs").
const maxNodes = 200_000

// decoder decodes a yaml.Node tree into Go values strictly: an unknown field
// anywhere, a duplicate key or a value of the wrong type is an error with
// the line it is on. It records the line of every path it visits
// ("rules[0].kind[1]") so that validation can point at lines too.
type decoder struct {
	d     *diag
	lines map[string]int
	nodes int
}

var (
	yamlNodeType    = reflect.TypeFor[yaml.Node]()
	unmarshalerType = reflect.TypeFor[yaml.Unmarshaler]()
	textUnmarshaler = reflect.TypeFor[encoding.TextUnmarshaler]()
)

// line returns the recorded line of path, or 0.
func (dc *decoder) line(path string) int { return dc.lines[path] }

// decode decodes n into v (a settable value). path names n in the document
// ("" at the top); where names it for a person ("settings.loop", `rule "x"`).
func (dc *decoder) decode(n *yaml.Node, v reflect.Value, path, where string) {
	if dc.d.full() {
		return
	}
	dc.nodes++
	if dc.nodes > maxNodes {
		if dc.nodes == maxNodes+1 {
			dc.d.errorf(n.Line, "document too large (more than %d nodes, aliases expanded)", maxNodes)
		}
		return
	}
	for n.Kind == yaml.AliasNode {
		if n.Alias == nil {
			dc.d.errorf(n.Line, "unknown alias %q", n.Value)
			return
		}
		n = n.Alias
		dc.nodes++
	}
	if dc.lines != nil && path != "" {
		if _, ok := dc.lines[path]; !ok {
			dc.lines[path] = n.Line
		}
	}
	t := v.Type()
	if t == yamlNodeType {
		budget := maxNodes - dc.nodes
		c := copyNode(n, &budget)
		dc.nodes = maxNodes - budget
		if c == nil {
			dc.d.errorf(n.Line, "document too large (more than %d nodes, aliases expanded)", maxNodes)
			return
		}
		v.Set(reflect.ValueOf(*c))
		return
	}
	if v.CanAddr() {
		p := v.Addr()
		if p.Type().Implements(unmarshalerType) {
			if err := p.Interface().(yaml.Unmarshaler).UnmarshalYAML(n); err != nil {
				dc.d.errorf(n.Line, "%s: %v", describe(path, where), err)
			}
			return
		}
		if p.Type().Implements(textUnmarshaler) {
			if isNull(n) {
				v.SetZero()
				return
			}
			if n.Kind != yaml.ScalarNode {
				dc.d.errorf(n.Line, "%s: want a single value, not a %s", describe(path, where), nodeKind(n))
				return
			}
			if err := p.Interface().(encoding.TextUnmarshaler).UnmarshalText([]byte(n.Value)); err != nil {
				dc.d.errorf(n.Line, "%s: %v", describe(path, where), err)
			}
			return
		}
	}
	switch t.Kind() {
	case reflect.Pointer:
		if isNull(n) {
			v.SetZero()
			return
		}
		nv := reflect.New(t.Elem())
		dc.decode(n, nv.Elem(), path, where)
		v.Set(nv)
	case reflect.Struct:
		dc.decodeStruct(n, v, path, where)
	case reflect.Slice:
		dc.decodeSlice(n, v, path, where)
	case reflect.Map:
		dc.decodeMap(n, v, path, where)
	case reflect.Interface:
		// Free-form data (example arguments): yaml's own decoding.
		var x any
		if err := n.Decode(&x); err != nil {
			dc.d.errorf(n.Line, "%s: %v", describe(path, where), cleanYAMLError(err))
			return
		}
		if x == nil {
			v.SetZero()
			return
		}
		v.Set(reflect.ValueOf(x))
	case reflect.String:
		if isNull(n) {
			v.SetZero()
			return
		}
		if n.Kind != yaml.ScalarNode {
			dc.d.errorf(n.Line, "%s: want a string, not a %s", describe(path, where), nodeKind(n))
			return
		}
		v.SetString(n.Value)
	case reflect.Bool:
		dc.scalar(n, v, path, where, "true or false", func() error {
			b, err := strconv.ParseBool(n.Value)
			if err == nil && n.Tag != "!!bool" {
				err = strconv.ErrSyntax
			}
			v.SetBool(b)
			return err
		})
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		dc.scalar(n, v, path, where, "an integer", func() error {
			var i int64
			if n.Tag != "!!int" {
				return strconv.ErrSyntax
			}
			if err := n.Decode(&i); err != nil {
				return err
			}
			if v.OverflowInt(i) {
				return strconv.ErrRange
			}
			v.SetInt(i)
			return nil
		})
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		dc.scalar(n, v, path, where, "a non-negative integer", func() error {
			var i uint64
			if n.Tag != "!!int" {
				return strconv.ErrSyntax
			}
			if err := n.Decode(&i); err != nil {
				return err
			}
			if v.OverflowUint(i) {
				return strconv.ErrRange
			}
			v.SetUint(i)
			return nil
		})
	case reflect.Float32, reflect.Float64:
		dc.scalar(n, v, path, where, "a number", func() error {
			var f float64
			if n.Tag != "!!int" && n.Tag != "!!float" {
				return strconv.ErrSyntax
			}
			if err := n.Decode(&f); err != nil {
				return err
			}
			v.SetFloat(f)
			return nil
		})
	default:
		dc.d.errorf(n.Line, "%s: cannot decode into %s", describe(path, where), t)
	}
}

// scalar decodes a scalar with set, reporting a type error as "want <want>".
func (dc *decoder) scalar(n *yaml.Node, v reflect.Value, path, where, want string, set func() error) {
	if isNull(n) {
		v.SetZero()
		return
	}
	if n.Kind != yaml.ScalarNode {
		dc.d.errorf(n.Line, "%s: want %s, not a %s", describe(path, where), want, nodeKind(n))
		return
	}
	if err := set(); err != nil {
		dc.d.errorf(n.Line, "%s: want %s, not %q", describe(path, where), want, n.Value)
	}
}

// field is one decodable field of a struct.
type field struct {
	name  string
	index []int
}

// structFields lists the yaml fields of t, following ",inline" structs.
func structFields(t reflect.Type) []field {
	var out []field
	for i := range t.NumField() {
		f := t.Field(i)
		if !f.IsExported() {
			continue
		}
		tag := f.Tag.Get("yaml")
		name, opts, _ := strings.Cut(tag, ",")
		if name == "-" {
			continue
		}
		if strings.Contains(","+opts+",", ",inline,") && f.Type.Kind() == reflect.Struct {
			for _, sub := range structFields(f.Type) {
				out = append(out, field{sub.name, append([]int{i}, sub.index...)})
			}
			continue
		}
		if name == "" {
			name = strings.ToLower(f.Name)
		}
		out = append(out, field{name, []int{i}})
	}
	return out
}

func (dc *decoder) decodeStruct(n *yaml.Node, v reflect.Value, path, where string) {
	if isNull(n) {
		return
	}
	if n.Kind != yaml.MappingNode {
		dc.d.errorf(n.Line, "%s: want a mapping (key: value), not a %s", describe(path, where), nodeKind(n))
		return
	}
	fields := structFields(v.Type())
	names := make([]string, len(fields))
	for i, f := range fields {
		names[i] = f.name
	}
	seen := make(map[string]bool, len(n.Content)/2)
	for i := 0; i+1 < len(n.Content); i += 2 {
		k, val := n.Content[i], n.Content[i+1]
		if k.Kind != yaml.ScalarNode {
			dc.d.errorf(k.Line, "%s: keys must be plain names", describe(path, where))
			continue
		}
		if seen[k.Value] {
			dc.d.errorf(k.Line, "duplicate field %q in %s", k.Value, whereOr(where))
			continue
		}
		seen[k.Value] = true
		var f *field
		for j := range fields {
			if fields[j].name == k.Value {
				f = &fields[j]
				break
			}
		}
		if f == nil {
			dc.d.errorf(k.Line, "unknown field %q in %s%s", k.Value, whereOr(where), suggest(k.Value, names))
			continue
		}
		dc.decode(val, v.FieldByIndex(f.index), join(path, k.Value), join(where, k.Value))
	}
}

func (dc *decoder) decodeSlice(n *yaml.Node, v reflect.Value, path, where string) {
	if isNull(n) {
		v.SetZero()
		return
	}
	et := v.Type().Elem()
	if n.Kind == yaml.ScalarNode && et.Kind() == reflect.String {
		// A single string stands for a list of one: `tool: Bash`.
		s := reflect.MakeSlice(v.Type(), 1, 1)
		dc.decode(n, s.Index(0), path+"[0]", where)
		v.Set(s)
		return
	}
	if n.Kind != yaml.SequenceNode {
		dc.d.errorf(n.Line, "%s: want a list, not a %s", describe(path, where), nodeKind(n))
		return
	}
	s := reflect.MakeSlice(v.Type(), len(n.Content), len(n.Content))
	for i, c := range n.Content {
		p := fmt.Sprintf("%s[%d]", path, i)
		w := fmt.Sprintf("%s[%d]", where, i)
		if et == reflect.TypeFor[Rule]() {
			if name := mappingValue(c, "name"); name != "" {
				w = fmt.Sprintf("rule %q", name)
			}
		}
		dc.decode(c, s.Index(i), p, w)
	}
	v.Set(s)
}

func (dc *decoder) decodeMap(n *yaml.Node, v reflect.Value, path, where string) {
	if isNull(n) {
		v.SetZero()
		return
	}
	t := v.Type()
	if t.Key().Kind() != reflect.String {
		dc.d.errorf(n.Line, "%s: cannot decode into %s", describe(path, where), t)
		return
	}
	if n.Kind != yaml.MappingNode {
		dc.d.errorf(n.Line, "%s: want a mapping (key: value), not a %s", describe(path, where), nodeKind(n))
		return
	}
	m := reflect.MakeMapWithSize(t, len(n.Content)/2)
	for i := 0; i+1 < len(n.Content); i += 2 {
		k, val := n.Content[i], n.Content[i+1]
		if k.Kind != yaml.ScalarNode || isNull(k) {
			dc.d.errorf(k.Line, "%s: keys must be plain names", describe(path, where))
			continue
		}
		key := reflect.ValueOf(k.Value).Convert(t.Key())
		if m.MapIndex(key).IsValid() {
			dc.d.errorf(k.Line, "duplicate key %q in %s", k.Value, whereOr(where))
			continue
		}
		ev := reflect.New(t.Elem()).Elem()
		dc.decode(val, ev, join(path, k.Value), join(where, k.Value))
		m.SetMapIndex(key, ev)
	}
	v.Set(m)
}

// mappingValue returns the scalar value of key in mapping n, or "".
func mappingValue(n *yaml.Node, key string) string {
	if n.Kind != yaml.MappingNode {
		return ""
	}
	for i := 0; i+1 < len(n.Content); i += 2 {
		if n.Content[i].Value == key && n.Content[i+1].Kind == yaml.ScalarNode {
			return n.Content[i+1].Value
		}
	}
	return ""
}

func isNull(n *yaml.Node) bool {
	return n.Kind == yaml.ScalarNode && n.Tag == "!!null"
}

func nodeKind(n *yaml.Node) string {
	switch n.Kind {
	case yaml.MappingNode:
		return "mapping"
	case yaml.SequenceNode:
		return "list"
	case yaml.ScalarNode:
		return fmt.Sprintf("value %q", n.Value)
	}
	return "node"
}

func join(a, b string) string {
	if a == "" {
		return b
	}
	if b == "" {
		return a
	}
	return a + "." + b
}

func whereOr(where string) string {
	if where == "" {
		return "the policy"
	}
	return where
}

func describe(path, where string) string {
	if where != "" {
		return where
	}
	if path != "" {
		return path
	}
	return "the policy"
}

// copyNode deep-copies a node tree, expanding aliases, so that a guard's
// configuration cannot be changed through the policy. It spends one unit of
// budget per node and returns nil when the budget runs out.
func copyNode(n *yaml.Node, budget *int) *yaml.Node {
	*budget--
	if n == nil || *budget < 0 {
		return nil
	}
	if n.Kind == yaml.AliasNode {
		if n.Alias == nil {
			return nil
		}
		return copyNode(n.Alias, budget)
	}
	c := *n
	c.Alias = nil
	if len(n.Content) > 0 {
		c.Content = make([]*yaml.Node, len(n.Content))
		for i, ch := range n.Content {
			if c.Content[i] = copyNode(ch, budget); c.Content[i] == nil {
				return nil
			}
		}
	}
	return &c
}

// cleanYAMLError strips yaml's "yaml: unmarshal errors:\n  line N:" prefix.
func cleanYAMLError(err error) string {
	s := err.Error()
	s = strings.TrimPrefix(s, "yaml: unmarshal errors:\n")
	s = strings.TrimSpace(s)
	if strings.HasPrefix(s, "line ") {
		if _, rest, ok := strings.Cut(s, ": "); ok {
			s = rest
		}
	}
	return strings.TrimPrefix(s, "yaml: ")
}
