package mux

import (
	"bufio"
	"context"
	"encoding/binary"
	"errors"
	"io"
	"net"
	"os"
	"runtime"
	"sync"
	"time"
)

// Records (SPEC.md §2). After the handshake a connection is a sequence of
// records, each carrying the next bytes of one channel:
//
//	offset size field
//	0      1    channel  0..2 a lane's envelope stream, 3 yamux
//	1      4    length   1..maxRecord, big endian
//	5      n    bytes
//
// Lane envelopes travel in records, not in yamux streams: a request then
// costs one write by whoever sends it and one read by the connection's
// reader, with no hop through yamux's send and receive loops. yamux still
// carries the ephemeral streams, inside channel-3 records.
const (
	recordHeaderSize = 5
	chanYamux        = byte(numLanes) // the channel after the lanes
	numChannels      = numLanes + 1

	// maxRecord is the largest record a receiver accepts.
	maxRecord = 1 << 20
	// roundChunk is the most a write round takes from one channel while
	// others have bytes queued too, so a bulk channel delays the others
	// by at most this much.
	roundChunk = 64 << 10
	// yamuxHighWater bounds the yamux bytes queued for the connection.
	yamuxHighWater = 1 << 20
	// yamuxReadQueue bounds the yamux records received but not yet read
	// by yamux.
	yamuxReadQueue = 64
)

// connWriter combines everything written to one connection. A sender
// appends its bytes to its channel's queue; if no write is in progress it
// becomes the writer and writes every queued channel (up to roundChunk
// each) in one Write, otherwise it returns at once and the current writer
// takes its bytes along. Several small envelopes therefore leave in one
// write and one syscall, and an idle connection costs no goroutine hand-off.
type connWriter struct {
	s        *Session
	conn     net.Conn
	mu       sync.Mutex
	q        [numChannels][]byte // queued bytes per channel, from off
	off      [numChannels]int
	spare    [numChannels][]byte // empty buffers for the next swap (writer only)
	timeout  time.Duration       // write timeout (Config.KeepAliveTimeout)
	deadline time.Time           // the write deadline set on conn (writer only)
	out      []byte              // the round being written; reused (writer only)
	writing  bool                // a writer is active (or the writer is held, see hold)
	err      error
	space    chan struct{} // closed after a round if anyone waits; then replaced
	waiting  int           // senders waiting on space
	queued   int           // appends so far (gather watches it grow)
	seal     *recordCipher // seals every record (sealed sessions; seal.go), nil otherwise
	tag      int           // room left after each record's body for its tag: sealOverhead or 0
}

func newConnWriter(s *Session, conn net.Conn, seal *recordCipher) *connWriter {
	w := &connWriter{s: s, conn: conn, space: make(chan struct{}), timeout: s.node.cfg.KeepAliveTimeout, seal: seal}
	if seal != nil {
		w.tag = sealOverhead
	}
	return w
}

// hold makes senders queue without writing until release: the listener
// writes its welcome on the raw connection before any record.
func (w *connWriter) hold() { w.writing = true }

// release writes whatever was queued while held.
func (w *connWriter) release() {
	w.mu.Lock()
	if w.writeRound() {
		w.drainAsync()
	}
}

// highWater bounds the bytes queued on one channel; senders wait beyond it.
func (w *connWriter) highWater(ch byte) int {
	if ch == chanYamux {
		return yamuxHighWater
	}
	return w.s.node.cfg.MaxMessage
}

// full reports whether channel ch has highWater bytes queued: a sender
// with a ctx would wait.
func (w *connWriter) full(ch byte) bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	return len(w.q[ch])-w.off[ch] >= w.highWater(ch)
}

// waitRoom waits until channel ch has less than highWater bytes queued,
// the connection fails (its error) or ctx ends (ctx's error).
func (w *connWriter) waitRoom(ctx context.Context, ch byte) error {
	w.mu.Lock()
	err := w.waitRoomLocked(ctx, ch)
	if err == nil {
		err = w.err
	}
	w.mu.Unlock()
	return err
}

