// Package pager is the page model of Casty's replicated actor state: it turns
// an actor's state struct into a set of pages, computes after each handler
// the delta against the last committed page set, and applies deltas on
// replicas under the basis rule. It is pure data structures and algorithms:
// no network, no goroutines, no clock (stamps are given by the caller).
//
// # Pages
//
// An actor's state is the exported fields of a struct. Each field becomes
// pages with hierarchical keys: "Field" for an integral field,
// "Field/<entry>" for each entry of a TrackedMap, "Field/<sub>" as a Pager
// decides (for example "Readings/temp/3", block 3 of column temp). A page
// holds its bytes (msgpack, field names as keys) and the Stamp of the commit
// that wrote it. An absent page means "the zero value" (or "no such entry"),
// so a field that never left its default costs nothing on the wire.
//
// # Regimes
//
// How a field's changes are found is chosen statically from its type
// (NewSchema), and Explain prints it, so the choice is never invisible:
//
//   - Integral (the default): one page per field. After each handler the
//     field is re-encoded and byte-compared with the committed page. A field
//     of an immutable comparable type (numbers, strings, bools, time.Time,
//     arrays and structs of those) is first compared with ==, so an unchanged
//     65 KB string costs no encode. A field holding maps, whose encoding order
//     varies, is decoded and deep-compared before differing bytes are taken
//     as a change.
//   - Tracked: a TrackedMap[K, V] field, one page per entry. Every mutator
//     (Set, SetAll, Delete, Update, Clear) marks the keys it touches, so a
//     commit costs O(touched entries), not O(map). V must be immutable: a
//     mutable V could change behind the mutators' back, and NewSchema refuses
//     it with a *SchemaError naming the field. Replacing the whole map is
//     detected by identity and re-pages it in full.
//   - Paged: a field whose type implements Pager decides its own sub-pages
//     and change detection (arrowpager.Table pages a columnar table per
//     column per block of rows).
//
// The rule all regimes obey: a false positive (shipping an unchanged page)
// only costs bytes; a false negative (missing a mutation) would be silent
// corruption and must be impossible. Integral fields are therefore never
// tracked by interception, only by comparison; tracked maps accept only
// values no one can mutate in place; pagers must catch every write path.
//
// # Owner side: Tracker
//
// After each handler the activation calls Tracker.Prepare with the state and
// a new stamp. The returned Pending's Delta holds the changed pages and
// dropped keys under that stamp, with Basis the previous committed stamp. An
// empty delta (a handler that changed nothing) is not sent: 0 bytes. A delta
// larger than Config.BatchSize is sent as parts sharing one stamp
// (Pending.Parts). When the replicas accepted it, Tracker.Commit; when the commit
// failed, Tracker.Rollback restores exactly the dirty pages and tracked
// marks, so the next Prepare ships them again. A page over
// Config.MaxPageSize fails Prepare with *PageTooLargeError and the previous
// committed value is kept. An activating owner calls Tracker.Restore with
// the pages it fetched.
//
// # Replica side: Store
//
// Store.Apply accepts a delta only over the basis it was computed on. If the
// store holds a commit the delta was not built on (ErrStaleOwner: another
// owner's, or an orphan of a failed commit) or is older (it missed a commit:
// ErrNeedFull), the delta is refused and the owner resends the complete
// page set, which is accepted whatever the store holds; after it deltas
// flow again. Who may write at all is decided above this package: the
// replica module fences deposed owners with ballots before a delta reaches
// the store. The check runs on every
// part; a multi-part commit is published only when its last part arrived,
// so a reader never sees half a commit. Deletions ride inside deltas: no
// tombstones. Store.List, Diverge and Store.Catchup serve activation (fetch
// only the pages you lack) and read repair (send a lagging replica exactly
// the pages where it diverges).
//
// # Stamps
//
// Stamp is opaque to this package: a totally ordered (Wall, Counter, Node)
// triple. The replication layer maps its hybrid logical clock onto it; this
// package never reads a clock.
//
// # On its own
//
// The module depends on no other Casty module: any system that replicates
// structured state and wants to ship only what changed can take it alone
// with go get github.com/casty-go/casty/pager — a Tracker (NewTracker,
// Prepare, Commit) on the owner, a Store (Apply) on each replica. The package
// Example computes the delta of each commit and applies it to a replica.
package pager
