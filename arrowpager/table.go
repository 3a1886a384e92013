package arrowpager

import (
	"bytes"
	"fmt"
	"slices"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/ipc"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/vmihailenco/msgpack/v5"

	"github.com/casty-go/casty/pager"
)

// Table is a columnar table usable as an actor state field; it implements
// pager.Pager, so a Table field is paged per column per block of rows:
//
//	type Telemetry struct {
//		Readings arrowpager.Table // pages "Readings/schema", "Readings/<column>/<block>"
//		Revision int
//	}
//
// Each column is one arrow.Array of NumRows() values. Edit a table by
// replacing columns (SetColumn, DropColumn, Append) or by writing in place
// into a column's values (Column(i).(*array.Float64).Float64Values()[r] = x):
// both are detected, the first by buffer identity and content hash, the
// second by content hash (see Config.TrustBuffers for the trade-off).
//
// The zero Table has no columns and no pages. A Table holds references to
// its arrays; copying a Table value shares them (use Clone for an independent
// copy). It is not safe for concurrent use.
type Table struct {
	cfg    Config
	fields []arrow.Field
	meta   arrow.Metadata
	cols   []arrow.Array
	rows   int
}

// FromRecord returns a table holding rec's columns (retained) and schema.
// Column names must be unique and non-empty.
func FromRecord(rec arrow.RecordBatch) (Table, error) {
	var t Table
	sch := rec.Schema()
	for i, f := range sch.Fields() {
		if t.index(f.Name) >= 0 {
			t.Release()
			return Table{}, fmt.Errorf("%w: duplicate column %q", ErrShape, f.Name)
		}
		if err := t.SetColumn(f, rec.Column(i)); err != nil {
			t.Release()
			return Table{}, err
		}
	}
	t.meta = sch.Metadata()
	return t, nil
}

// SetConfig changes how the table is paged (a nil-equivalent zero Config
// means defaults). Changing BlockRows re-pages the whole table once.
func (t *Table) SetConfig(c Config) error {
	if err := c.Validate(); err != nil {
		return err
	}
	t.cfg = c
	return nil
}

// Config returns the table's paging configuration.
func (t *Table) Config() Config { return t.cfg }

// Schema returns the table's schema (field names, types, order, metadata).
func (t *Table) Schema() *arrow.Schema {
	return arrow.NewSchema(slices.Clone(t.fields), &t.meta)
}

// NumRows returns the number of rows.
func (t *Table) NumRows() int { return t.rows }

// NumCols returns the number of columns.
func (t *Table) NumCols() int { return len(t.cols) }

// Column returns column i (not retained: valid while the table holds it).
func (t *Table) Column(i int) arrow.Array { return t.cols[i] }

// ColumnByName returns the column named name.
func (t *Table) ColumnByName(name string) (arrow.Array, bool) {
	i := t.index(name)
	if i < 0 {
		return nil, false
	}
	return t.cols[i], true
}

func (t *Table) index(name string) int {
	return slices.IndexFunc(t.fields, func(f arrow.Field) bool { return f.Name == name })
}

// SetColumn replaces the column named f.Name, or appends it when absent. Its
// length must equal NumRows() unless the table has no columns. The array is
// retained; a replaced array is released.
func (t *Table) SetColumn(f arrow.Field, arr arrow.Array) error {
	if f.Name == "" {
		return fmt.Errorf("%w: empty column name", ErrShape)
	}
	if !arrow.TypeEqual(f.Type, arr.DataType()) {
		return fmt.Errorf("%w: column %q declared %s, array is %s", ErrShape, f.Name, f.Type, arr.DataType())
	}
	i := t.index(f.Name)
	only := len(t.cols) == 0 || (len(t.cols) == 1 && i == 0)
	if !only && arr.Len() != t.rows {
		return fmt.Errorf("%w: column %q has %d rows, table has %d", ErrShape, f.Name, arr.Len(), t.rows)
	}
	arr.Retain()
	if i < 0 {
		t.fields = append(t.fields, f)
		t.cols = append(t.cols, arr)
	} else {
		t.cols[i].Release()
		t.fields[i], t.cols[i] = f, arr
	}
	t.rows = arr.Len()
	return nil
}

// DropColumn removes the column named name and reports whether it existed.
func (t *Table) DropColumn(name string) bool {
	i := t.index(name)
	if i < 0 {
		return false
	}
	t.cols[i].Release()
	t.fields = slices.Delete(t.fields, i, i+1)
	t.cols = slices.Delete(t.cols, i, i+1)
	if len(t.cols) == 0 {
		t.rows = 0
	}
	return true
}