// waitRoomLocked is waitRoom with w.mu held (and held again when it
// returns); it returns ctx's error, or nil once there is room or the
// connection failed (w.err). With nobody writing (the queue holds
// answers a batch held back) it writes a round itself, or the room
// would never come.
func (w *connWriter) waitRoomLocked(ctx context.Context, ch byte) error {
	for len(w.q[ch])-w.off[ch] >= w.highWater(ch) && w.err == nil {
		if !w.writing {
			w.writing = true
			if w.writeRound() {
				w.drainAsync()
			}
			w.mu.Lock()
			continue
		}
		if ctx == answerCtx && w.s.queued.Load() > int64(w.s.node.cfg.MaxQueuedBytes) {
			return errAnswerBudget // an answer would wait past the budget (budget.go)
		}
		space := w.space
		w.waiting++
		w.mu.Unlock()
		select {
		case <-space:
		case <-ctx.Done():
			w.mu.Lock()
			w.waiting--
			return ctx.Err()
		}
		w.mu.Lock()
		w.waiting--
	}
	return nil
}

// enqueue appends the bytes produced by fill to channel ch and makes sure
// they get written. With a nil ctx it never waits for space (cancels and
// the reader's refusals, bounded by the requests that caused them);
// handlers' answers wait (answerCtx, budget.go).
func (w *connWriter) enqueue(ctx context.Context, ch byte, fill func([]byte) []byte, held bool) error {
	w.mu.Lock()
	if ctx != nil {
		if err := w.waitRoomLocked(ctx, ch); err != nil {
			w.mu.Unlock()
			return err
		}
	}
	if w.err != nil {
		err := w.err
		w.mu.Unlock()
		return notSent(err) // definite: nothing of it was queued
	}
	w.q[ch] = fill(w.q[ch])
	w.queued++
	if w.writing || held {
		w.mu.Unlock()
		return nil
	}
	w.writing = true
	w.mu.Unlock()
	// Let the goroutines that are already runnable (requesters woken by
	// the same batch of replies, handlers started by the same batch of
	// requests) append their bytes before we write: without this every
	// envelope would leave alone.
	w.gather()
	w.mu.Lock()
	if w.writeRound() {
		w.drainAsync()
	}
	return nil
}

// flush writes what is queued unless a write is in progress (which then
// takes it along): the end of a batch whose answers were held.
func (w *connWriter) flush() {
	w.mu.Lock()
	if w.writing || w.err != nil {
		w.mu.Unlock()
		return
	}
	w.writing = true
	w.mu.Unlock()
	w.mu.Lock()
	if w.writeRound() {
		w.drainAsync()
	}
}

// frameOrder is the order of a write round's records (SPEC.md, section
// 2): replication before calls, so that a replica's acknowledgement and
// the caller's next request, queued together, arrive with the
// acknowledgement first and the owner settles the commit the request would
// otherwise wait behind (an actor runs one message at a time).
var frameOrder = [numChannels]byte{byte(LaneControl), byte(LaneReplication), byte(LaneMessage), chanYamux}

// gather yields so that runnable senders can append before a round is
// written, and keeps yielding (a few times at most) while they still are:
// alone, a sender writes after one yield; under load a round carries more.
func (w *connWriter) gather() {
	w.mu.Lock()
	prev := w.queued
	w.mu.Unlock()
	for range maxGather {
		yield()
		w.mu.Lock()
		n := w.queued
		w.mu.Unlock()
		if n == prev {
			return
		}
		prev = n
	}
}

