package casty

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"sync/atomic"
	"time"

	"github.com/casty-go/casty/actor"
)

// Element credit across members. A stream opened with the credit flag
// (envelope.go, reqCredit) counts elements as well as bytes: each side
// tells the other, in 'C' frames, how many more elements ('E' frames) it
// may send, starting with StreamBuffer, and grants more as its consumer
// takes them. So a producer is at most StreamBuffer elements ahead of what
// its consumer has taken, wherever the two run — the same bound as the
// local channel — and the mux stream's byte window (Config.Transport.StreamWindow)
// bounds the bytes on the wire besides.
//
// Each side that may receive credit reads its stream on a goroutine of its
// own (flow.run) that never blocks: the peer sends at most the credit
// granted, and the frames buffer holds that much, so a credit frame is read
// even while the handler or the caller takes no element, and neither
// direction can stall the other. The caller of a server stream, to whom no
// credit comes, reads its elements directly (flow.direct).

const frameCredit byte = 'C'

// streamCredit is the credit each side grants, the most elements it lets
// the other have sent and its consumer not yet taken: StreamBuffer, the
// local channel's size, so a stream is bounded alike wherever its actor
// runs. A stream then moves at most streamCredit elements per round trip
// between the members.
const streamCredit = StreamBuffer

// grantEvery is how many taken elements a consumer collects before it
// grants them back in one credit frame.
const grantEvery = streamCredit / 2

// errOverCredit: the peer sent more elements than it was granted, or
// granted more than a buffer holds.
var errOverCredit = errors.New("casty: the peer broke the stream's element credit")

type frame struct {
	kind byte
	b    []byte
}

// flow is one side of a stream counted in credit frames.
type flow struct {
	fc      *frameConn
	frames  chan frame    // the peer's frames other than credit, in order; closed when run returns
	credit  chan struct{} // one token per element this side may still send
	done    chan struct{} // closed when run returns
	quit    chan struct{} // closed by stop
	err     error         // why run returned; read after done
	unacked int           // elements taken and not yet granted back (the consumer's goroutine only)
	// run stops reading once the frames it holds for the consumer reach
	// budget bytes (Config.Transport.StreamWindow), unless this side's producer
	// waits for credit, which may come only behind them.
	budget  int64
	held    atomic.Int64  // bytes of the frames in frames
	waiting atomic.Int32  // producers waiting in acquire
	wake    chan struct{} // poked when held shrinks or a producer starts waiting
	// uncounted: the stream was opened without the credit flag; its
	// window alone bounds it (tests play an older opener this way).
	uncounted bool
	// direct: no run goroutine; the consumer reads the stream itself
	// (next). Only for the caller of a server stream, to whom no credit
	// frame comes: nothing can be stuck behind its elements.
	direct bool
	unhook func() bool // direct: stops ctx's end from unblocking the read

	// The call, for the caller's errors (ctxErr).
	kind        *actor.Kind
	key, method string
}

func newFlow(fc *frameConn, budget int) *flow {
	return &flow{
		fc:     fc,
		budget: int64(budget),
		wake:   make(chan struct{}, 1),
		frames: make(chan frame, streamCredit+1), // the elements granted, then one closing frame
		credit: make(chan struct{}, streamCredit),
		done:   make(chan struct{}),
		quit:   make(chan struct{}),
	}
}

// run reads the peer's frames until the stream breaks or is closed, then
// calls gone (when not nil). It never blocks on a consumer's pace while
// this side waits for credit; otherwise it pauses once it holds budget
// bytes, leaving the rest to the mux stream's window. An uncounted stream
// has no credit: run waits for its consumer.
func (f *flow) run(gone func()) {
	defer func() {
		close(f.frames)
		close(f.done)
		if gone != nil {
			gone()
		}
	}()
	for {
		for f.held.Load() >= f.budget && f.waiting.Load() == 0 {
			select {
			case <-f.wake:
			case <-f.quit:
				f.err = errors.New("closed")
				return
			}
		}
		kind, b, err := f.fc.read()
		if err != nil {
			f.err = err
			return
		}
		if kind == frameCredit {
			n, k := binary.Uvarint(b)
			if k <= 0 || n > streamCredit {
				f.err = errOverCredit
				return
			}
			for range n {
				select {
				case f.credit <- struct{}{}:
				default:
					f.err = errOverCredit
					return
				}
			}
			continue
		}
		f.held.Add(int64(len(b)))
		if f.uncounted {
			select { // the window alone bounds the peer: wait for the consumer
			case f.frames <- frame{kind, b}:
			case <-f.quit:
				f.err = errors.New("closed")
				return
			}
			continue
		}
		select {
		case f.frames <- frame{kind, b}:
		default:
			f.err = errOverCredit
			return
		}
	}
}

// grant tells the peer it may send n more elements.
func (f *flow) grant(n int) error {
	return f.fc.write(frameCredit, binary.AppendUvarint(nil, uint64(n)))
}

// took records that the consumer took an element, and grants a batch
// back once it has collected grantEvery of them.
func (f *flow) took() {
	if f.uncounted {
		return
	}
	if f.unacked++; f.unacked >= grantEvery {
		f.grant(f.unacked) // a failed write shows as the stream breaking
		f.unacked = 0
	}
}

// acquire waits for credit to send one element.
func (f *flow) acquire(ctx context.Context) error {
	if f.uncounted {
		return ctx.Err()
	}
	select {
	case <-f.credit:
		return nil
	default:
	}
	// The credit may be behind frames run holds back: it reads on.
	f.waiting.Add(1)
	defer f.waiting.Add(-1)
	f.poke()
	select {
	case <-f.credit:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	case <-f.done:
		return fmt.Errorf("%w: the stream broke: %w", ErrActorUnavailable, f.readErr())
	}
}

// readErr is why run returned (after done).
func (f *flow) readErr() error {
	if f.err == nil {
		return errors.New("closed")
	}
	return f.err
}

// ctxErr is the error a caller whose ctx ended gets: the one a local
// stream gives (ctxError).
func (f *flow) ctxErr(ctx context.Context) error {
	return ctxError(ctx, f.kind, f.key, f.method)
}

// next returns the peer's next frame other than credit, for the consumer;
// ctx's end interrupts the wait.
func (f *flow) next(ctx context.Context) (frame, error) {
	if f.direct {
		if err := ctx.Err(); err != nil {
			return frame{}, err
		}
		kind, b, err := f.fc.read() // ctx's end unblocks it (openStream)
		return frame{kind, b}, err
	}
	select {
	case fr, ok := <-f.frames:
		if !ok {
			return frame{}, f.readErr()
		}
		f.held.Add(-int64(len(fr.b)))
		f.poke()
		return fr, nil
	case <-ctx.Done():
		return frame{}, ctx.Err()
	}
}

// poke wakes run if it paused.
func (f *flow) poke() {
	select {
	case f.wake <- struct{}{}:
	default:
	}
}

// stop ends this side: it closes the stream for writing, unblocks run's
// read and waits for run to return.
func (f *flow) stop() {
	close(f.quit)
	f.fc.st.Close()
	f.fc.st.SetReadDeadline(time.Unix(1, 0))
	if f.direct {
		f.unhook()
	} else {
		<-f.done
	}
}
