package pager

import (
	"bytes"
	"fmt"

	"github.com/vmihailenco/msgpack/v5"
)

// Page is one unit of replicated state: its hierarchical key, its bytes and
// the stamp of the commit that wrote it.
//
// Keys are "field" for an integral field, "field/<entry>" for a tracked-map
// entry and "field/<sub>" for a Pager field, where field is the state field's
// name. An absent page means the field's zero value (or, under a tracked map
// or a Pager, an absent entry or sub-page).
//
// Inside a Delta a page may carry the zero Stamp, meaning "written by this
// delta's commit": Store.Apply stamps it with Delta.Stamp.
type Page struct {
	// Key is the page's hierarchical key ("Field", "Field/<sub>").
	Key string
	// Data is the page's bytes (msgpack for integral fields and tracked
	// entries, the pager's format for Paged fields).
	Data []byte
	// Stamp names the commit that wrote Data; zero inside a Delta means
	// the delta's own stamp.
	Stamp Stamp `msgpack:",omitempty"`
}

// SubPage is a page as a Pager sees it: Key is relative to the field (never
// empty, may contain '/').
type SubPage struct {
	// Key is relative to the field: "temp/3" for the page "Readings/temp/3".
	Key string
	// Data is the sub-page's bytes.
	Data []byte
}

// PageInfo describes a page held by a Store, without its bytes.
type PageInfo struct {
	Key   string // the page's key
	Stamp Stamp  // the commit that wrote it
	Size  int    // len(Data) in bytes
}

// Delta is one commit (or one part of one) on its way to a replica: the pages
// that changed and the keys that were dropped, all under Stamp, computed
// over the state committed at Basis.
//
// With Full set, Pages is the complete page set as of Stamp and replaces
// everything the replica holds (Dropped is then empty).
//
// A delta larger than Config.BatchSize travels as Parts > 1 parts numbered
// Part = 0..Parts-1, all with the same Stamp and Basis; a Store publishes the
// commit only once every part arrived. Dropped keys ride in the final part.
// Parts == 0 is read as 1.
type Delta struct {
	// Stamp names this commit; it becomes the store's stamp.
	Stamp Stamp
	// Basis is the owner's previous committed stamp: the state the delta
	// was computed over (zero for the first commit).
	Basis Stamp
	// Full marks a complete page set that replaces everything.
	Full bool `msgpack:",omitempty"`
	// Part is this part's index, 0..Parts-1.
	Part int `msgpack:",omitempty"`
	// Parts is the number of parts of the commit (0 or 1: one part).
	Parts int `msgpack:",omitempty"`
	// Pages are the pages written by the commit.
	Pages []Page `msgpack:",omitempty"`
	// Dropped are the keys removed by the commit (back to the zero value).
	Dropped []string `msgpack:",omitempty"`
}

// MaxParts bounds the parts of one commit (65,536 parts of 256 KiB is
// 16 GiB); a delta claiming more is corrupt.
const MaxParts = 1 << 16

// Final reports whether d is the last part of its commit.
func (d *Delta) Final() bool { return d.Part >= d.parts()-1 }

func (d *Delta) parts() int {
	if d.Parts <= 0 {
		return 1
	}
	return d.Parts
}

// Empty reports whether d carries nothing: no page, no drop, not full. An
// empty delta is never sent (a handler that changed nothing costs 0 bytes).
func (d *Delta) Empty() bool { return !d.Full && len(d.Pages) == 0 && len(d.Dropped) == 0 }

// Size estimates d's encoded size in bytes (page keys and data plus a fixed
// overhead per page); Split uses it.
func (d *Delta) Size() int {
	n := deltaOverhead
	for i := range d.Pages {
		n += pageOverhead + len(d.Pages[i].Key) + len(d.Pages[i].Data)
	}
	for _, k := range d.Dropped {
		n += 3 + len(k)
	}
	return n
}

// deltaOverhead bounds the msgpack framing of a delta's header: field
// names, two stamps, flags and part numbers.
const deltaOverhead = 1 + 2*(6+2+stampSize) + (5 + 1) + 2*(6+9) + 2*(8+5)

// pageOverhead bounds the msgpack framing of one page inside a delta.
const pageOverhead = 16 + 4 + 5 + 5 + 6 + stampSize + 2

// Split cuts d into parts of at most batch bytes each (by Size), keeping
// page order; a page larger than batch travels alone. All parts share d's
// Stamp, Basis and Full flag; Dropped rides in the last part. A delta that
// fits is returned as the single element. batch <= 0 means DefaultBatchSize.
func (d Delta) Split(batch int) []Delta {
	if batch <= 0 {
		batch = DefaultBatchSize
	}
	if d.Size() <= batch {
		d.Part, d.Parts = 0, 1
		return []Delta{d}
	}
	var parts []Delta
	cur := Delta{Stamp: d.Stamp, Basis: d.Basis, Full: d.Full}
	size := cur.Size()
	for _, p := range d.Pages {
		ps := pageOverhead + len(p.Key) + len(p.Data)
		if len(cur.Pages) > 0 && size+ps > batch {
			parts = append(parts, cur)
			cur = Delta{Stamp: d.Stamp, Basis: d.Basis, Full: d.Full}
			size = cur.Size()
		}
		cur.Pages = append(cur.Pages, p)
		size += ps
	}
	cur.Dropped = d.Dropped
	parts = append(parts, cur)
	for i := range parts {
		parts[i].Part, parts[i].Parts = i, len(parts)
	}
	return parts
}

// Encode returns d's wire form (msgpack, field names as keys).
func (d *Delta) Encode() ([]byte, error) {
	var buf bytes.Buffer
	enc := msgpack.NewEncoder(&buf)
	if err := enc.Encode(d); err != nil {
		return nil, fmt.Errorf("pager: encode delta: %w", err)
	}
	return buf.Bytes(), nil
}

// DecodeDelta parses a delta received from the network. Any malformed input
// yields an error wrapping ErrCorrupt, never a panic.
func DecodeDelta(b []byte) (d Delta, err error) {
	defer func() {
		if r := recover(); r != nil {
			d, err = Delta{}, fmt.Errorf("%w: delta: %v", ErrCorrupt, r)
		}
	}()
	if err := ValidateMsgpack(b); err != nil {
		return Delta{}, fmt.Errorf("delta: %w", err)
	}
	dec := msgpack.NewDecoder(bytes.NewReader(b))
	if err := dec.Decode(&d); err != nil {
		return Delta{}, fmt.Errorf("%w: delta: %v", ErrCorrupt, err)
	}
	if d.Parts < 0 || d.Parts > MaxParts || d.Part < 0 || d.Part >= d.parts() {
		return Delta{}, fmt.Errorf("%w: delta part %d of %d", ErrCorrupt, d.Part, d.Parts)
	}
	return d, nil
}
