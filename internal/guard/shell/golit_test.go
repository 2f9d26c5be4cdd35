package shell

import (
	"fmt"
	"reflect"
	"slices"
	"strconv"
	"strings"
)

// goLiteral writes v as a Go expression of this package: structs with
// their non-zero fields by name, maps with their keys sorted, pointers to
// structs as &T{…}, interfaces as their dynamic value. It covers the types
// of the generated tables (strings, ints, bools, slices, maps, structs).
func goLiteral(v reflect.Value) string {
	var b strings.Builder
	writeLiteral(&b, v, true)
	return b.String()
}

func writeLiteral(b *strings.Builder, v reflect.Value, typed bool) {
	switch v.Kind() {
	case reflect.String:
		if t := v.Type(); t.Name() != "string" && t.PkgPath() != "" {
			fmt.Fprintf(b, "%s(%s)", localName(t), strconv.Quote(v.String()))
			return
		}
		b.WriteString(strconv.Quote(v.String()))
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		b.WriteString(strconv.FormatInt(v.Int(), 10))
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		b.WriteString(strconv.FormatUint(v.Uint(), 10))
	case reflect.Bool:
		b.WriteString(strconv.FormatBool(v.Bool()))
	case reflect.Interface:
		if v.IsNil() {
			b.WriteString("nil")
			return
		}
		writeLiteral(b, v.Elem(), true)
	case reflect.Pointer:
		if v.IsNil() {
			b.WriteString("nil")
			return
		}
		b.WriteString("&")
		writeLiteral(b, v.Elem(), true)
	case reflect.Slice:
		if v.IsNil() {
			b.WriteString("nil")
			return
		}
		b.WriteString(localName(v.Type()) + "{")
		for i := range v.Len() {
			if i > 0 {
				b.WriteString(", ")
			}
			writeLiteral(b, v.Index(i), true)
		}
		b.WriteString("}")
	case reflect.Map:
		if v.IsNil() {
			b.WriteString("nil")
			return
		}
		keys := v.MapKeys()
		slices.SortFunc(keys, func(x, y reflect.Value) int { return strings.Compare(x.String(), y.String()) })
		b.WriteString(localName(v.Type()) + "{\n")
		for _, k := range keys {
			writeLiteral(b, k, true)
			b.WriteString(": ")
			writeLiteral(b, v.MapIndex(k), true)
			b.WriteString(",\n")
		}
		b.WriteString("}")
	case reflect.Struct:
		b.WriteString(localName(v.Type()) + "{")
		first := true
		for i := range v.NumField() {
			if v.Field(i).IsZero() {
				continue
			}
			if !first {
				b.WriteString(", ")
			}
			first = false
			b.WriteString(v.Type().Field(i).Name + ": ")
			writeLiteral(b, v.Field(i), true)
		}
		b.WriteString("}")
	default:
		panic("goLiteral: unsupported kind " + v.Kind().String())
	}
}

// localName is t's name as written inside this package.
func localName(t reflect.Type) string {
	return strings.ReplaceAll(t.String(), "shell.", "")
}
