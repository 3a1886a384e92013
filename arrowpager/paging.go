package arrowpager

import (
	"bytes"
	"fmt"
	"hash/maphash"
	"slices"
	"strconv"
	"unsafe"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/ipc"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/vmihailenco/msgpack/v5"

	"github.com/casty-go/casty/pager"
)

// Sub-pages of a Table field:
//
//	schema            msgpack {Rows, BlockRows, Schema: IPC schema stream}
//	<column>/<block>  rows [block*BlockRows, (block+1)*BlockRows) of the
//	                  column: a one-column Arrow IPC record batch
//
// A block page is a format byte then, for pageBatch, the IPC messages of
// the batch without the one-field schema message that would precede them
// (rebuilt from the schema page when decoding), or, for pageStream, a
// complete IPC stream.
const (
	schemaKey  = "schema"
	pageBatch  = 0
	pageStream = 1
)

// eos is the Arrow IPC end-of-stream marker.
var eos = []byte{0xff, 0xff, 0xff, 0xff, 0, 0, 0, 0}

// seed keys block hashes; it is per process, so marks never cross nodes.
var seed = maphash.MakeSeed()

// mark is the pager.Mark of a Table: what its committed state looked like.
type mark struct {
	blockRows  int
	schemaPage []byte
	cols       map[string]*colMark
}

type colMark struct {
	typ    string // arrow type fingerprint
	blocks []blockMark
}

type blockMark struct {
	rows   int
	hash   uint64
	offset int
	bufs   []*memory.Buffer // identity, kept alive so addresses are not reused
}

type schemaPage struct {
	Rows      int
	BlockRows int
	Schema    []byte
}

func (t *Table) blockKey(name string, b int) string { return name + "/" + strconv.Itoa(b) }

// PageDiff implements pager.Pager: it returns the schema page when the
// schema, row count or block size changed, and every block whose content
// changed since prev. A block is hashed (maphash over its validity and value
// bytes for fixed-width types, over its encoded page otherwise) unless
// Config.TrustBuffers is set and its buffers are the ones prev saw; a block
// is shipped when its hash or row count differs from prev's.
func (t *Table) PageDiff(prev pager.Mark) (pager.PagerDiff, error) {
	return t.diff(prev, true)
}

func (t *Table) diff(prev pager.Mark, pages bool) (d pager.PagerDiff, err error) {
	defer func() {
		if r := recover(); r != nil {
			d, err = pager.PagerDiff{}, fmt.Errorf("arrowpager: diff: %v", r)
		}
	}()
	pm, _ := prev.(*mark)
	if len(t.cols) == 0 {
		// The zero table: no pages at all.
		d.Dropped = pm.keys()
		return d, nil
	}
	br := t.cfg.blockRows()
	cur := &mark{blockRows: br, cols: make(map[string]*colMark, len(t.cols))}
	if cur.schemaPage, err = t.encodeSchemaPage(br); err != nil {
		return d, err
	}
	if pm != nil && pm.blockRows != br {
		d.Dropped = pm.keys() // every key moves; the new ones overwrite
		pm = nil
	}
	if pm == nil || !bytes.Equal(pm.schemaPage, cur.schemaPage) {
		if pages {
			d.Pages = append(d.Pages, pager.SubPage{Key: schemaKey, Data: cur.schemaPage})
		}
	}
	nb := (t.rows + br - 1) / br
	for i, f := range t.fields {
		arr := t.cols[i]
		cm := &colMark{typ: f.Type.Fingerprint(), blocks: make([]blockMark, nb)}
		cur.cols[f.Name] = cm
		var old *colMark
		if pm != nil {
			if o := pm.cols[f.Name]; o != nil && o.typ == cm.typ {
				old = o
			}
		}
		var prefix []byte
		for b := range nb {
			start, end := b*br, min((b+1)*br, t.rows)
			bm := blockMark{rows: end - start}
			bm.offset, bm.bufs = identity(arr)
			var ob *blockMark
			if old != nil && b < len(old.blocks) && old.blocks[b].rows == bm.rows {
				ob = &old.blocks[b]
			}
			if ob != nil && t.cfg.TrustBuffers && sameIdentity(ob, &bm) {
				bm.hash = ob.hash
				cm.blocks[b] = bm
				continue
			}
			h, ok := hashBlock(arr, start, end)
			var page []byte
			if !ok {
				if prefix == nil {
					if prefix, err = schemaPrefix(f); err != nil {
						return d, err
					}
				}
				if page, err = encodeBlock(f, prefix, arr, start, end); err != nil {
					return d, err
				}
				h = maphash.Bytes(seed, page)
			}
			bm.hash = h
			cm.blocks[b] = bm
			if ob != nil && ob.hash == h {
				continue
			}
			if !pages {
				continue
			}
			if page == nil {
				if prefix == nil {
					if prefix, err = schemaPrefix(f); err != nil {
						return d, err
					}
				}
				if page, err = encodeBlock(f, prefix, arr, start, end); err != nil {
					return d, err
				}
			}
			d.Pages = append(d.Pages, pager.SubPage{Key: t.blockKey(f.Name, b), Data: page})
		}
		if pm != nil {
			if o := pm.cols[f.Name]; o != nil {
				for b := nb; b < len(o.blocks); b++ {
					d.Dropped = append(d.Dropped, t.blockKey(f.Name, b))
				}
			}
		}
	}
	if pm != nil {
		for name, o := range pm.cols {
			if _, ok := cur.cols[name]; ok {
				continue
			}
			for b := range o.blocks {
				d.Dropped = append(d.Dropped, t.blockKey(name, b))
			}
		}
	}
	if len(d.Dropped) > 0 && len(d.Pages) > 0 {
		written := make(map[string]bool, len(d.Pages))
		for _, p := range d.Pages {
			written[p.Key] = true
		}
		d.Dropped = slices.DeleteFunc(d.Dropped, func(k string) bool { return written[k] })
	}
	d.Mark = cur
	return d, nil
}