// writeRound is called locked with writing set. It writes one round and
// returns, unlocked, whether more is queued (writing then stays set and
// the caller must arrange a drain).
func (w *connWriter) writeRound() (more bool) {
	busy, small := 0, true
	for ch := range w.q {
		if n := len(w.q[ch]) - w.off[ch]; n > 0 {
			busy++
			small = small && w.off[ch] == 0 && n <= roundChunk
		}
	}
	chunk := maxRecord // a channel alone may send a whole record
	if busy > 1 {
		chunk = roundChunk
	}
	out := w.out[:0]
	records := 0
	var taken [numChannels][]byte
	if small {
		// The common case: take every queue whole, swapping in the empty
		// buffers of the last round, and frame them outside the lock so
		// senders are not held up by the copy.
		for ch := range w.q {
			if len(w.q[ch]) > 0 {
				taken[ch], w.q[ch], w.spare[ch] = w.q[ch], w.spare[ch][:0], nil
			}
		}
		w.mu.Unlock()
		for _, ch := range frameOrder {
			if q := taken[ch]; len(q) > 0 {
				out = appendRecord(out, ch, q, w.tag)
				records++
			}
		}
	} else {
		for _, ch := range frameOrder {
			q := w.q[ch][w.off[ch]:]
			if len(q) == 0 {
				continue
			}
			n := min(len(q), chunk)
			out = appendRecord(out, ch, q[:n], w.tag)
			records++
			if n == len(q) {
				w.q[ch], w.off[ch] = w.q[ch][:0], 0
			} else {
				w.off[ch] += n // only behind a bulk backlog
			}
		}
		w.mu.Unlock()
	}
	var err error
	if w.seal != nil {
		w.seal.sealRound(out) // outside the lock, in the order rounds are written
	}
	if len(out) > 0 {
		// A write the socket does not take within KeepAliveTimeout kills
		// the connection (SPEC.md §6). The deadline is moved only when it
		// is half used up, not on every round, so a write gets between
		// half of KeepAliveTimeout and all of it.
		if now := time.Now(); now.Add(w.timeout / 2).After(w.deadline) {
			w.deadline = now.Add(w.timeout)
			err = w.conn.SetWriteDeadline(w.deadline)
		}
		if err == nil {
			_, err = w.conn.Write(out)
		}
		if err == nil {
			w.s.node.traffic.recOut.Add(uint64(records))
		}
	}
	if cap(out) <= 1<<20 {
		w.out = out[:0] // only the writer touches out
	}
	w.mu.Lock()
	for ch, q := range taken {
		if q != nil && cap(q) <= 1<<20 {
			w.spare[ch] = q[:0]
		}
	}
	if w.waiting > 0 {
		close(w.space)
		w.space = make(chan struct{})
	}
	if err != nil {
		w.writing = false
		if w.err == nil {
			w.err = connectionLost(err)
		}
		w.mu.Unlock()
		// Not here: the writer may be yamux's send loop, which the
		// session's close waits for. Node.Close fails every session itself.
		lost := connectionLost(err)
		w.s.node.goTracked(func() { w.s.fail(lost) })
		return false
	}
	for ch := range w.q {
		if len(w.q[ch]) > w.off[ch] {
			w.mu.Unlock()
			return true
		}
	}
	w.writing = false
	w.mu.Unlock()
	return false
}

// appendRecord appends one record carrying b on channel ch, followed by
// tag bytes of room for sealing it (sealRound).
func appendRecord(out []byte, ch byte, b []byte, tag int) []byte {
	out = append(out, ch, 0, 0, 0, 0)
	binary.BigEndian.PutUint32(out[len(out)-4:], uint32(len(b)))
	out = append(out, b...)
	if tag > 0 {
		out = append(out, zeroTag[:tag]...)
	}
	return out
}

// zeroTag is the room appendRecord leaves for a tag.
var zeroTag [sealOverhead]byte

// drainAsync hands the remaining rounds to a worker, so the sender that
// happened to become the writer is not held hostage by a backlog.
func (w *connWriter) drainAsync() {
	if !w.s.node.goWorker(taskFunc(w.drain)) {
		w.abort(ErrClosed)
	}
}

func (w *connWriter) drain() {
	for {
		w.gather()
		w.mu.Lock()
		if !w.writeRound() {
			return
		}
	}
}

func (w *connWriter) abort(err error) {
	w.mu.Lock()
	w.writing = false
	if w.err == nil {
		w.err = err
	}
	w.mu.Unlock()
}

