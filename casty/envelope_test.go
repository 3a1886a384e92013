package casty

import (
	"bufio"
	"bytes"
	"encoding/binary"
	"errors"
	"reflect"
	"runtime"
	"testing"
)

func TestCallEnvelopeRoundTrip(t *testing.T) {
	reqs := []callReq{
		{Op: opCall, Kind: "shop.Order", Key: "order-42", Method: "Add", Arg: []byte{0x02}, Chain: []string{"a/b", "c/d"}, Deadline: 1234567890123},
		{Op: opStateOf, Kind: "k", Key: ""},
		{Op: opCall, Kind: "ünï", Key: string(make([]byte, 300)), Deadline: -5},
		{Op: opCall, Kind: "k", Key: "x", Method: "M", at: placement{point: 1<<64 - 1, known: true}, Arg: []byte{0xc0}},
		{Op: opCall, Kind: "k", Key: "x", Method: "M", Chain: []string{"a/b"}, trace: sampleTrace, Arg: []byte{0xc0}},
		{Op: opStream, Kind: "k", Key: "x", Method: "T", at: placement{point: 7, known: true}, trace: traceCtx{TraceID: [16]byte{15: 1}, SpanID: [8]byte{1}}},
		{Op: opCall, Kind: "k", Key: "x", Method: "M", early: 1 << 40, Arg: []byte{0xc0}},
		{Op: opCall, Kind: "k", Key: "x", Method: "M", trace: sampleTrace, early: 7},
	}
	for _, in := range reqs {
		var out callReq
		if err := decodeCallReq(appendCallReq(nil, &in), &out); err != nil {
			t.Fatal(err)
		}
		out.kind, out.meth = nil, nil // resolved names of declared kinds
		if !reflect.DeepEqual(in, out) {
			t.Fatalf("request round trip:\n in  %+v\n out %+v", in, out)
		}
	}
	resps := []callResp{
		{Result: []byte{1, 2, 3}},
		{Ok: true},
		{Err: &wireError{Code: codeFailed, Message: "no", Kind: "k", Key: "y", Method: "M", Directive: 2, Cause: codeReentrancy, ErrType: "t", ErrData: []byte{9}}},
	}
	for _, in := range resps {
		var out callResp
		if err := decodeCallResp(appendCallResp(nil, &in), &out); err != nil {
			t.Fatal(err)
		}
		if !reflect.DeepEqual(in, out) {
			t.Fatalf("response round trip:\n in  %+v\n out %+v", in, out)
		}
	}
}

var sampleTrace = traceCtx{
	TraceID: [16]byte{0x4b, 0xf9, 0x2f, 0x35, 0x77, 0xb3, 0x4d, 0xa6, 0xa3, 0xce, 0x92, 0x9d, 0x0e, 0x0e, 0x47, 0x36},
	SpanID:  [8]byte{0x00, 0xf0, 0x67, 0xaa, 0x0b, 0xa9, 0x02, 0xb7},
	Flags:   1,
	State:   "congo=t61rcWkgMzE",
}

// An empty trace context costs nothing on the wire: the envelope is the
// one a node without tracing sends. A present one adds its fixed 25 bytes
// and the tracestate.
func TestCallEnvelopeTraceContextIsFreeWhenEmpty(t *testing.T) {
	plain := callReq{Op: opCall, Kind: "k", Key: "x", Method: "M", Chain: []string{"a/b"}, Deadline: 99, Arg: []byte{1}}
	traced := plain
	traced.trace = sampleTrace
	a, b := appendCallReq(nil, &plain), appendCallReq(nil, &traced)
	if a[1] != 0 {
		t.Fatalf("flags of an untraced request: %#x", a[1])
	}
	if got, want := len(b)-len(a), 25+1+len(sampleTrace.State); got != want {
		t.Fatalf("the trace context adds %d bytes, want %d", got, want)
	}
}