// keys lists every sub-key of the state m describes.
func (m *mark) keys() []string {
	if m == nil {
		return nil
	}
	out := []string{schemaKey}
	for name, c := range m.cols {
		for b := range c.blocks {
			out = append(out, name+"/"+strconv.Itoa(b))
		}
	}
	return out
}

func identity(arr arrow.Array) (int, []*memory.Buffer) {
	data := arr.Data()
	return data.Offset(), data.Buffers()
}

func sameIdentity(a, b *blockMark) bool {
	if a.offset != b.offset || len(a.bufs) != len(b.bufs) || len(a.bufs) == 0 {
		return false
	}
	for i := range a.bufs {
		if a.bufs[i] != b.bufs[i] {
			return false
		}
		if a.bufs[i] != nil && unsafe.SliceData(a.bufs[i].Bytes()) != unsafe.SliceData(b.bufs[i].Bytes()) {
			return false
		}
	}
	return true
}

// hashBlock hashes rows [start, end) of a fixed-width column without
// children: the bytes of its validity bitmap and values covering the rows
// (neighbouring bits may be included: that can only cause a false
// positive). It returns false for other layouts.
func hashBlock(arr arrow.Array, start, end int) (uint64, bool) {
	data := arr.Data()
	fw, ok := data.DataType().(arrow.FixedWidthDataType)
	if !ok || len(data.Children()) > 0 || data.DataType().ID() == arrow.DICTIONARY {
		return 0, false
	}
	bw := fw.BitWidth()
	bufs := data.Buffers()
	if bw <= 0 || len(bufs) != 2 || bufs[1] == nil {
		return 0, false
	}
	off := data.Offset()
	var h maphash.Hash
	h.SetSeed(seed)
	var hdr [16]byte
	hdr[0] = byte(end - start)
	hdr[1] = byte((end - start) >> 8)
	hdr[2] = byte((end - start) >> 16)
	hdr[3] = byte((end - start) >> 24)
	hdr[4] = byte((off + start) % 8)
	// Without nulls the bitmap is not encoded (IPC writes none), so it is
	// not hashed either: a table with and one without an all-valid bitmap
	// page identically.
	if v := bufs[0]; v != nil && data.NullN() > 0 {
		hdr[5] = 1
		h.Write(hdr[:])
		bits := v.Bytes()
		lo, hi := (off+start)/8, (off+end+7)/8
		if hi > len(bits) {
			return 0, false
		}
		h.Write(bits[lo:hi])
	} else {
		h.Write(hdr[:])
	}
	vals := bufs[1].Bytes()
	lo, hi := (off+start)*bw/8, ((off+end)*bw+7)/8
	if hi > len(vals) {
		return 0, false
	}
	h.Write(vals[lo:hi])
	return h.Sum64(), true
}

// schemaStream returns the IPC stream of a schema alone, without the
// end-of-stream marker.
func schemaStream(sch *arrow.Schema) ([]byte, error) {
	var buf bytes.Buffer
	w := ipc.NewWriter(&buf, ipc.WithSchema(sch))
	if err := w.Close(); err != nil {
		return nil, fmt.Errorf("arrowpager: encode schema: %w", err)
	}
	b := buf.Bytes()
	if !bytes.HasSuffix(b, eos) {
		return nil, fmt.Errorf("arrowpager: schema stream without end marker")
	}
	return b[:len(b)-len(eos)], nil
}

