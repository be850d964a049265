package initcfg

import (
	"encoding/binary"
	"errors"
	"fmt"
	"reflect"
	"strconv"
	"sync"
)

// The config travels to the init stage (and the starter's spec to the
// starter) in a binary form of its own, not as JSON: encoding/json's first
// use of each type (its field caches, built by reflection) cost about
// 0.3 ms to write in the launcher and 0.3-0.5 ms to read in the init stage,
// on every launch; this form reads the same config in about 0.02 ms.
// Encode and Decode walk any value made of structs (every exported field,
// in order, as encoding/json takes them), strings, bools, integers, slices
// and pointers, so a field added to the config travels with no change
// here; a field of any other kind is an error on both sides. The two ends
// are of one build, but not always one executable (the init stage may be
// grok-sandbox-init, beside the launcher: launcher/initbin), so the data
// begins with a fingerprint of the type's layout (every field's name and
// kind, in order) and Decode refuses data of another layout: two
// executables that disagree on the config never read each other's
// fields as their own. print shows the config as JSON all the same.

// Encode is v (a pointer to a struct) in the binary form.
func Encode(v any) ([]byte, error) {
	rv := reflect.ValueOf(v)
	if rv.Kind() != reflect.Pointer || rv.Elem().Kind() != reflect.Struct {
		return nil, errors.New("initcfg: Encode takes a pointer to a struct")
	}
	return encodeValue(binary.LittleEndian.AppendUint64(nil, Fingerprint(rv.Elem().Type())), rv.Elem())
}

// ErrLayout is Decode's error for data written for another layout of the
// type: by an executable of another build.
var ErrLayout = errors.New("initcfg: the config was written for another layout of it (the launcher and the init stage are of different builds)")

// Fingerprint is a hash (FNV-1a, 64 bits) of t's layout as Encode writes
// it: each exported field's name and type, in order, through slices,
// pointers and nested structs, a named type by its package and name too
// (an enumeration's type renamed shows; its constants renumbered do not).
// Computed once per type.
func Fingerprint(t reflect.Type) uint64 {
	if h, ok := fingerprints.Load(t); ok {
		return h.(uint64)
	}
	h := uint64(14695981039346656037)
	for _, c := range layout(nil, t, map[reflect.Type]int{}) {
		h = (h ^ uint64(c)) * 1099511628211
	}
	fingerprints.Store(t, h)
	return h
}

var fingerprints sync.Map // reflect.Type → uint64

// layout writes t; a struct met again is written as the number of its
// first meeting (a name could be two types').
func layout(b []byte, t reflect.Type, seen map[reflect.Type]int) []byte {
	b = append(b, t.Kind().String()...)
	if t.Name() != "" {
		b = append(b, " "+t.PkgPath()+"."+t.Name()...)
	}
	switch t.Kind() {
	case reflect.Struct:
		if n, ok := seen[t]; ok {
			return append(b, "#"+strconv.Itoa(n)...)
		}
		seen[t] = len(seen)
		b = append(b, '{')
		for i := 0; i < t.NumField(); i++ {
			if f := t.Field(i); f.IsExported() {
				b = append(b, f.Name...)
				b = append(b, ' ')
				b = layout(b, f.Type, seen)
				b = append(b, ';')
			}
		}
		b = append(b, '}')
	case reflect.Slice, reflect.Pointer:
		b = layout(append(b, ' '), t.Elem(), seen)
	}
	return b
}

func encodeValue(b []byte, v reflect.Value) ([]byte, error) {
	var err error
	switch v.Kind() {
	case reflect.Struct:
		t := v.Type()
		for i := 0; i < v.NumField(); i++ {
			if !t.Field(i).IsExported() {
				continue
			}
			if b, err = encodeValue(b, v.Field(i)); err != nil {
				return nil, err
			}
		}
	case reflect.String:
		b = binary.AppendUvarint(b, uint64(v.Len()))
		b = append(b, v.String()...)
	case reflect.Bool:
		if v.Bool() {
			b = append(b, 1)
		} else {
			b = append(b, 0)
		}
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		b = binary.AppendVarint(b, v.Int())
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		b = binary.AppendUvarint(b, v.Uint())
	case reflect.Slice:
		b = binary.AppendUvarint(b, uint64(v.Len()))
		if v.Type().Elem().Kind() == reflect.Uint8 {
			return append(b, v.Bytes()...), nil
		}
		for i := 0; i < v.Len(); i++ {
			if b, err = encodeValue(b, v.Index(i)); err != nil {
				return nil, err
			}
		}
	case reflect.Pointer:
		if v.IsNil() {
			return append(b, 0), nil
		}
		b = append(b, 1)
		return encodeValue(b, v.Elem())
	default:
		return nil, fmt.Errorf("initcfg: cannot encode a %s", v.Type())
	}
	return b, nil
}

