package actor

import (
	"context"
	"fmt"
	"iter"
	"path"
	"sync"
	"sync/atomic"
	"time"
)

// spyBuffer is how many undelivered events a spy holds before it drops the
// oldest.
const spyBuffer = 1024

// SpyFilter selects events by glob (path.Match syntax) on kind and key;
// an empty pattern matches everything.
type SpyFilter struct {
	Kind, Key string
	Payloads  bool // include arguments and results
}

func (f SpyFilter) validate() error {
	for _, p := range []string{f.Kind, f.Key} {
		if p == "" {
			continue
		}
		if _, err := path.Match(p, ""); err != nil {
			return fmt.Errorf("casty: spy pattern %q: %w", p, err)
		}
	}
	return nil
}

func (f SpyFilter) match(kind, key string) bool {
	if f.Kind != "" {
		if ok, _ := path.Match(f.Kind, kind); !ok {
			return false
		}
	}
	if f.Key != "" {
		if ok, _ := path.Match(f.Key, key); !ok {
			return false
		}
	}
	return true
}

// hub fans events out to the interceptor and to spies. Each activation
// caches which spies match it (kind and key never change), keyed by the
// hub's version, so a spy that matches nothing costs other actors nothing
// and no glob is evaluated per event.
type hub struct {
	interceptor func(Event)
	spies       atomic.Pointer[[]*SpyQueue] // copy-on-write
	version     atomic.Uint64               // bumped after every change of spies
	mu          sync.Mutex                  // serialises writers of spies
	armed       atomic.Bool                 // interceptor or any spy: the fast "no" for everyone
	logf        func(msg string, args ...any)
}

// observers is what one activation's events go to.
type observers struct {
	ver      uint64
	spies    []*SpyQueue
	payloads bool // a matching spy wants arguments and results
	any      bool // someone receives this activation's events
}

var noObservers = &observers{}

func (h *hub) rearm() {
	n := 0
	if s := h.spies.Load(); s != nil {
		n = len(*s)
	}
	h.armed.Store(h.interceptor != nil || n > 0)
}

// observersOf returns who receives events of (kind, key), recomputed only
// when the set of spies changed since cached.
func (h *hub) observersOf(cache *atomic.Pointer[observers], kind, key string) *observers {
	if !h.armed.Load() {
		return noObservers
	}
	ver := h.version.Load()
	if o := cache.Load(); o != nil && o.ver == ver {
		return o
	}
	o := &observers{ver: ver}
	if s := h.spies.Load(); s != nil {
		for _, sp := range *s {
			if sp.filter.match(kind, key) {
				o.spies = append(o.spies, sp)
				o.payloads = o.payloads || sp.filter.Payloads
			}
		}
	}
	o.any = h.interceptor != nil || len(o.spies) > 0
	cache.Store(o)
	return o
}

func (h *hub) publish(o *observers, ev Event) {
	if h.interceptor != nil {
		h.intercept(stripPayload(ev)) // payloads are for the spies that ask
	}
	for _, sp := range o.spies {
		sp.Offer(ev)
	}
}

func (h *hub) intercept(ev Event) {
	defer func() {
		if r := recover(); r != nil {
			h.logf("casty: interceptor panicked; the event is dropped, the handler is unaffected", "panic", r)
		}
	}()
	h.interceptor(ev)
}

func (h *hub) add(sp *SpyQueue) {
	h.mu.Lock()
	defer h.mu.Unlock()
	var next []*SpyQueue
	if s := h.spies.Load(); s != nil {
		next = append(next, *s...)
	}
	next = append(next, sp)
	h.spies.Store(&next)
	h.version.Add(1)
	h.rearm()
}

func (h *hub) remove(sp *SpyQueue) {
	h.mu.Lock()
	defer h.mu.Unlock()
	s := h.spies.Load()
	if s == nil {
		return
	}
	var next []*SpyQueue
	found := false
	for _, x := range *s {
		if x == sp {
			found = true
			continue
		}
		next = append(next, x)
	}
	if !found {
		return
	}
	h.spies.Store(&next)
	h.version.Add(1)
	h.rearm()
}