func schemaPrefix(f arrow.Field) ([]byte, error) {
	return schemaStream(arrow.NewSchema([]arrow.Field{f}, nil))
}

func (t *Table) encodeSchemaPage(br int) ([]byte, error) {
	s, err := schemaStream(t.Schema())
	if err != nil {
		return nil, err
	}
	return msgpack.Marshal(&schemaPage{Rows: t.rows, BlockRows: br, Schema: s})
}

// encodeBlock encodes rows [start, end) of column f as a block page.
func encodeBlock(f arrow.Field, prefix []byte, arr arrow.Array, start, end int) ([]byte, error) {
	sl := array.NewSlice(arr, int64(start), int64(end))
	defer sl.Release()
	sch := arrow.NewSchema([]arrow.Field{f}, nil)
	rec := array.NewRecordBatch(sch, []arrow.Array{sl}, int64(end-start))
	defer rec.Release()
	var buf bytes.Buffer
	buf.Grow(1024 + sliceBytes(arr, start, end))
	buf.WriteByte(pageBatch)
	w := ipc.NewWriter(&buf, ipc.WithSchema(sch))
	if err := w.Write(rec); err != nil {
		return nil, fmt.Errorf("arrowpager: encode block of %q: %w", f.Name, err)
	}
	if err := w.Close(); err != nil {
		return nil, fmt.Errorf("arrowpager: encode block of %q: %w", f.Name, err)
	}
	b := buf.Bytes()
	body := b[1:]
	if bytes.HasPrefix(body, prefix) && bytes.HasSuffix(body, eos) && len(body) >= len(prefix)+len(eos) {
		n := copy(b[1:], body[len(prefix):len(body)-len(eos)])
		return b[: 1+n : 1+n], nil
	}
	b[0] = pageStream
	return b, nil
}

// sliceBytes estimates the encoded size of rows [start, end) of arr, to
// size the encoding buffer once.
func sliceBytes(arr arrow.Array, start, end int) int {
	if fw, ok := arr.DataType().(arrow.FixedWidthDataType); ok && fw.BitWidth() > 0 {
		return (end-start)*fw.BitWidth()/8 + (end-start)/8
	}
	return 0
}

// decodeBlock decodes a block page of column f holding rows rows. Bad
// input is an error wrapping ErrCorrupt, never a panic.
func decodeBlock(f arrow.Field, prefix, page []byte, rows int) (arr arrow.Array, err error) {
	defer func() {
		if r := recover(); r != nil {
			arr, err = nil, fmt.Errorf("%w: block of %q: %v", ErrCorrupt, f.Name, r)
		}
	}()
	if len(page) == 0 {
		return nil, fmt.Errorf("%w: empty block of %q", ErrCorrupt, f.Name)
	}
	var stream []byte
	switch page[0] {
	case pageBatch:
		stream = make([]byte, 0, len(prefix)+len(page)-1+len(eos))
		stream = append(append(append(stream, prefix...), page[1:]...), eos...)
	case pageStream:
		stream = page[1:]
	default:
		return nil, fmt.Errorf("%w: block of %q: format %d", ErrCorrupt, f.Name, page[0])
	}
	if err := checkFraming(stream); err != nil {
		return nil, fmt.Errorf("block of %q: %w", f.Name, err)
	}
	r, err := ipc.NewReader(bytes.NewReader(stream), ipc.WithAllocator(allocFor(stream)))
	if err != nil {
		return nil, fmt.Errorf("%w: block of %q: %v", ErrCorrupt, f.Name, err)
	}
	defer r.Release()
	if r.Schema().NumFields() != 1 || !arrow.TypeEqual(r.Schema().Field(0).Type, f.Type) {
		return nil, fmt.Errorf("%w: block of %q has schema %s", ErrCorrupt, f.Name, r.Schema())
	}
	if !r.Next() {
		return nil, fmt.Errorf("%w: block of %q: no batch (%v)", ErrCorrupt, f.Name, r.Err())
	}
	rec := r.RecordBatch()
	if int(rec.NumRows()) != rows || rec.NumCols() != 1 || rec.Column(0).Len() != rows {
		return nil, fmt.Errorf("%w: block of %q has %d rows, want %d", ErrCorrupt, f.Name, rec.NumRows(), rows)
	}
	col := rec.Column(0)
	if err := array.ValidateFull(col); err != nil {
		return nil, fmt.Errorf("%w: block of %q: %v", ErrCorrupt, f.Name, err)
	}
	col.Retain()
	return col, nil
}

