package mux

import (
	"bytes"
	"encoding/binary"
	"errors"
	"io"
	"reflect"
	"runtime"
	"testing"

	"github.com/klauspost/compress/zstd"
)

// FuzzEnvelope feeds arbitrary bytes to the lane decoder. It must never
// panic, never return a payload over the limit, and every envelope it
// accepts must re-encode to exactly the bytes it consumed.
func FuzzEnvelope(f *testing.F) {
	seed := func(typ, flags uint8, id uint64, p []byte) []byte {
		return append(appendEnvelopeHeader(nil, typ, flags, id, len(p)), p...)
	}
	f.Add(seed(frameRequest, 0, 1, []byte("hello")))
	f.Add(append(seed(frameResponse, 0, 1, []byte("a")), seed(frameMessage, 0, 0, nil)...))
	f.Add(seed(frameError, 0, 5, encodeRemoteError(CodeUser, "nope", 100)))
	f.Add(seed(frameCancel, 0, 9, nil))
	f.Add(seed(frameMessage, flagCompressed, 0, zlibCodec{}.compress(nil, bytes.Repeat([]byte("z"), 5000))))
	f.Add(seed(frameMessage, flagCompressed, 0, testZstd.compress(nil, bytes.Repeat([]byte("z"), 5000))))
	f.Add(seed(frameRequest, 0, 1, nil)[:10])
	f.Add(appendEnvelopeHeader(nil, frameRequest, 0, 1, 1<<30))
	const max = 64 << 10
	f.Fuzz(func(t *testing.T, data []byte) {
		var reencoded []byte
		used, err := parseEnvelopes(data, max, func(env envelope) error {
			if len(env.payload) > max {
				t.Fatalf("payload of %d bytes passed a %d limit", len(env.payload), max)
			}
			reencoded = append(appendEnvelopeHeader(reencoded, env.typ, env.flags, env.id, len(env.payload)), env.payload...)
			if env.flags&flagCompressed != 0 {
				for _, c := range []codec{zlibCodec{}, testZstd} {
					if out, err := c.decompress(env.payload, max); err == nil && len(out) > max {
						t.Fatalf("%s inflated to %d bytes past the limit", c.name(), len(out))
					}
				}
			}
			if env.typ == frameError {
				_ = decodeRemoteError(env.payload)
			}
			return nil
		})
		if err != nil && !errors.Is(err, ErrProtocol) {
			t.Fatalf("unexpected error class: %v", err)
		}
		if !bytes.Equal(data[:used], reencoded) {
			t.Fatal("accepted envelopes do not re-encode to their input")
		}
		// Fed in two arbitrary pieces, as records cut a lane's stream, the
		// same envelopes come out.
		if err == nil && len(data) > 1 {
			cut := int(data[0]) % len(data)
			var again []byte
			buf := append([]byte(nil), data[:cut]...)
			n1, err1 := parseEnvelopes(buf, max, func(env envelope) error {
				again = append(appendEnvelopeHeader(again, env.typ, env.flags, env.id, len(env.payload)), env.payload...)
				return nil
			})
			buf = append(buf[n1:], data[cut:]...)
			if err1 == nil {
				_, _ = parseEnvelopes(buf, max, func(env envelope) error {
					again = append(appendEnvelopeHeader(again, env.typ, env.flags, env.id, len(env.payload)), env.payload...)
					return nil
				})
			}
			if err1 == nil && !bytes.Equal(again, reencoded) {
				t.Fatal("envelopes split across two records decode differently")
			}
		}
	})
}