// close fails all later sends with err and wakes blocked senders.
func (w *connWriter) close(err error) {
	w.mu.Lock()
	if w.err == nil {
		w.err = err
	}
	close(w.space)
	w.space = make(chan struct{})
	w.mu.Unlock()
}

// ---- reading ----

// recordReader splits a connection into records. It checks every limit
// before it allocates. On a sealed session it opens each record (open).
type recordReader struct {
	r    *bufio.Reader
	hdr  [recordHeaderSize]byte
	open *recordCipher // nil: records are not sealed
	tag  int           // bytes after each record's body: sealOverhead or 0
}

func newRecordReader(r io.Reader, open *recordCipher) *recordReader {
	rr := &recordReader{r: bufio.NewReaderSize(r, 64<<10), open: open}
	if open != nil {
		rr.tag = sealOverhead
	}
	return rr
}

// parseRecordHeader validates a record header; any error is a protocol
// violation.
func parseRecordHeader(h []byte) (ch byte, n int, err error) {
	ch, n = h[0], int(binary.BigEndian.Uint32(h[1:5]))
	if ch >= numChannels {
		return 0, 0, protocolError("unknown channel %d", ch)
	}
	if n == 0 || n > maxRecord {
		return 0, 0, protocolError("record of %d bytes (limit %d)", n, maxRecord)
	}
	return ch, n, nil
}

// next returns the next record's channel and length; its bytes must then
// be consumed with appendBody (lanes) or body (yamux).
func (rr *recordReader) next() (ch byte, n int, err error) {
	if _, err := io.ReadFull(rr.r, rr.hdr[:]); err != nil {
		if err == io.ErrUnexpectedEOF {
			err = protocolError("truncated record header")
		}
		return 0, 0, err
	}
	return parseRecordHeader(rr.hdr[:])
}

// appendBody appends the record's n bytes to dst (opened in place when
// the session is sealed).
func (rr *recordReader) appendBody(dst []byte, n int) ([]byte, error) {
	l := len(dst)
	dst = growTo(dst, l+n+rr.tag)
	if _, err := io.ReadFull(rr.r, dst[l:]); err != nil {
		return dst[:l], truncated(err)
	}
	if rr.open != nil {
		if _, err := rr.open.open(rr.hdr[:], dst[l:]); err != nil {
			return dst[:l], err
		}
		dst = dst[:l+n]
	}
	return dst, nil
}

func truncated(err error) error {
	if err == io.ErrUnexpectedEOF || err == io.EOF {
		return protocolError("truncated record")
	}
	return err
}

func growTo(b []byte, n int) []byte {
	if cap(b) >= n {
		return b[:n]
	}
	nb := make([]byte, n, max(n, 2*cap(b)))
	copy(nb, b)
	return nb
}

// laneBuffer reassembles one lane's envelope stream from its records.
type laneBuffer struct {
	buf []byte
}

// parseEnvelopes decodes the complete envelopes at the start of b, calling
// fn for each, and returns how many bytes it consumed. A header is
// validated as soon as it is complete, so a hostile length is refused
// before anything waits for it. It is pure.
//
// Payloads are copies (b is the reader's buffer, reused): the envelopes of
// one call share a single copy when they total at most sharedCopyMax bytes
// (one allocation for a batch of small envelopes, and a retained payload
// keeps at most that much alive), each gets its own otherwise. A payload's
// capacity ends with it, so appending to one never touches another.
func parseEnvelopes(b []byte, maxMessage int, fn func(envelope) error) (int, error) {
	complete, payloads := 0, 0
	var bad error
	for len(b)-complete >= envelopeHeaderSize {
		_, _, _, n, err := parseEnvelopeHeader(b[complete:complete+envelopeHeaderSize], maxMessage)
		if err != nil {
			bad = err
			break
		}
		if len(b)-complete-envelopeHeaderSize < n {
			break
		}
		complete += envelopeHeaderSize + n
		payloads += n
	}
	var shared []byte
	if payloads <= sharedCopyMax {
		shared = make([]byte, 0, payloads)
	}
	used := 0
	for used < complete {
		typ, flags, id, n, _ := parseEnvelopeHeader(b[used:used+envelopeHeaderSize], maxMessage)
		body := b[used+envelopeHeaderSize : used+envelopeHeaderSize+n]
		var payload []byte
		switch {
		case n == 0:
		case shared != nil:
			at := len(shared)
			shared = append(shared, body...)
			payload = shared[at:len(shared):len(shared)]
		default:
			payload = append([]byte(nil), body...)
		}
		used += envelopeHeaderSize + n
		if err := fn(envelope{typ: typ, flags: flags, id: id, payload: payload}); err != nil {
			return used, err
		}
	}
	return used, bad
}

