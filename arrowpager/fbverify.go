package arrowpager

import (
	"encoding/binary"
	"fmt"
)

// Arrow IPC metadata is a flatbuffer, and arrow-go reads flatbuffers
// without verifying them: a corrupt vector length becomes a make() of tens
// of gigabytes (a fatal out-of-memory no recover catches) and a cyclic
// child reference becomes unbounded recursion. verifyMessage checks, before
// the reader sees a message, every offset, vector, string and nested table
// the reader will follow (the tables of Message.fbs and Schema.fbs in the
// Arrow format specification), bounds the nesting depth, and bounds the
// total number of tables visited by the buffer size, so shared or cyclic
// references are refused too.

const maxFBDepth = 64

type fbVerifier struct {
	b      []byte
	budget int // tables still allowed to be visited
	body   int64
	maxLen int64 // largest plausible node length
}

func errFB(what string, args ...any) error {
	return fmt.Errorf("%w: message metadata: %s", ErrCorrupt, fmt.Sprintf(what, args...))
}

// verifyMessage verifies meta, the flatbuffer of one IPC message whose
// body has body bytes and whose whole stream has streamLen bytes.
func verifyMessage(meta []byte, body int64, streamLen int) error {
	v := &fbVerifier{b: meta, budget: len(meta)/4 + 8, body: body, maxLen: 8*int64(streamLen) + 1<<20}
	if len(meta) < 4 {
		return errFB("short")
	}
	root := int64(binary.LittleEndian.Uint32(meta))
	return v.message(root)
}

func (v *fbVerifier) u32(at int64) (uint32, error) {
	if at < 0 || at+4 > int64(len(v.b)) {
		return 0, errFB("offset %d out of range", at)
	}
	return binary.LittleEndian.Uint32(v.b[at:]), nil
}

// table checks the table at t and returns an accessor for its fields.
func (v *fbVerifier) table(t int64) (fbTable, error) {
	if v.budget--; v.budget < 0 {
		return fbTable{}, errFB("too many tables (shared or cyclic references)")
	}
	so, err := v.u32(t)
	if err != nil {
		return fbTable{}, err
	}
	vt := t - int64(int32(so))
	if vt < 0 || vt+4 > int64(len(v.b)) {
		return fbTable{}, errFB("vtable out of range")
	}
	vsize := int64(binary.LittleEndian.Uint16(v.b[vt:]))
	tsize := int64(binary.LittleEndian.Uint16(v.b[vt+2:]))
	if vsize < 4 || vsize%2 != 0 || vt+vsize > int64(len(v.b)) || t+tsize > int64(len(v.b)) {
		return fbTable{}, errFB("vtable or table size out of range")
	}
	ft := fbTable{v: v, t: t, vt: vt, vsize: vsize, tsize: tsize}
	for i := int64(0); 4+2*i < vsize; i++ {
		off := int64(binary.LittleEndian.Uint16(v.b[vt+4+2*i:]))
		if off != 0 && off+1 > tsize {
			return fbTable{}, errFB("field %d outside its table", i)
		}
	}
	return ft, nil
}

type fbTable struct {
	v     *fbVerifier
	t, vt int64
	vsize int64
	tsize int64
}

// field returns the absolute position of field i, or -1 when absent.
func (ft fbTable) field(i int) int64 {
	slot := int64(4 + 2*i)
	if slot+2 > ft.vsize {
		return -1
	}
	off := int64(binary.LittleEndian.Uint16(ft.v.b[ft.vt+slot:]))
	if off == 0 {
		return -1
	}
	return ft.t + off
}

// scalar checks that a scalar of size bytes fits at field i; it returns its
// position or -1.
func (ft fbTable) scalar(i int, size int64) (int64, error) {
	p := ft.field(i)
	if p < 0 {
		return -1, nil
	}
	if p+size > ft.t+ft.tsize {
		return -1, errFB("scalar field %d overflows its table", i)
	}
	return p, nil
}

// ref follows the uoffset stored at field i; -1 when absent.
func (ft fbTable) ref(i int) (int64, error) {
	p, err := ft.scalar(i, 4)
	if p < 0 || err != nil {
		return -1, err
	}
	u, err := ft.v.u32(p)
	if err != nil {
		return -1, err
	}
	return p + int64(u), nil
}

// vector checks the vector at field i with elements of elem bytes and
// returns the position of its first element and its length.
func (ft fbTable) vector(i int, elem int64) (int64, int64, error) {
	at, err := ft.ref(i)
	if at < 0 || err != nil {
		return -1, 0, err
	}
	n, err := ft.v.u32(at)
	if err != nil {
		return -1, 0, err
	}
	start := at + 4
	if int64(n) > (int64(len(ft.v.b))-start)/max(elem, 1) || start+int64(n)*elem > int64(len(ft.v.b)) {
		return -1, 0, errFB("vector of %d elements at field %d overflows", n, i)
	}
	return start, int64(n), nil
}

// tables calls f on each table of the vector of tables at field i.
func (ft fbTable) tables(i int, depth int, f func(t int64, depth int) error) error {
	start, n, err := ft.vector(i, 4)
	if start < 0 || err != nil {
		return err
	}
	for j := range n {
		e := start + 4*j
		u, err := ft.v.u32(e)
		if err != nil {
			return err
		}
		if err := f(e+int64(u), depth); err != nil {
			return err
		}
	}
	return nil
}

func (ft fbTable) str(i int) error { _, _, err := ft.vector(i, 1); return err }