// FuzzRecords feeds arbitrary bytes to the connection reader: records are
// split by channel, lane bytes reassembled into envelopes. It must never
// panic, fail only with a protocol error or the input's end, and never
// hold more than one record plus one envelope per lane.
func FuzzRecords(f *testing.F) {
	rec := func(ch byte, b []byte) []byte {
		return append([]byte{ch, byte(len(b) >> 24), byte(len(b) >> 16), byte(len(b) >> 8), byte(len(b))}, b...)
	}
	env := append(appendEnvelopeHeader(nil, frameRequest, 0, 1, 5), "hello"...)
	f.Add(rec(byte(LaneMessage), env))
	f.Add(append(rec(byte(LaneMessage), env[:7]), rec(byte(LaneMessage), env[7:])...))
	f.Add(append(rec(chanYamux, []byte{0, 1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0}), rec(byte(LaneControl), env)...))
	f.Add(rec(9, env))
	f.Add([]byte{1, 0xff, 0xff, 0xff, 0xff})
	f.Add(rec(byte(LaneReplication), appendEnvelopeHeader(nil, frameMessage, 0, 0, 1<<30)))
	const max = 64 << 10
	f.Fuzz(func(t *testing.T, data []byte) {
		rr := newRecordReader(bytes.NewReader(data), nil)
		var lanes [numLanes][]byte
		for {
			ch, n, err := rr.next()
			if err == nil {
				if ch == chanYamux {
					_, err = rr.appendBody(nil, n)
				} else if lanes[ch], err = rr.appendBody(lanes[ch], n); err == nil {
					var used int
					used, err = parseEnvelopes(lanes[ch], max, func(envelope) error { return nil })
					lanes[ch] = lanes[ch][used:]
					if len(lanes[ch]) > maxRecord+envelopeHeaderSize+max {
						t.Fatalf("lane %d holds %d bytes", ch, len(lanes[ch]))
					}
				}
			}
			if err != nil {
				if err != io.EOF && !errors.Is(err, ErrProtocol) {
					t.Fatalf("unexpected error class: %v", err)
				}
				return
			}
		}
	})
}

// sealFuzzKey is the key of FuzzSealedRecords and its seed corpus
// (testdata/fuzz/FuzzSealedRecords).
var sealFuzzKey = []byte("casty mux sealed-record fuzz key")

// sealedRound seals records of the given channels and bodies as one
// write round, with a fresh cipher of sealFuzzKey.
func sealedRound(chans []byte, bodies [][]byte) []byte {
	var out []byte
	for i, b := range bodies {
		out = appendRecord(out, chans[i], b, sealOverhead)
	}
	newRecordCipher(sealFuzzKey).sealRound(out)
	return out
}

// FuzzSealedRecords feeds arbitrary bytes to a sealed session's record
// reader, which must never panic and fail only with a protocol error
// (ErrRecordForged among them) or the input's end; and it seals records
// cut from the input and reads them back, which must give the same
// channels and bytes in order.
func FuzzSealedRecords(f *testing.F) {
	env := append(appendEnvelopeHeader(nil, frameRequest, 0, 1, 5), "hello"...)
	f.Add(sealedRound([]byte{byte(LaneMessage)}, [][]byte{env}))
	f.Add(sealedRound([]byte{byte(LaneControl), chanYamux}, [][]byte{env, {0, 1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0}}))
	forged := sealedRound([]byte{byte(LaneMessage)}, [][]byte{env})
	forged[len(forged)-1] ^= 1
	f.Add(forged)
	f.Add(sealedRound([]byte{byte(LaneMessage)}, [][]byte{env})[:recordHeaderSize+len(env)])
	f.Add([]byte{1, 0xff, 0xff, 0xff, 0xff})
	f.Fuzz(func(t *testing.T, data []byte) {
		rr := newRecordReader(bytes.NewReader(data), newRecordCipher(sealFuzzKey))
		for {
			ch, n, err := rr.next()
			if err == nil {
				var body []byte
				if body, err = rr.appendBody(nil, n); err == nil && (len(body) != n || ch >= numChannels) {
					t.Fatalf("record of channel %d opened to %d bytes, header said %d", ch, len(body), n)
				}
			}
			if err != nil {
				if err != io.EOF && !errors.Is(err, ErrProtocol) {
					t.Fatalf("unexpected error class: %v", err)
				}
				break
			}
		}
		// Cut the input into records: each byte k starts a record of
		// channel k%numChannels and the next k%64+1 bytes.
		var chans []byte
		var bodies [][]byte
		for rest := data; len(rest) > 1; {
			k := int(rest[0])
			n := min(k%64+1, len(rest)-1)
			chans, bodies = append(chans, byte(k%numChannels)), append(bodies, rest[1:1+n])
			rest = rest[1+n:]
		}
		rr = newRecordReader(bytes.NewReader(sealedRound(chans, bodies)), newRecordCipher(sealFuzzKey))
		for i := range bodies {
			ch, n, err := rr.next()
			if err != nil {
				t.Fatalf("record %d: %v", i, err)
			}
			body, err := rr.appendBody(nil, n)
			if err != nil || ch != chans[i] || !bytes.Equal(body, bodies[i]) {
				t.Fatalf("record %d: channel %d %q (%v), sealed channel %d %q", i, ch, body, err, chans[i], bodies[i])
			}
		}
		if _, _, err := rr.next(); err != io.EOF {
			t.Fatalf("after the last record: %v", err)
		}
	})
}