// sharedCopyMax bounds the envelopes parseEnvelopes copies together.
const sharedCopyMax = 8 << 10

// reader is the state of a connection's reader, owned by whichever
// goroutine is reading (see readLoop).
type reader struct {
	again task        // readLoop as a task, for handing the reading on
	watch readerWatch // shared with the inline watchdog (inline.go)

	// The batch the reader runs itself (inline.go); takeOver hands what
	// is left of it to workers.
	bmu   sync.Mutex
	batch []task
	next  int
	rr    *recordReader
	lanes [numLanes][]byte
	jobs  []task

	// When each lane's partly received envelope started arriving (zero:
	// none), and the read deadline that bounds the earliest of them
	// (zero: none set). See trackPartial.
	partial [numLanes]time.Time
	// The bytes of each lane's partly received envelope (budget.go).
	partialBytes [numLanes]int
	deadline     time.Time
}

// trackPartial records, after a record of lane ch was parsed, whether the
// lane holds a partly received envelope (rest bytes left; consumed: whole
// envelopes were taken before them, so the rest is a new one), and keeps
// the connection's read deadline at the earliest partial's start plus
// Config.PartialMessageTimeout. While a partial exists the deadline is set
// again after every record, so no other deadline change outlives it.
func (s *Session) trackPartial(ch byte, consumed bool, rest int) {
	rd := s.rd
	switch {
	case rest == 0:
		rd.partial[ch] = time.Time{}
	case consumed || rd.partial[ch].IsZero():
		rd.partial[ch] = time.Now()
	}
	var first time.Time
	for _, t := range rd.partial {
		if !t.IsZero() && (first.IsZero() || t.Before(first)) {
			first = t
		}
	}
	switch {
	case !first.IsZero():
		rd.deadline = first.Add(s.node.cfg.PartialMessageTimeout)
		_ = s.conn.SetReadDeadline(rd.deadline)
	case !rd.deadline.IsZero():
		rd.deadline = time.Time{}
		_ = s.conn.SetReadDeadline(time.Time{})
	}
}

// readLoop reads the connection until it ends: lane envelopes are
// dispatched here, yamux bytes go to the session's yamux. Any violation
// closes the connection.
//
// Requests are collected while whole lane records are already buffered
// (up to maxGathered); when they are the last thing received so far, the
// reader runs them itself, one after another, and then reads on
// (inline.go): no goroutine hand-off on their path, their answers leave in
// one write, and the next read finds more waiting. Otherwise (a partial
// record or yamux bytes follow) they run on worker goroutines.
func (s *Session) readLoop() {
	rd := s.rd
	for {
		if len(rd.jobs) > 0 && !rd.laneRecordBuffered() {
			// Requests that a handler read while it waited (WaitReading)
			// and left to the reader.
			if !s.runJobs(nil) {
				return
			}
			continue
		}
		err := s.readRecord()
		if err == nil && len(rd.jobs) > 0 && len(rd.jobs) < maxGathered && rd.laneRecordBuffered() {
			continue // parse it first: its requests join this batch
		}
		if len(rd.jobs) > 0 && !s.runJobs(err) {
			return // replaced while a request ran
		}
		if err != nil {
			s.readFailed(err)
			return
		}
	}
}