func (ft fbTable) u8(i int) (byte, error) {
	p, err := ft.scalar(i, 1)
	if p < 0 || err != nil {
		return 0, err
	}
	return ft.v.b[p], nil
}

// Message { version, header_type, header, bodyLength, custom_metadata }
func (v *fbVerifier) message(t int64) error {
	m, err := v.table(t)
	if err != nil {
		return err
	}
	for i, size := range []int64{2, 1, 4, 8} {
		if _, err := m.scalar(i, size); err != nil {
			return err
		}
	}
	if err := m.tables(4, 0, v.keyValue); err != nil {
		return err
	}
	kind, err := m.u8(1)
	if err != nil {
		return err
	}
	h, err := m.ref(2)
	if err != nil || h < 0 {
		return err
	}
	switch kind {
	case 1:
		return v.schema(h)
	case 2:
		return v.dictionaryBatch(h)
	case 3:
		return v.recordBatch(h)
	}
	return errFB("unsupported message header %d", kind)
}

// KeyValue { key: string, value: string }
func (v *fbVerifier) keyValue(t int64, _ int) error {
	kv, err := v.table(t)
	if err != nil {
		return err
	}
	if err := kv.str(0); err != nil {
		return err
	}
	return kv.str(1)
}

// Schema { endianness, fields: [Field], custom_metadata, features: [long] }
func (v *fbVerifier) schema(t int64) error {
	s, err := v.table(t)
	if err != nil {
		return err
	}
	if _, err := s.scalar(0, 2); err != nil {
		return err
	}
	if err := s.tables(1, 0, v.field); err != nil {
		return err
	}
	if err := s.tables(2, 0, v.keyValue); err != nil {
		return err
	}
	_, _, err = s.vector(3, 8)
	return err
}

// Field { name, nullable, type_type, type, dictionary, children, custom_metadata }
func (v *fbVerifier) field(t int64, depth int) error {
	if depth > maxFBDepth {
		return errFB("fields nested deeper than %d", maxFBDepth)
	}
	f, err := v.table(t)
	if err != nil {
		return err
	}
	if err := f.str(0); err != nil {
		return err
	}
	if _, err := f.scalar(1, 1); err != nil {
		return err
	}
	typ, err := f.u8(2)
	if err != nil {
		return err
	}
	if tt, err := f.ref(3); err != nil {
		return err
	} else if tt >= 0 {
		if err := v.typeTable(typ, tt); err != nil {
			return err
		}
	}
	if d, err := f.ref(4); err != nil {
		return err
	} else if d >= 0 {
		// DictionaryEncoding { id, indexType: Int, isOrdered, dictionaryKind }
		de, err := v.table(d)
		if err != nil {
			return err
		}
		if it, err := de.ref(1); err != nil {
			return err
		} else if it >= 0 {
			if _, err := v.table(it); err != nil {
				return err
			}
		}
	}
	if err := f.tables(5, depth+1, v.field); err != nil {
		return err
	}
	return f.tables(6, 0, v.keyValue)
}

// typeTable checks the union member of Field.type.
func (v *fbVerifier) typeTable(typ byte, t int64) error {
	tt, err := v.table(t)
	if err != nil {
		return err
	}
	switch typ {
	case 10: // Timestamp { unit, timezone: string }
		return tt.str(1)
	case 14: // Union { mode, typeIds: [int] }
		_, _, err := tt.vector(1, 4)
		return err
	}
	return nil
}

// DictionaryBatch { id, data: RecordBatch, isDelta }
func (v *fbVerifier) dictionaryBatch(t int64) error {
	d, err := v.table(t)
	if err != nil {
		return err
	}
	r, err := d.ref(1)
	if err != nil || r < 0 {
		return err
	}
	return v.recordBatch(r)
}

// RecordBatch { length, nodes: [FieldNode], buffers: [Buffer], compression,
// variadicBufferCounts: [long] }
func (v *fbVerifier) recordBatch(t int64) error {
	r, err := v.table(t)
	if err != nil {
		return err
	}
	if p, err := r.scalar(0, 8); err != nil {
		return err
	} else if p >= 0 {
		if n := int64(binary.LittleEndian.Uint64(v.b[p:])); n < 0 || n > v.maxLen {
			return errFB("batch length %d", n)
		}
	}
	start, n, err := r.vector(1, 16)
	if err != nil {
		return err
	}
	for j := range n { // FieldNode { length, null_count }
		l := int64(binary.LittleEndian.Uint64(v.b[start+16*j:]))
		nulls := int64(binary.LittleEndian.Uint64(v.b[start+16*j+8:]))
		if l < 0 || l > v.maxLen || nulls < 0 || nulls > l {
			return errFB("node of length %d with %d nulls", l, nulls)
		}
	}
	start, n, err = r.vector(2, 16)
	if err != nil {
		return err
	}
	for j := range n { // Buffer { offset, length }
		off := int64(binary.LittleEndian.Uint64(v.b[start+16*j:]))
		l := int64(binary.LittleEndian.Uint64(v.b[start+16*j+8:]))
		if off < 0 || l < 0 || off > v.body || l > v.body-off {
			return errFB("buffer [%d, +%d) outside a %d-byte body", off, l, v.body)
		}
	}
	if c, err := r.ref(3); err != nil {
		return err
	} else if c >= 0 {
		if _, err := v.table(c); err != nil {
			return err
		}
	}
	_, _, err = r.vector(4, 8)
	return err
}
