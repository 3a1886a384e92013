package mux

import (
	"encoding/binary"
)

// Envelope layout (see SPEC.md): every lane's byte stream (carried in
// records, see conn.go) is a sequence of envelopes, each a fixed 14-byte header and a payload.
//
//	offset size field
//	0      4    length  payload bytes on the wire (after compression), big endian
//	4      1    type    frameRequest..frameClaimAnswer
//	5      1    flags   bit 0: payload compressed with the session codec
//	6      8    id      correlation id, big endian (0 for one-way messages)
const envelopeHeaderSize = 14

// maxWireLength is the largest length any configuration may allow (1 GiB).
const maxWireLength = 1 << 30

// Envelope types.
const (
	frameRequest  uint8 = 1 // a request; the peer answers with frameResponse or frameError and the same id
	frameResponse uint8 = 2 // a successful answer
	frameError    uint8 = 3 // a failed answer: u16 code, then the message
	frameMessage  uint8 = 4 // a one-way message, id 0
	frameCancel   uint8 = 5 // the requester gave up on id; empty payload
	// 6 and 7 are the claim check's (claim.go).
)

// Envelope flags.
const (
	flagCompressed uint8 = 1 << 0
	knownFlags           = flagCompressed
)

// envelope is one decoded envelope header plus its payload as it came off
// the wire (still compressed when flags has flagCompressed).
type envelope struct {
	typ     uint8
	flags   uint8
	id      uint64
	payload []byte
}

// appendEnvelopeHeader appends an encoded envelope header to dst.
func appendEnvelopeHeader(dst []byte, typ, flags uint8, id uint64, n int) []byte {
	dst = binary.BigEndian.AppendUint32(dst, uint32(n))
	dst = append(dst, typ, flags)
	return binary.BigEndian.AppendUint64(dst, id)
}

// parseEnvelopeHeader validates a header against the protocol rules and the
// message limit. It is pure: any error is a protocol violation.
func parseEnvelopeHeader(h []byte, maxMessage int) (typ, flags uint8, id uint64, n int, err error) {
	n64 := binary.BigEndian.Uint32(h[0:4])
	typ, flags = h[4], h[5]
	id = binary.BigEndian.Uint64(h[6:14])
	if typ < frameRequest || typ > frameClaimAnswer {
		return 0, 0, 0, 0, protocolError("unknown envelope type %d", typ)
	}
	if flags&^knownFlags != 0 {
		return 0, 0, 0, 0, protocolError("unknown envelope flags %#x", flags)
	}
	if uint64(n64) > uint64(maxMessage) {
		return 0, 0, 0, 0, protocolError("envelope of %d bytes exceeds limit %d", n64, maxMessage)
	}
	switch typ {
	case frameCancel:
		if n64 != 0 || flags != 0 {
			return 0, 0, 0, 0, protocolError("cancel envelope with payload")
		}
	case frameMessage:
		if id != 0 {
			return 0, 0, 0, 0, protocolError("one-way message with correlation id")
		}
	case frameError:
		if n64 < 2 {
			return 0, 0, 0, 0, protocolError("error envelope shorter than its code")
		}
	case frameClaim, frameClaimAnswer:
		want := uint32(claimPayloadSize)
		if typ == frameClaimAnswer {
			want = 1
		}
		if n64 != want || flags != 0 {
			return 0, 0, 0, 0, protocolError("claim envelope of %d bytes, flags %#x", n64, flags)
		}
	}
	if typ != frameMessage && id == 0 {
		return 0, 0, 0, 0, protocolError("envelope type %d without correlation id", typ)
	}
	return typ, flags, id, int(n64), nil
}

// encodeRemoteError builds the payload of a frameError.
func encodeRemoteError(code uint16, msg string, max int) []byte {
	if len(msg) > max-2 {
		msg = msg[:max-2]
	}
	b := make([]byte, 2, 2+len(msg))
	binary.BigEndian.PutUint16(b, code)
	return append(b, msg...)
}

// decodeRemoteError parses the payload of a frameError (at least 2 bytes,
// guaranteed by parseEnvelopeHeader and by decompression checks).
func decodeRemoteError(p []byte) *RemoteError {
	if len(p) < 2 {
		return &RemoteError{Code: CodeApplication, Message: "malformed error"}
	}
	return &RemoteError{Code: binary.BigEndian.Uint16(p), Message: string(p[2:])}
}
