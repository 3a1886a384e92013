package pager

// Pager is implemented by field types that decide their own pages (for
// example arrowpager.Table, paged per column per block of rows). A state
// field whose type T (or *T) implements Pager is in the Paged regime.
//
// A Pager is stateless about replication: the tracker keeps, per field, the
// Mark returned with the last committed diff and hands it back on the next
// one. Rolling back a commit therefore needs nothing from the Pager.
//
// The contract that keeps replication exact: PageDiff must report every
// sub-page whose bytes differ from the state described by prev, whatever
// path the write took (a false negative is silent corruption); it may report
// unchanged sub-pages (a false positive only costs bytes).
type Pager interface {
	// PageDiff compares the receiver with the state described by prev (a
	// Mark returned by an earlier PageDiff or PageLoad of any value of the
	// same type; nil means "nothing committed") and returns the changed
	// sub-pages, the sub-keys to drop and the Mark of the current state.
	// With prev == nil it returns every sub-page. It must not modify the
	// receiver nor prev.
	PageDiff(prev Mark) (PagerDiff, error)
	// PageLoad replaces the receiver's content with the given sub-pages (no
	// sub-page: the zero value) and returns the Mark of the loaded state.
	// Called on a pointer to the field.
	PageLoad(pages []SubPage) (Mark, error)
}

// Mark is a Pager's opaque description of a committed state (for example
// per-block hashes), kept by the tracker between commits.
type Mark any

// PagerDiff is the result of Pager.PageDiff.
type PagerDiff struct {
	// Pages holds the changed sub-pages (all of them when prev was nil).
	Pages []SubPage
	// Dropped holds the sub-keys present in prev's state and absent now.
	Dropped []string
	// Mark describes the current state; the tracker passes it as prev to the
	// next PageDiff once this diff is committed.
	Mark Mark
}

// PageDescriber may be implemented by a Pager type to say, in Explain's
// table, how it pages (for example "1 page per column per 16384-row
// block"). It is called on the type's zero value.
type PageDescriber interface {
	DescribePages() string
}
