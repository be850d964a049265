package initcfg_test

import (
	"encoding/binary"
	"errors"
	"math/rand"
	"reflect"
	"runtime"
	"strconv"
	"testing"

	"grok-sandbox/launcher/sandboxinit/initcfg"
)

// wired are the values that travel in the binary form (the starter's spec
// joins them on Linux: wire_linux_test.go).
var wired = []func() any{func() any { return &initcfg.Config{} }}

// fill sets every exported field under v to a value of its own, seeded by
// n: two elements in every slice, every pointer set.
func fill(t *testing.T, v reflect.Value, n *int) {
	*n++
	switch v.Kind() {
	case reflect.Struct:
		for i := 0; i < v.NumField(); i++ {
			if v.Type().Field(i).IsExported() {
				fill(t, v.Field(i), n)
			}
		}
	case reflect.String:
		v.SetString("s" + strconv.Itoa(*n) + "\x00é")
	case reflect.Bool:
		v.SetBool(true)
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		v.SetInt(-int64(*n))
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		v.SetUint(uint64(*n) + 200)
	case reflect.Slice:
		s := reflect.MakeSlice(v.Type(), 2, 2)
		fill(t, s.Index(0), n)
		fill(t, s.Index(1), n)
		v.Set(s)
	case reflect.Pointer:
		p := reflect.New(v.Type().Elem())
		fill(t, p.Elem(), n)
		v.Set(p)
	default:
		t.Fatalf("fill: a %s", v.Type())
	}
}

// Every field of the config and of the starter's spec arrives as it was
// sent, whatever it is: a field added later travels with no change to the
// codec (and a kind it does not know fails both ways, below).
func TestWireRoundTrip(t *testing.T) {
	for _, mk := range wired {
		v := mk()
		n := 0
		fill(t, reflect.ValueOf(v).Elem(), &n)
		b, err := initcfg.Encode(v)
		if err != nil {
			t.Fatal(err)
		}
		got := reflect.New(reflect.TypeOf(v).Elem()).Interface()
		if err := initcfg.Decode(b, got); err != nil {
			t.Fatal(err)
		}
		if !reflect.DeepEqual(got, v) {
			t.Fatalf("%T: got %+v, want %+v", v, got, v)
		}
		// Nothing shorter or longer decodes.
		for i := 0; i < len(b); i++ {
			if err := initcfg.Decode(b[:i], reflect.New(reflect.TypeOf(v).Elem()).Interface()); err == nil {
				t.Fatalf("%T: %d of %d bytes decoded", v, i, len(b))
			}
		}
		if err := initcfg.Decode(append(b, 0), reflect.New(reflect.TypeOf(v).Elem()).Interface()); err == nil {
			t.Fatalf("%T: a trailing byte decoded", v)
		}
	}
	// The zero config too: empty slices and nil pointers.
	b, err := initcfg.Encode(&initcfg.Config{})
	if err != nil {
		t.Fatal(err)
	}
	var got initcfg.Config
	if err := initcfg.Decode(b, &got); err != nil || !reflect.DeepEqual(got, initcfg.Config{}) {
		t.Fatalf("zero config: %v, %+v", err, got)
	}
}

func TestWireRefusesUnknownKinds(t *testing.T) {
	type withMap struct{ M map[string]int }
	if _, err := initcfg.Encode(&withMap{M: map[string]int{"a": 1}}); err == nil {
		t.Fatal("a map encoded")
	}
	if err := initcfg.Decode([]byte{0}, &withMap{}); err == nil {
		t.Fatal("a map decoded")
	}
	if _, err := initcfg.Encode(initcfg.Config{}); err == nil {
		t.Fatal("a non-pointer encoded")
	}
}

// Garbage never panics the decoder, nor makes it allocate beyond its input
// (after the right fingerprint, so that the decoder reads it).
func TestWireGarbage(t *testing.T) {
	r := rand.New(rand.NewSource(1))
	head := binary.LittleEndian.AppendUint64(nil, initcfg.Fingerprint(reflect.TypeOf(initcfg.Config{})))
	for i := 0; i < 20000; i++ {
		b := make([]byte, r.Intn(64))
		r.Read(b)
		var cfg initcfg.Config
		_ = initcfg.Decode(append(head[:8:8], b...), &cfg)
	}
	// A length larger than what follows is refused before anything is made.
	if err := initcfg.Decode(append(head[:8:8], 0xff, 0xff, 0xff, 0xff, 0x0f), &initcfg.Config{}); err == nil || errors.Is(err, initcfg.ErrLayout) {
		t.Fatalf("a 4 GiB string from 5 bytes: %v", err)
	}
}