// A stream's error frame carries a wire error alone, in the same encoding
// as inside a response; trailing bytes are refused.
func TestWireErrorFrameRoundTrip(t *testing.T) {
	in := &wireError{Code: codeFailed, Message: "no", Kind: "k", Key: "y", Method: "M", Directive: 1, Cause: codeMoving, ErrType: "t", ErrData: []byte{9}}
	out, err := decodeWireError(appendWireError(nil, in))
	if err != nil || !reflect.DeepEqual(in, out) {
		t.Fatalf("round trip: %+v %v", out, err)
	}
	if _, err := decodeWireError(append(appendWireError(nil, in), 0)); !errors.Is(err, errMalformedEnvelope) {
		t.Fatalf("trailing byte: %v", err)
	}
	var r callReq
	if err := decodeCallReq(appendCallReq(nil, &callReq{Op: opSpy, Arg: []byte{0x80}}), &r); err != nil || r.Op != opSpy || len(r.Arg) != 1 {
		t.Fatalf("a spy header: %+v %v", r, err)
	}
}

func TestCallEnvelopeRefusesBadInput(t *testing.T) {
	good := appendCallReq(nil, &callReq{Op: opCall, Kind: "k", Key: "x", Method: "M", Chain: []string{"a"}})
	bad := map[string][]byte{
		"empty":     {},
		"truncated": good[:len(good)-1],
		"flags":     append([]byte{opCall, 0x80}, good[2:]...),
		"point":     append([]byte{opCall, reqPlaced}, good[2:5]...),
		"trace truncated": func() []byte {
			b := appendCallReqHead(nil, &callReq{Op: opCall, Kind: "k", trace: sampleTrace})
			return b[:len(b)-10]
		}(),
		"trace id zero": func() []byte {
			b := appendCallReqHead(nil, &callReq{Op: opCall, Kind: "k", trace: sampleTrace})
			n := len(b) - (25 + 1 + len(sampleTrace.State))
			copy(b[n:n+16], make([]byte, 16))
			return b
		}(),
		"huge str": {1, 0xff, 0xff, 0xff, 0xff, 0x0f},
		"early tag 0": func() []byte {
			b := appendCallReqHead(nil, &callReq{Op: opCall, Kind: "k", early: 1})
			b[len(b)-1] = 0
			return b
		}(),
		"early tag truncated": func() []byte {
			b := appendCallReqHead(nil, &callReq{Op: opCall, Kind: "k", early: 1 << 20})
			return b[:len(b)-1]
		}(),
		"huge chain": func() []byte {
			b := appendCallReq(nil, &callReq{Op: opCall})
			b = b[:len(b)-2]
			return append(b, 0xff, 0xff, 0xff, 0xff, 0x0f)
		}(),
	}
	for name, b := range bad {
		var r callReq
		if err := decodeCallReq(b, &r); !errors.Is(err, errMalformedEnvelope) {
			t.Errorf("%s: %v", name, err)
		}
	}
	var r callResp
	if err := decodeCallResp([]byte{0x80}, &r); !errors.Is(err, errMalformedEnvelope) {
		t.Errorf("unknown response flags: %v", err)
	}
}

// hostileChain is a call request whose chain claims n entries, each the
// empty string: n bytes of zeros after the count, within one message.
func hostileChain(n int) []byte {
	b := appendCallReq(nil, &callReq{Op: opCall, Kind: "shop.Order", Key: "o", Method: "Add"})
	b = b[:len(b)-1] // the empty chain's count
	b = binary.AppendUvarint(b, uint64(n))
	return append(b, make([]byte, n)...)
}