// readRecord reads one record and dispatches what it completes: lane
// envelopes (requests join rd.jobs), yamux bytes. Only the goroutine that
// reads calls it: the reader, or a handler waiting by reading (WaitReading).
func (s *Session) readRecord() error {
	rd := s.rd
	ch, n, err := rd.rr.next()
	if err != nil {
		return err
	}
	s.node.traffic.recIn.Add(1)
	s.heard.Store(time.Now().UnixNano()) // the peer is there (monitor)
	if ch == chanYamux {
		var b []byte
		if b, err = rd.rr.appendBody(s.yc.buffer(), n); err == nil {
			err = s.yc.deliver(b)
		}
		if !rd.deadline.IsZero() {
			_ = s.conn.SetReadDeadline(rd.deadline)
		}
		return err
	}
	buf := rd.lanes[ch]
	if len(buf) >= envelopeHeaderSize {
		// The rest of an envelope whose header (validated) is in: grow
		// the buffer to its whole size at once rather than by doubling,
		// so what a partial message holds is what MaxPartialBytes counts.
		need := envelopeHeaderSize + int(binary.BigEndian.Uint32(buf)) + rd.rr.tag
		if cap(buf) < need && len(buf)+n+rd.rr.tag <= need {
			buf = append(make([]byte, 0, need), buf...)
		}
	}
	if buf, err = rd.rr.appendBody(buf, n); err == nil {
		ln := s.lanes[ch]
		var used int
		used, err = parseEnvelopes(buf, s.node.cfg.MaxMessage, func(env envelope) error { return ln.dispatch(env, &rd.jobs) })
		rest := copy(buf, buf[used:])
		buf = buf[:rest]
		if rest > 0 || !rd.partial[ch].IsZero() {
			s.trackPartial(ch, used > 0, rest)
		}
		if cap(buf) > 1<<20 && rest < 1<<10 {
			buf = append([]byte(nil), buf...)
		}
		// A partial envelope is counted by the memory its buffer holds,
		// not by what has arrived of it: once its header is in, the
		// buffer is sized for the whole envelope.
		held := 0
		if rest > 0 {
			held = cap(buf)
		}
		if err == nil && (held > 0 || rd.partialBytes[ch] > 0) {
			err = s.checkPartial(ch, held)
		}
	}
	rd.lanes[ch] = buf
	return err
}

// runJobs runs the requests read so far (rd.jobs): here, when nothing
// more has arrived and err is nil (inline.go), else on workers. It
// reports whether this goroutine is still the reader afterwards.
func (s *Session) runJobs(err error) bool {
	rd := s.rd
	if err == nil && rd.rr.r.Buffered() == 0 {
		// Nothing more to read yet: run them here (inline.go).
		return s.runBatch()
	}
	for i, job := range rd.jobs {
		if !s.node.goWorker(job) {
			job.run() // the node is closing: the handler sees a dead session
		}
		rd.jobs[i] = nil
	}
	rd.jobs = rd.jobs[:0]
	return true
}

// readFailed ends the session for the error that stopped its reader.
func (s *Session) readFailed(err error) {
	s.dropPartial()
	switch {
	case errors.Is(err, ErrProtocol):
		if errors.Is(err, ErrRecordForged) {
			s.node.traffic.forged.Add(1)
		}
		if errors.Is(err, ErrPartialBudget) {
			s.node.overload.partialClosed.Add(1)
		}
		s.violation(err)
	case errors.Is(err, os.ErrDeadlineExceeded) && !s.rd.deadline.IsZero():
		s.violation(protocolError("a message stayed partly received for PartialMessageTimeout (%v)", s.node.cfg.PartialMessageTimeout))
	case errors.Is(err, errSessionDone):
	default:
		s.fail(connectionLost(err))
	}
}

// maxGathered bounds the requests a reader collects from buffered records
// before it runs them.
const maxGathered = 64