// Data written for another layout of the type (fields reordered, renamed,
// of another type, one more, a nested one changed) is refused as such,
// even where the bytes would decode: an init stage of another build never
// takes the launcher's fields for its own.
func TestWireRefusesAnotherLayout(t *testing.T) {
	type inner struct{ A, B string }
	type want struct {
		X, Y string
		In   []inner
	}
	src := map[string]any{
		"reordered": &struct {
			Y, X string
			In   []inner
		}{},
		"renamed": &struct {
			X, Z string
			In   []inner
		}{},
		"another type": &struct {
			X  string
			Y  []byte
			In []inner
		}{},
		"one field more": &struct {
			X, Y, Z string
			In      []inner
		}{},
		"nested changed": &struct {
			X, Y string
			In   []struct{ B, A string }
		}{},
	}
	for name, v := range src {
		b, err := initcfg.Encode(v)
		if err != nil {
			t.Fatal(err)
		}
		if err := initcfg.Decode(b, &want{}); !errors.Is(err, initcfg.ErrLayout) {
			t.Errorf("%s: Decode = %v, want ErrLayout", name, err)
		}
	}
	b, err := initcfg.Encode(&want{X: "x", In: []inner{{A: "a"}}})
	if err != nil {
		t.Fatal(err)
	}
	var got want
	if err := initcfg.Decode(b, &got); err != nil || got.X != "x" || got.In[0].A != "a" {
		t.Errorf("the same layout: %v, %+v", err, got)
	}
}

// Two types that print alike (local types of one name) are two in the
// fingerprint: each struct met again is written by the order it was first
// met, not by its name.
func TestFingerprintTellsLikeNamedTypesApart(t *testing.T) {
	type T struct{ A bool }
	t1 := reflect.TypeOf(T{})
	{
		type T struct{ A uint8 }
		t2 := reflect.TypeOf(T{})
		if t1.String() != t2.String() {
			t.Skipf("the two types print differently here (%s, %s)", t1, t2)
		}
		a := reflect.StructOf([]reflect.StructField{{Name: "X", Type: t1}, {Name: "Y", Type: t2}, {Name: "Z", Type: t2}})
		b := reflect.StructOf([]reflect.StructField{{Name: "X", Type: t1}, {Name: "Y", Type: t2}, {Name: "Z", Type: t1}})
		if initcfg.Fingerprint(a) == initcfg.Fingerprint(b) {
			t.Error("{X T1; Y T2; Z T2} and {X T1; Y T2; Z T1} have one fingerprint")
		}
	}
}

// A slice of a named byte type decodes as []byte does.
func TestWireNamedBytes(t *testing.T) {
	type B uint8
	type S struct{ F []B }
	b, err := initcfg.Encode(&S{F: []B{1, 2, 3}})
	if err != nil {
		t.Fatal(err)
	}
	var got S
	if err := initcfg.Decode(b, &got); err != nil || !reflect.DeepEqual(got.F, []B{1, 2, 3}) {
		t.Errorf("Decode = %v, %v", err, got.F)
	}
}

// A count of elements is bounded by what is left at each element's least
// size: a huge count of wide structs is refused before the slice is made.
func TestWireCountBoundedByElementSize(t *testing.T) {
	type wide struct{ A, B, C, D, E, F, G, H string }
	type S struct{ W []wide }
	head := binary.LittleEndian.AppendUint64(nil, initcfg.Fingerprint(reflect.TypeOf(S{})))
	data := binary.AppendUvarint(head, 1<<20)
	data = append(data, make([]byte, 1<<20)...)
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	err := initcfg.Decode(data, &S{})
	runtime.ReadMemStats(&after)
	if err == nil {
		t.Fatal("a million 8-field elements decoded from a megabyte of zeros")
	}
	if grew := after.TotalAlloc - before.TotalAlloc; grew > 4<<20 {
		t.Errorf("decoding a %d-byte config allocated %d bytes", len(data), grew)
	}
}
