package typed

import (
	"reflect"
	"unsafe"
)

// FlatCopy copies one struct value, known when the FlatCopy is made, with
// two allocations however many pointers it holds: the struct, and one
// block that holds a copy of every value it points to. It serves values
// that Set built from the top-level keys of a document, whose pointers
// each point to a value holding no pointer at all (a *bool, an *int32, a
// *metav1.Duration); a generated DeepCopy allocates once for each of them.
// A copy shares nothing with the original that either could change: its
// strings are shared, and strings are immutable.
type FlatCopy struct {
	src   reflect.Value // pointer to the struct
	slots []slot
	words int // the size of the block, in 8-byte words
}

// slot is a non-nil pointer field of the source: where it is in the
// struct, how many bytes it points to, and where its copy goes in the
// block.
type slot struct {
	offset uintptr
	size   uintptr
	word   int
}

// NewFlatCopy returns a FlatCopy of obj, a pointer to a struct that is not
// changed from then on, or false when obj holds something it cannot copy
// flatly: a pointer to a value that holds pointers or strings, or a
// non-empty map, slice, interface, channel or function. Fields that are
// pointer-free (strings included), and nil pointers, maps and slices, are
// copied by the struct's copy itself.
func NewFlatCopy(obj any) (*FlatCopy, bool) {
	v := reflect.ValueOf(obj)
	if v.Kind() != reflect.Pointer || v.IsNil() || v.Elem().Kind() != reflect.Struct {
		return nil, false
	}
	c := &FlatCopy{src: v}
	if !c.walk(v.Elem(), 0) {
		return nil, false
	}
	return c, true
}

// walk records the pointer fields of v, a struct at offset from the
// source's start, reporting false for a field it cannot copy.
func (c *FlatCopy) walk(v reflect.Value, offset uintptr) bool {
	t := v.Type()
	for i := 0; i < t.NumField(); i++ {
		f, fv := t.Field(i), v.Field(i)
		switch {
		case pointerFree(f.Type):
		case f.Type.Kind() == reflect.Struct:
			if !c.walk(fv, offset+f.Offset) {
				return false
			}
		case fv.IsZero():
		case f.Type.Kind() == reflect.Pointer && noPointers(f.Type.Elem()):
			size := f.Type.Elem().Size()
			if size == 0 || f.Type.Elem().Align() > 8 {
				return false
			}
			c.slots = append(c.slots, slot{offset: offset + f.Offset, size: size, word: c.words})
			c.words += int((size + 7) / 8)
		default:
			return false
		}
	}
	return true
}

// Copy returns a copy of the FlatCopy's value, as a pointer of its type.
// It is safe for concurrent use.
func (c *FlatCopy) Copy() any {
	dst := reflect.New(c.src.Type().Elem())
	dst.Elem().Set(c.src.Elem())
	if len(c.slots) == 0 {
		return dst.Interface()
	}
	block := make([]uint64, c.words) // holds no pointer: the values copied hold none
	from, to := c.src.UnsafePointer(), dst.UnsafePointer()
	for _, s := range c.slots {
		at := unsafe.Pointer(&block[s.word])
		pointee := *(*unsafe.Pointer)(unsafe.Add(from, s.offset))
		copy(unsafe.Slice((*byte)(at), s.size), unsafe.Slice((*byte)(pointee), s.size))
		*(*unsafe.Pointer)(unsafe.Add(to, s.offset)) = at
	}
	return dst.Interface()
}