// SpyQueue is one subscriber: a bounded ring that drops its oldest event on
// overflow and accounts for every drop with an in-band Lag. Offer never
// blocks, so observation never slows an actor.
type SpyQueue struct {
	filter SpyFilter
	mu     sync.Mutex
	buf    []Event // ring
	head   int
	n      int
	drops  int // dropped since the last take
	notify chan struct{}
}

// NewSpyQueue returns an empty queue for events matching f.
func NewSpyQueue(f SpyFilter) (*SpyQueue, error) {
	if err := f.validate(); err != nil {
		return nil, err
	}
	return &SpyQueue{filter: f, buf: make([]Event, spyBuffer), notify: make(chan struct{}, 1)}, nil
}

// Filter returns the queue's filter.
func (s *SpyQueue) Filter() SpyFilter { return s.filter }

// Offer adds ev, dropping the oldest pending event when full.
func (s *SpyQueue) Offer(ev Event) {
	if !s.filter.Payloads {
		ev = stripPayload(ev)
	}
	s.mu.Lock()
	if s.n == len(s.buf) {
		// Drop the oldest; the drop is reported before the next event out.
		s.buf[s.head] = nil
		s.head = (s.head + 1) % len(s.buf)
		s.n--
		s.drops++
	}
	s.buf[(s.head+s.n)%len(s.buf)] = ev
	s.n++
	s.mu.Unlock()
	select {
	case s.notify <- struct{}{}:
	default:
	}
}

// take returns the pending events, with a Lag first when some were dropped.
func (s *SpyQueue) take(out []Event) []Event {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.drops > 0 {
		// The dropped events were the oldest: the Lag stands where they stood.
		out = append(out, Lag{EventInfo: EventInfo{Time: time.Now()}, Dropped: s.drops})
		s.drops = 0
	}
	for s.n > 0 {
		out = append(out, s.buf[s.head])
		s.buf[s.head] = nil
		s.head = (s.head + 1) % len(s.buf)
		s.n--
	}
	return out
}

func stripPayload(ev Event) Event {
	switch e := ev.(type) {
	case Received:
		if e.Arg != nil {
			e.Arg = nil
			return e
		}
	case Completed:
		if e.Result != nil {
			e.Result = nil
			return e
		}
	}
	return ev
}

// Spy subscribes to this host's events matching f until ctx ends. Events
// are buffered from the moment Spy returns; the sequence ends when ctx does.
// A slow consumer never slows an actor: beyond spyBuffer pending events the
// oldest are dropped and a Lag{Dropped: n} is delivered in their place.
func (h *Host) Spy(ctx context.Context, f SpyFilter) (iter.Seq[Event], error) {
	q, err := NewSpyQueue(f)
	if err != nil {
		return nil, err
	}
	if err := h.Attach(q); err != nil {
		return nil, err
	}
	return q.Seq(ctx, func() { h.Detach(q) }), nil
}

// Attach makes q receive this host's matching events until Detach.
func (h *Host) Attach(q *SpyQueue) error {
	if h.closing.Load() {
		return fmt.Errorf("%w: system is closed", ErrActorUnavailable)
	}
	h.hub.add(q)
	return nil
}

// Detach stops delivering events to q. It is idempotent.
func (h *Host) Detach(q *SpyQueue) { h.hub.remove(q) }

// Seq returns the queue's events as a sequence that ends when ctx does;
// done runs once when it ends (or when ctx ends without it being ranged).
func (s *SpyQueue) Seq(ctx context.Context, done func()) iter.Seq[Event] {
	var once sync.Once
	finish := func() { once.Do(done) }
	stop := context.AfterFunc(ctx, finish)
	return func(yield func(Event) bool) {
		defer func() {
			stop()
			finish()
		}()
		var batch []Event
		for {
			batch = s.take(batch[:0])
			for _, ev := range batch {
				if !yield(ev) {
					return
				}
			}
			select {
			case <-s.notify:
			case <-ctx.Done():
				return
			}
		}
	}
}