// FuzzHandshake feeds arbitrary bytes to the handshake decoders and the
// listener's decision. Decoding must never panic, and whatever decodes
// must survive an encode/decode round trip unchanged.
func FuzzHandshake(f *testing.F) {
	h := hello{versions: []uint16{1}, nodeID: testID(1), nonce: 42, role: RoleMember,
		cluster: "casty", addr: "10.0.0.1:7001", codecs: []string{CodecZstd, CodecZlib}}
	f.Add(h.encode())
	ha := h
	ha.versions, ha.creds, ha.challenge = []uint16{4}, credAll, [authNonceSize]byte{1, 2, 3}
	f.Add(ha.encode())
	ha.versions = []uint16{5, 4}
	f.Add(ha.encode())
	f.Add((&challenge{cred: CredentialMember, nonce: [authNonceSize]byte{9}}).encode())
	f.Add((&proofMsg{proof: [32]byte{5}}).encode())
	w := welcome{version: 1, nodeID: testID(2), role: RoleClient, addr: "x:1", codec: CodecZlib}
	f.Add(w.encode())
	r := reject{code: CodeWrongCluster, msg: "cluster a != b"}
	f.Add(r.encode())
	f.Add([]byte("CMUX\x01\xff\xff"))
	f.Add([]byte("GET / HTTP/1.1\r\n\r\n"))
	f.Add([]byte("\x16\x03\x01\x00\xa5\x01\x00\x00\xa1\x03\x03")) // a TLS ClientHello
	local := localInfo{nodeID: testID(2), role: RoleMember, cluster: "casty", codecs: []string{CodecZstd, CodecZlib}}
	f.Fuzz(func(t *testing.T, data []byte) {
		typ, body, err := readHandshake(bytes.NewReader(data))
		if err != nil {
			return
		}
		// The decoders take any body, whatever the type byte said.
		if h, err := decodeHello(body); err == nil {
			back, err := decodeHello(h.encode()[hsHeaderSize:])
			if err != nil || !reflect.DeepEqual(h, back) {
				t.Fatalf("hello round trip: %+v vs %+v (%v)", h, back, err)
			}
			if w, rej := local.accept(h); rej == nil {
				if _, err := decodeWelcome(w.encode()[hsHeaderSize:]); err != nil {
					t.Fatalf("our own welcome does not decode: %v", err)
				}
			}
		}
		if w, err := decodeWelcome(body); err == nil {
			back, err := decodeWelcome(w.encode()[hsHeaderSize:])
			if err != nil || back != w {
				t.Fatalf("welcome round trip: %+v vs %+v (%v)", w, back, err)
			}
			_ = local.check(w)
		}
		if c, err := decodeChallenge(body); err == nil {
			back, err := decodeChallenge(c.encode()[hsHeaderSize:])
			if err != nil || back != c {
				t.Fatalf("challenge round trip: %+v vs %+v (%v)", c, back, err)
			}
		}
		if p, err := decodeProof(body); err == nil {
			back, err := decodeProof(p.encode()[hsHeaderSize:])
			if err != nil || back != p {
				t.Fatalf("proof round trip: %+v vs %+v (%v)", p, back, err)
			}
		}
		if r, err := decodeReject(body); err == nil {
			back, err := decodeReject(r.encode()[hsHeaderSize:])
			if err != nil || back != r {
				t.Fatalf("reject round trip: %+v vs %+v (%v)", r, back, err)
			}
		}
		_ = typ
	})
}

func TestHandshakeDecision(t *testing.T) {
	local := localInfo{nodeID: testID(2), role: RoleMember, cluster: "c", codecs: []string{CodecZlib, CodecZstd}}
	base := hello{versions: []uint16{ProtocolVersion}, nodeID: testID(1), role: RoleClient, cluster: "c",
		codecs: []string{CodecZstd, CodecZlib}}
	cases := []struct {
		name  string
		edit  func(*hello)
		code  HandshakeCode
		codec string
	}{
		{"accepted, dialler's preference wins", func(h *hello) {}, 255, CodecZstd},
		{"wrong cluster", func(h *hello) { h.cluster = "d" }, CodeWrongCluster, ""},
		{"no common version", func(h *hello) { h.versions = []uint16{7, 8} }, CodeNoCommonVersion, ""},
		{"itself", func(h *hello) { h.nodeID = testID(2) }, CodeSelf, ""},
		{"no common codec", func(h *hello) { h.codecs = []string{"lz4"} }, 255, ""},
		{"newer versions offered too", func(h *hello) { h.versions = []uint16{9, ProtocolVersion} }, 255, CodecZstd},
	}
	for _, c := range cases {
		h := base
		c.edit(&h)
		w, rej := local.accept(h)
		switch {
		case c.code == 255 && rej != nil:
			t.Errorf("%s: rejected %v", c.name, rej.code)
		case c.code == 255 && (w.codec != c.codec || w.version != ProtocolVersion):
			t.Errorf("%s: welcome %+v", c.name, w)
		case c.code != 255 && (rej == nil || rej.code != c.code):
			t.Errorf("%s: got %+v %+v", c.name, w, rej)
		}
	}
}