func decodeSchemaPage(b []byte) (sp schemaPage, sch *arrow.Schema, err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("%w: schema page: %v", ErrCorrupt, r)
		}
	}()
	if err := pager.ValidateMsgpack(b); err != nil {
		return sp, nil, fmt.Errorf("%w: schema page: %w", ErrCorrupt, err)
	}
	if err := msgpack.Unmarshal(b, &sp); err != nil {
		return sp, nil, fmt.Errorf("%w: schema page: %v", ErrCorrupt, err)
	}
	if sp.Rows < 0 || sp.BlockRows <= 0 {
		return sp, nil, fmt.Errorf("%w: schema page: %d rows in blocks of %d", ErrCorrupt, sp.Rows, sp.BlockRows)
	}
	stream := append(bytes.Clone(sp.Schema), eos...)
	if err := checkFraming(stream); err != nil {
		return sp, nil, fmt.Errorf("%w: schema page: %w", ErrCorrupt, err)
	}
	r, err := ipc.NewReader(bytes.NewReader(stream), ipc.WithAllocator(allocFor(stream)))
	if err != nil {
		return sp, nil, fmt.Errorf("%w: schema page: %v", ErrCorrupt, err)
	}
	defer r.Release()
	return sp, r.Schema(), nil
}

// PageLoad implements pager.Pager: it rebuilds the table from its sub-pages
// (none: the zero table). Missing blocks, blocks of the wrong type or length
// and undecodable bytes fail with ErrCorrupt; the table is then left empty.
func (t *Table) PageLoad(pages []pager.SubPage) (pager.Mark, error) {
	cfg := t.cfg
	t.Release()
	if len(pages) == 0 {
		return nil, nil
	}
	var sp schemaPage
	var sch *arrow.Schema
	blocks := map[string][]byte{}
	found := false
	for _, p := range pages {
		if p.Key == schemaKey {
			var err error
			if sp, sch, err = decodeSchemaPage(p.Data); err != nil {
				return nil, err
			}
			found = true
			continue
		}
		blocks[p.Key] = p.Data
	}
	if !found {
		return nil, fmt.Errorf("%w: no schema page", ErrCorrupt)
	}
	nb := (sp.Rows + sp.BlockRows - 1) / sp.BlockRows
	if len(blocks) != nb*sch.NumFields() {
		return nil, fmt.Errorf("%w: %d block pages for %d columns of %d blocks", ErrCorrupt, len(blocks), sch.NumFields(), nb)
	}
	var out Table
	out.cfg = cfg
	out.cfg.BlockRows = sp.BlockRows
	for _, f := range sch.Fields() {
		if out.index(f.Name) >= 0 || f.Name == "" {
			out.Release()
			return nil, fmt.Errorf("%w: duplicate or empty column %q", ErrCorrupt, f.Name)
		}
		prefix, err := schemaPrefix(f)
		if err != nil {
			out.Release()
			return nil, err
		}
		parts := make([]arrow.Array, 0, nb)
		release := func() {
			for _, a := range parts {
				a.Release()
			}
		}
		for b := range nb {
			page, ok := blocks[out.blockKey(f.Name, b)]
			if !ok {
				release()
				out.Release()
				return nil, fmt.Errorf("%w: column %q lacks block %d", ErrCorrupt, f.Name, b)
			}
			rows := min((b+1)*sp.BlockRows, sp.Rows) - b*sp.BlockRows
			a, err := decodeBlock(f, prefix, page, rows)
			if err != nil {
				release()
				out.Release()
				return nil, err
			}
			parts = append(parts, a)
		}
		col, err := concat(f, parts)
		release()
		if err != nil {
			out.Release()
			return nil, err
		}
		err = out.SetColumn(f, col)
		col.Release()
		if err != nil {
			out.Release()
			return nil, fmt.Errorf("%w: %v", ErrCorrupt, err)
		}
	}
	out.meta = sch.Metadata()
	out.rows = sp.Rows
	*t = out
	d, err := t.diff(nil, false)
	if err != nil {
		return nil, err
	}
	return d.Mark, nil
}

func concat(f arrow.Field, parts []arrow.Array) (arr arrow.Array, err error) {
	defer func() {
		if r := recover(); r != nil {
			arr, err = nil, fmt.Errorf("%w: column %q: %v", ErrCorrupt, f.Name, r)
		}
	}()
	switch len(parts) {
	case 0:
		return array.MakeArrayOfNull(memory.DefaultAllocator, f.Type, 0), nil
	case 1:
		parts[0].Retain()
		return parts[0], nil
	}
	arr, err = array.Concatenate(parts, memory.DefaultAllocator)
	if err != nil {
		return nil, fmt.Errorf("%w: column %q: %v", ErrCorrupt, f.Name, err)
	}
	return arr, nil
}
