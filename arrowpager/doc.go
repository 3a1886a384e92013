// Package arrowpager pages a columnar Arrow table as actor state. A Table
// field of an actor's state struct implements pager.Pager, so instead of
// shipping the whole table after every handler, a commit ships only the
// blocks that changed:
//
//	Readings/schema     column names, types, order, metadata, row count
//	Readings/<col>/<b>  rows [b*BlockRows, (b+1)*BlockRows) of column <col>,
//	                    a one-column Arrow IPC record batch
//
// Blocks are 16,384 rows by default (128 KiB of float64), so editing one
// cell of a 2.5-million-row, 5-column float64 table (100 MB) ships one
// 128 KiB block per replica; adding or dropping a column moves only that
// column's blocks (plus the small schema page); appending rows re-pages only
// the last partial block and the new ones. Column names and types, including
// nested and variable-width types, survive the round trip.
//
// A block page must fit the tracker's page cap (pager.Config.MaxPageSize,
// 4 MiB by default): a column of wide values (long strings, big lists) may
// need a smaller Config.BlockRows, or the commit fails with
// *pager.PageTooLargeError and the previous value is kept.
//
// # Detecting writes
//
// The pager's rule is that a false negative (a missed write) is silent
// corruption while a false positive only costs bytes. Arrow arrays are
// immutable by contract, and replacing a column (SetColumn, Append) builds
// new buffers, so a replaced buffer is proof that a block may have changed.
// But the Go Arrow API also hands out the values in place
// (arr.Float64Values()[i] = x writes into the live buffer), and such a write
// leaves every buffer where it was. So by default each commit hashes every
// block (hash/maphash over the block's validity and value bytes for
// fixed-width columns, over its encoded page for other layouts) and compares
// the hash with the committed one:
//
//   - a write through any path changes the bytes, hence the hash (a 64-bit
//     keyed hash: a collision needs about 2^64 tries, and the per-process
//     seed makes it impossible to aim for one);
//   - a replaced buffer holding identical bytes (an append, a copy) hashes
//     the same and ships nothing;
//   - the cost is one hash pass over the table per commit, which runs at
//     about the speed of memory (the repository's BENCHMARKS.md has the
//     figures).
//
// Config.TrustBuffers trades that guarantee for speed: blocks whose buffers
// were not replaced are assumed unchanged and not hashed, which makes a
// commit O(columns) but misses in-place writes. Use it only when no code
// writes into values slices.
//
// # Untrusted pages
//
// Pages come from the network. Decoding never panics and never allocates
// more than the input justifies: the IPC framing and the flatbuffer
// metadata are verified before arrow-go reads them (arrow-go does not verify
// flatbuffers, and a lying vector length would otherwise become a fatal
// multi-gigabyte allocation), buffers are allocated through a size-limited
// allocator, and decoded arrays pass array.ValidateFull. Bad pages fail with
// ErrCorrupt.
//
// # On its own
//
// The module needs pager, not the Casty runtime: go get
// github.com/casty-go/casty/arrowpager, put a Table in a struct and page it
// with a pager.Tracker, as the package Example does with a 40,000-row table.
// Casty programs add it only when their actors hold columnar data; package
// casty does not import it (only casty's tests do, to measure paged commits
// through real members, so the casty module requires it).
package arrowpager