// Decode fills v (a pointer to a struct) from Encode's form; the data
// must be exactly one value.
func Decode(data []byte, v any) error {
	rv := reflect.ValueOf(v)
	if rv.Kind() != reflect.Pointer || rv.Elem().Kind() != reflect.Struct {
		return errors.New("initcfg: Decode takes a pointer to a struct")
	}
	if len(data) < 8 || binary.LittleEndian.Uint64(data) != Fingerprint(rv.Elem().Type()) {
		return ErrLayout
	}
	d := decoder{data: data[8:]}
	if err := d.value(rv.Elem()); err != nil {
		return err
	}
	if len(d.data) != 0 {
		return fmt.Errorf("initcfg: %d bytes left over", len(d.data))
	}
	return nil
}

type decoder struct{ data []byte }

var errShort = errors.New("initcfg: the config ends early")

func (d *decoder) uvarint() (uint64, error) {
	x, n := binary.Uvarint(d.data)
	if n <= 0 {
		return 0, errShort
	}
	d.data = d.data[n:]
	return x, nil
}

// length is a count of elements or bytes, which cannot exceed what is
// left to read at each element's least size (bytes and strings: 1).
func (d *decoder) length(least int) (int, error) {
	n, err := d.uvarint()
	if err != nil {
		return 0, err
	}
	if n > uint64(len(d.data)/max(least, 1)) {
		return 0, errShort
	}
	return int(n), nil
}

// leastSize is the fewest bytes Encode writes for a value of type t.
func leastSize(t reflect.Type) int {
	if t.Kind() != reflect.Struct {
		return 1 // a length, a varint, a bool or a pointer's tag
	}
	n := 0
	for i := 0; i < t.NumField(); i++ {
		if t.Field(i).IsExported() {
			n += leastSize(t.Field(i).Type)
		}
	}
	return n
}

func (d *decoder) value(v reflect.Value) error {
	switch v.Kind() {
	case reflect.Struct:
		t := v.Type()
		for i := 0; i < v.NumField(); i++ {
			if !t.Field(i).IsExported() {
				continue
			}
			if err := d.value(v.Field(i)); err != nil {
				return err
			}
		}
	case reflect.String:
		n, err := d.length(1)
		if err != nil {
			return err
		}
		v.SetString(string(d.data[:n]))
		d.data = d.data[n:]
	case reflect.Bool:
		if len(d.data) == 0 || d.data[0] > 1 {
			return errShort
		}
		v.SetBool(d.data[0] == 1)
		d.data = d.data[1:]
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		x, n := binary.Varint(d.data)
		if n <= 0 {
			return errShort
		}
		d.data = d.data[n:]
		if v.OverflowInt(x) {
			return fmt.Errorf("initcfg: %d overflows a %s", x, v.Type())
		}
		v.SetInt(x)
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		x, err := d.uvarint()
		if err != nil {
			return err
		}
		if v.OverflowUint(x) {
			return fmt.Errorf("initcfg: %d overflows a %s", x, v.Type())
		}
		v.SetUint(x)
	case reflect.Slice:
		n, err := d.length(leastSize(v.Type().Elem()))
		if err != nil {
			return err
		}
		if n == 0 {
			v.SetZero()
			return nil
		}
		s := reflect.MakeSlice(v.Type(), n, n)
		if v.Type().Elem().Kind() == reflect.Uint8 {
			copy(s.Bytes(), d.data[:n]) // a named byte type's too
			d.data = d.data[n:]
			v.Set(s)
			return nil
		}
		for i := 0; i < n; i++ {
			if err := d.value(s.Index(i)); err != nil {
				return err
			}
		}
		v.Set(s)
	case reflect.Pointer:
		if len(d.data) == 0 || d.data[0] > 1 {
			return errShort
		}
		present := d.data[0] == 1
		d.data = d.data[1:]
		if !present {
			v.SetZero()
			return nil
		}
		p := reflect.New(v.Type().Elem())
		if err := d.value(p.Elem()); err != nil {
			return err
		}
		v.Set(p)
	default:
		return fmt.Errorf("initcfg: cannot decode a %s", v.Type())
	}
	return nil
}