// A call naming 4 million chain entries in 4 MiB is refused from its count,
// with ErrCallChainTooLong and nothing allocated for the entries; a chain
// of MaxCallChain entries still decodes.
func TestCallEnvelopeRefusesLongChain(t *testing.T) {
	hostile := hostileChain(4_000_000)
	var r callReq
	if err := decodeCallReq(hostile, &r); !errors.Is(err, ErrCallChainTooLong) {
		t.Fatalf("4,000,000 entries: %v", err)
	}
	if r.Chain != nil {
		t.Fatalf("entries decoded: %d", len(r.Chain))
	}
	if err := decodeCallReq(hostileChain(MaxCallChain+1), &r); !errors.Is(err, ErrCallChainTooLong) {
		t.Fatalf("MaxCallChain+1 entries: %v", err)
	}
	r = callReq{}
	if err := decodeCallReq(hostileChain(MaxCallChain), &r); err != nil || len(r.Chain) != MaxCallChain {
		t.Fatalf("MaxCallChain entries: %d, %v", len(r.Chain), err)
	}
	allocs := testing.AllocsPerRun(20, func() {
		var r callReq
		_ = decodeCallReq(hostile, &r)
	})
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	for range 10 {
		var r callReq
		_ = decodeCallReq(hostile, &r)
	}
	runtime.ReadMemStats(&after)
	perCall := (after.TotalAlloc - before.TotalAlloc) / 10
	t.Logf("refusing 4,000,000 entries: %.0f allocations, %d bytes", allocs, perCall)
	if allocs > 8 || perCall > 4<<10 {
		t.Fatalf("refusing 4,000,000 entries cost %.0f allocations and %d bytes; want at most 8 and 4 KiB", allocs, perCall)
	}
}

// FuzzCallEnvelope decodes arbitrary bytes as call requests and responses:
// never a panic, and what decodes re-encodes to the same bytes.
func FuzzCallEnvelope(f *testing.F) {
	f.Add(appendCallReq(nil, &callReq{Op: opCall, Kind: "shop.Order", Key: "o", Method: "Add", Arg: []byte{1}, Chain: []string{"x/y"}}))
	f.Add(appendCallResp(nil, &callResp{Err: &wireError{Code: codeFailed, Message: "m"}}))
	f.Add([]byte{1, 0xff, 0xff, 0xff, 0xff, 0x0f})
	f.Add(hostileChain(4_000_000)) // 4 MiB naming 4 million entries: refused from the count
	f.Add(hostileChain(MaxCallChain + 1))
	f.Add(appendCallReq(nil, &callReq{Op: opCall, Kind: "shop.Order", Key: "o", Method: "Add", Arg: []byte{1}, trace: sampleTrace}))
	f.Add(appendCallReq(nil, &callReq{Op: opStream, Kind: "k", Key: "x", Method: "T", at: placement{point: 9, known: true}, trace: traceCtx{TraceID: [16]byte{1}, SpanID: [8]byte{2}}}))
	f.Add(appendCallReq(nil, &callReq{Op: opCall, Kind: "k", Key: "x", Method: "Add", Arg: []byte{1}, early: 300, trace: sampleTrace}))
	f.Fuzz(func(t *testing.T, b []byte) {
		var r callReq
		if decodeCallReq(b, &r) == nil {
			if got := appendCallReq(nil, &r); string(got) != string(b) {
				// Non-minimal varints decode but re-encode shorter; only
				// check that the re-encoding decodes to the same request.
				var again callReq
				if err := decodeCallReq(got, &again); err != nil || !reflect.DeepEqual(again, r) {
					t.Fatalf("request does not survive re-encoding: %v", err)
				}
			}
		}
		var p callResp
		_ = decodeCallResp(b, &p)
	})
}

// FuzzStreamFrames reads arbitrary bytes as a stream's frames, as the
// other side of a stream would send them: never a panic, every frame
// within the cap, and no buffer larger than what was received.
func FuzzStreamFrames(f *testing.F) {
	frame := func(kind byte, payload []byte) []byte {
		return append(binary.AppendUvarint([]byte{kind}, uint64(len(payload))), payload...)
	}
	f.Add(append(frame(frameStatus, nil), frame(frameElem, []byte{0x01})...))
	f.Add(frame(frameElem, make([]byte, 300)))
	f.Add([]byte{frameElem, 0xff, 0xff, 0x3f}) // claims 1 MiB, sends nothing
	f.Add([]byte{frameEnd, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x01})
	f.Fuzz(func(t *testing.T, b []byte) {
		const max = 1 << 20
		fc := &frameConn{r: bufio.NewReader(bytes.NewReader(b)), max: max}
		for {
			_, p, err := fc.read()
			if len(p) > max || cap(p) > len(b)+64<<10 {
				t.Fatalf("frame of %d bytes (cap %d) from %d bytes of input", len(p), cap(p), len(b))
			}
			if err != nil {
				return
			}
		}
	})
}