// Append adds rec's rows at the end. rec must have the table's column names
// and types in the same order (any schema when the table has no columns).
// Only the blocks holding the new rows are re-paged: earlier blocks keep
// their content, which the content hash recognises although Append builds
// new buffers.
func (t *Table) Append(rec arrow.RecordBatch) error {
	if len(t.cols) == 0 {
		nt, err := FromRecord(rec)
		if err != nil {
			return err
		}
		nt.cfg = t.cfg
		*t = nt
		return nil
	}
	sch := rec.Schema()
	if sch.NumFields() != len(t.fields) {
		return fmt.Errorf("%w: appending %d columns to %d", ErrShape, sch.NumFields(), len(t.fields))
	}
	for i, f := range sch.Fields() {
		if f.Name != t.fields[i].Name || !arrow.TypeEqual(f.Type, t.fields[i].Type) {
			return fmt.Errorf("%w: appended column %d is %s %s, table has %s %s", ErrShape, i, f.Name, f.Type, t.fields[i].Name, t.fields[i].Type)
		}
	}
	next := make([]arrow.Array, len(t.cols))
	for i := range t.cols {
		c, err := array.Concatenate([]arrow.Array{t.cols[i], rec.Column(i)}, memory.DefaultAllocator)
		if err != nil {
			for _, a := range next[:i] {
				a.Release()
			}
			return fmt.Errorf("arrowpager: append column %q: %w", t.fields[i].Name, err)
		}
		next[i] = c
	}
	for i := range t.cols {
		t.cols[i].Release()
	}
	t.cols = next
	t.rows += int(rec.NumRows())
	return nil
}

// Record returns the table as one record batch; the caller releases it.
func (t *Table) Record() arrow.RecordBatch {
	return array.NewRecordBatch(t.Schema(), t.cols, int64(t.rows))
}

// Clone returns a table with the same schema and configuration whose
// columns are deep copies (new buffers).
func (t *Table) Clone() (Table, error) {
	c := Table{cfg: t.cfg, meta: t.meta}
	for i, f := range t.fields {
		cp, err := array.Concatenate([]arrow.Array{t.cols[i]}, memory.DefaultAllocator)
		if err != nil {
			c.Release()
			return Table{}, err
		}
		c.fields = append(c.fields, f)
		c.cols = append(c.cols, cp)
	}
	c.rows = t.rows
	return c, nil
}

// Release releases the table's references to its arrays and empties it.
func (t *Table) Release() {
	for _, c := range t.cols {
		c.Release()
	}
	*t = Table{cfg: t.cfg}
}

// EncodeMsgpack encodes the whole table as one msgpack bin holding an Arrow
// IPC stream (what an integral field would ship); nil for the zero table.
func (t Table) EncodeMsgpack(enc *msgpack.Encoder) error {
	if len(t.cols) == 0 {
		return enc.EncodeNil()
	}
	rec := t.Record()
	defer rec.Release()
	var buf bytes.Buffer
	w := ipc.NewWriter(&buf, ipc.WithSchema(rec.Schema()))
	if err := w.Write(rec); err != nil {
		return err
	}
	if err := w.Close(); err != nil {
		return err
	}
	return enc.EncodeBytes(buf.Bytes())
}

// DecodeMsgpack decodes the form written by EncodeMsgpack.
func (t *Table) DecodeMsgpack(dec *msgpack.Decoder) error {
	b, err := readBin(dec)
	if err != nil {
		return err
	}
	t.Release()
	if len(b) == 0 {
		return nil
	}
	nt, err := decodeStream(b)
	if err != nil {
		return err
	}
	nt.cfg = t.cfg
	*t = nt
	return nil
}

// decodeStream reads a whole-table IPC stream, never panicking.
func decodeStream(b []byte) (t Table, err error) {
	defer func() {
		if r := recover(); r != nil {
			t, err = Table{}, fmt.Errorf("%w: %v", ErrCorrupt, r)
		}
	}()
	if err := checkFraming(b); err != nil {
		return Table{}, err
	}
	r, err := ipc.NewReader(bytes.NewReader(b), ipc.WithAllocator(allocFor(b)))
	if err != nil {
		return Table{}, fmt.Errorf("%w: %v", ErrCorrupt, err)
	}
	defer r.Release()
	sch := r.Schema()
	var out Table
	for _, f := range sch.Fields() {
		if err := out.SetColumn(f, array.MakeArrayOfNull(memory.DefaultAllocator, f.Type, 0)); err != nil {
			return Table{}, err
		}
	}
	out.meta = sch.Metadata()
	for r.Next() {
		rec := r.RecordBatch()
		if err := array.ValidateRecordFull(rec); err != nil {
			return Table{}, fmt.Errorf("%w: %v", ErrCorrupt, err)
		}
		if err := out.Append(rec); err != nil {
			return Table{}, err
		}
	}
	if err := r.Err(); err != nil {
		return Table{}, fmt.Errorf("%w: %v", ErrCorrupt, err)
	}
	return out, nil
}

var _ pager.Pager = (*Table)(nil)

// readBin reads a msgpack bin without trusting its declared length: the
// buffer grows by at most 1 MiB per read, so a lying length costs no more
// memory than the bytes actually present.
func readBin(dec *msgpack.Decoder) ([]byte, error) {
	n, err := dec.DecodeBytesLen()
	if err != nil || n <= 0 {
		return nil, err
	}
	const step = 1 << 20
	b := make([]byte, 0, min(n, step))
	for len(b) < n {
		k := min(n-len(b), step)
		b = append(b, make([]byte, k)...)
		if err := dec.ReadFull(b[len(b)-k:]); err != nil {
			return nil, fmt.Errorf("%w: table bytes: %v", ErrCorrupt, err)
		}
	}
	return b, nil
}

// DescribePages implements pager.PageDescriber for Explain.
func (t *Table) DescribePages() string {
	return fmt.Sprintf("schema + 1 page per column per %d-row block, hash-verified", t.cfg.blockRows())
}