// laneRecordBuffered reports whether the reader's buffer already holds a
// whole lane record (no read needed to parse it).
func (rd *reader) laneRecordBuffered() bool {
	ch, whole := rd.bufferedRecord()
	return whole && ch != chanYamux
}

// bufferedRecord reports whether the reader's buffer holds the whole next
// record, and its channel.
func (rd *reader) bufferedRecord() (ch byte, whole bool) {
	r := rd.rr.r
	if r.Buffered() < recordHeaderSize {
		return 0, false
	}
	h, err := r.Peek(recordHeaderSize)
	if err != nil {
		return 0, false
	}
	return h[0], r.Buffered() >= recordHeaderSize+int(binary.BigEndian.Uint32(h[1:5]))+rd.rr.tag
}

// maxGather bounds the yields before a write round.
var maxGather = 4

// yield is runtime.Gosched; tests count the writer's yields through it.
var yield = runtime.Gosched

// errSessionDone stops the reader once the session failed.
var errSessionDone = errors.New("mux: session done")

// ---- yamux over channel 3 ----

// yconn is the net.Conn yamux runs on: its reads come from channel-3
// records, its writes leave as channel-3 records.
type yconn struct {
	s      *Session
	in     chan []byte
	free   chan []byte // buffers yamux has read, for the reader to reuse
	cur    []byte
	curBuf []byte // cur's whole buffer
	closed chan struct{}
	once   sync.Once
	held   []byte // a data-frame header waiting for its body
}

func newYconn(s *Session) *yconn {
	return &yconn{s: s, in: make(chan []byte, yamuxReadQueue), free: make(chan []byte, yamuxReadQueue),
		closed: make(chan struct{})}
}

// buffer returns an empty buffer for the next record.
func (c *yconn) buffer() []byte {
	select {
	case b := <-c.free:
		return b[:0]
	default:
		return nil
	}
}

// deliver hands one record's bytes to yamux; it waits while yamux is
// yamuxReadQueue records behind.
func (c *yconn) deliver(b []byte) error {
	select {
	case c.in <- b:
		return nil
	case <-c.closed:
		return errSessionDone
	}
}

func (c *yconn) Read(b []byte) (int, error) {
	for len(c.cur) == 0 {
		if c.curBuf != nil {
			select {
			case c.free <- c.curBuf:
			default:
			}
			c.curBuf = nil
		}
		select {
		case c.cur = <-c.in:
			c.curBuf = c.cur
		case <-c.closed:
			return 0, io.EOF
		}
	}
	n := copy(b, c.cur)
	c.cur = c.cur[n:]
	return n, nil
}

const yamuxHeaderSize = 12

// Write queues yamux's bytes on channel 3. yamux writes a data frame as
// its 12-byte header and then its body; the header is held back so both
// leave in the same record.
func (c *yconn) Write(b []byte) (int, error) {
	// version(1) type(1) flags(2) stream(4) length(4); type 0 = data
	if len(c.held) == 0 && len(b) == yamuxHeaderSize && b[1] == 0 && binary.BigEndian.Uint32(b[8:12]) > 0 {
		c.held = append(c.held, b...)
		return len(b), nil
	}
	held := c.held
	err := c.s.w.enqueue(context.Background(), chanYamux, func(q []byte) []byte {
		return append(append(q, held...), b...)
	}, false)
	c.held = c.held[:0]
	if err != nil {
		return 0, err
	}
	return len(b), nil
}

// Close ends the yamux side; the session closes the connection itself.
func (c *yconn) Close() error {
	c.once.Do(func() { close(c.closed) })
	return nil
}

func (c *yconn) LocalAddr() net.Addr                { return c.s.conn.LocalAddr() }
func (c *yconn) RemoteAddr() net.Addr               { return c.s.conn.RemoteAddr() }
func (c *yconn) SetDeadline(t time.Time) error      { return nil }
func (c *yconn) SetReadDeadline(t time.Time) error  { return nil }
func (c *yconn) SetWriteDeadline(t time.Time) error { return nil }