func TestCodecsAreBounded(t *testing.T) {
	big := make([]byte, 1<<20)
	for _, c := range []codec{zlibCodec{}, testZstd} {
		z := c.compress(nil, big)
		if out, err := c.decompress(z, len(big)); err != nil || len(out) != len(big) {
			t.Fatalf("%s: at the limit: %v", c.name(), err)
		}
		if _, err := c.decompress(z, len(big)-1); err == nil {
			t.Fatalf("%s: a bomb passed", c.name())
		}
	}
}

func TestTieBreakIsSymmetricAndTotal(t *testing.T) {
	mk := func(init byte, nonce uint64) *Session { return &Session{initiator: testID(init), nonce: nonce} }
	cases := []struct {
		a, b  *Session
		aWins bool
	}{
		{mk(1, 9), mk(2, 1), true},  // smaller initiator wins whatever the nonce
		{mk(3, 1), mk(2, 9), false}, // ...
		{mk(1, 1), mk(1, 2), true},  // same initiator: smaller nonce
		{mk(1, 5), mk(1, 4), false},
	}
	for i, c := range cases {
		if tieBreak(c.a, c.b) != c.aWins || tieBreak(c.b, c.a) == c.aWins {
			t.Errorf("case %d: not the expected, symmetric answer", i)
		}
	}
}

// TestZstdBombsAreRefusedWithinTheLimit sends the zstd decoder frames that
// decode past the limit, declared or not, and a frame declaring more than
// its blocks can hold: each is refused, and what the refusal allocates is
// bounded by the limit (twice it, for the doubling an undeclared size
// needs), not by what the frame would decode to. A frame of exactly the
// limit that does not declare its size still decodes.
func TestZstdBombsAreRefusedWithinTheLimit(t *testing.T) {
	const limit = 1 << 20
	streamed := func(src []byte) []byte { // no content size in the header
		var buf bytes.Buffer
		w, err := zstd.NewWriter(&buf, zstd.WithEncoderConcurrency(1))
		if err != nil {
			t.Fatal(err)
		}
		if _, err := w.Write(src); err != nil {
			t.Fatal(err)
		}
		if err := w.Close(); err != nil {
			t.Fatal(err)
		}
		return buf.Bytes()
	}
	// Magic, a single-segment descriptor with an 8-byte content size of
	// 1 MiB (the limit), and one last RLE block of 1 byte repeated 16 times.
	lying := []byte{0x28, 0xb5, 0x2f, 0xfd, 0xe0}
	lying = binary.LittleEndian.AppendUint64(lying, limit)
	lying = append(lying, 0x83, 0x00, 0x00, 'x') // last, RLE, size 16
	cases := []struct {
		name     string
		frame    []byte
		maxAlloc uint64
	}{
		{"declared", testZstd.compress(nil, make([]byte, limit+1)), 64 << 10},
		{"undeclared", streamed(make([]byte, 4*limit)), 2*limit + 128<<10},
		{"declares more than it holds", lying, 64 << 10},
	}
	_, _ = testZstd.decompress(testZstd.compress(nil, []byte("warm up")), limit)
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			var before, after runtime.MemStats
			runtime.GC()
			runtime.ReadMemStats(&before)
			out, err := testZstd.decompress(c.frame, limit)
			runtime.ReadMemStats(&after)
			if err == nil {
				t.Fatalf("%d bytes of a %d-byte frame accepted", len(out), len(c.frame))
			}
			if alloc := after.TotalAlloc - before.TotalAlloc; alloc > c.maxAlloc {
				t.Fatalf("refusing it allocated %d bytes, more than %d", alloc, c.maxAlloc)
			}
		})
	}
	src := codecPayload(limit)
	if out, err := testZstd.decompress(streamed(src), limit); err != nil || !bytes.Equal(out, src) {
		t.Fatalf("an undeclared frame of exactly the limit: %d bytes, %v", len(out), err)
	}
}
