package shell

import (
	"encoding/binary"
	"fmt"
	"reflect"
	"slices"
	"strings"
)

// encodeTable is the generator of the tables tables.go decodes: v in the
// form described there, written by walking its fields in declaration
// order (so that the decoders, which read them in that order, are checked
// against it by TestEmbeddedJSON: a field added, removed or moved without
// them makes the decoded tables differ).
func encodeTable(v any) []byte {
	e := &tableEncoder{first: map[string]int{}}
	e.value(reflect.ValueOf(v))
	return e.b
}

type tableEncoder struct {
	b     []byte
	first map[string]int // offset of each string's first copy
}

func (e *tableEncoder) uvarint(x int) { e.b = binary.AppendUvarint(e.b, uint64(x)) }

func (e *tableEncoder) str(s string) {
	inline := uvarintLen(2*len(s)) + len(s)
	if off, ok := e.first[s]; ok && uvarintLen(2*off+1)+uvarintLen(len(s)) < inline {
		e.uvarint(2*off + 1)
		e.uvarint(len(s))
		return
	}
	e.uvarint(2 * len(s))
	if _, ok := e.first[s]; !ok && s != "" {
		e.first[s] = len(e.b)
	}
	e.b = append(e.b, s...)
}

func uvarintLen(x int) int { return len(binary.AppendUvarint(nil, uint64(x))) }

func (e *tableEncoder) value(v reflect.Value) {
	switch v.Kind() {
	case reflect.String:
		e.str(v.String())
	case reflect.Bool:
		if v.Bool() {
			e.b = append(e.b, 1)
		} else {
			e.b = append(e.b, 0)
		}
	case reflect.Uint8:
		e.b = append(e.b, byte(v.Uint()))
	case reflect.Int:
		e.b = binary.AppendVarint(e.b, v.Int())
	case reflect.Pointer:
		if v.IsNil() {
			e.b = append(e.b, 0)
			return
		}
		e.b = append(e.b, 1)
		e.value(v.Elem())
	case reflect.Slice:
		if v.IsNil() {
			e.uvarint(0)
			return
		}
		e.uvarint(v.Len() + 1)
		for i := range v.Len() {
			e.value(v.Index(i))
		}
	case reflect.Map:
		if v.IsNil() {
			e.uvarint(0)
			return
		}
		e.uvarint(v.Len() + 1)
		keys := v.MapKeys()
		slices.SortFunc(keys, func(x, y reflect.Value) int { return strings.Compare(x.String(), y.String()) })
		for _, k := range keys {
			e.value(k)
			e.value(v.MapIndex(k))
		}
	case reflect.Struct:
		for i := range v.NumField() {
			e.value(v.Field(i))
		}
	default:
		panic(fmt.Sprintf("encodeTable: %s (%s) has no encoding", v.Type(), v.Kind()))
	}
}
