package mux

import (
	"crypto/cipher"
	"crypto/hkdf"
	"crypto/sha256"
	"encoding/binary"

	"golang.org/x/crypto/chacha20poly1305"
)

// Sealed records (SPEC.md §2, "Sealed records"). A session whose
// handshake proved a secret, at protocol version 5, seals every record
// with ChaCha20-Poly1305: one key per direction, derived with HKDF-SHA256
// from the proven secret and the handshake transcript (both challenges,
// both node ids, the dialler's proof and the welcome), and a nonce that
// counts the direction's records from 0. The record header (channel and
// plaintext length) stays in the clear and is the AEAD's additional data;
// the body is the ciphertext followed by the 16-byte tag. A record that
// does not open (altered, injected, replayed, reordered or dropped before
// it, or sealed by someone without the keys) closes the connection with
// ErrRecordForged.
//
// A relay that passed the handshake through (a host a member dials,
// forwarding the hello, challenge and proofs to another member) holds
// neither the secret nor the keys: it can forward the sealed records or
// drop them, nothing else.

// sealVersion is the first protocol version whose sessions seal records
// when the handshake proved a secret.
const sealVersion uint16 = 5

// sealOverhead is what sealing adds to a record's body: the tag.
const sealOverhead = chacha20poly1305.Overhead

// HKDF labels of the two directions' keys.
const (
	labelDiallerKey  = "casty-mux/5 dialler to listener"
	labelListenerKey = "casty-mux/5 listener to dialler"
)

// sessionKeys are the record keys of one sealed session, one per
// direction.
type sessionKeys struct {
	dialler, listener [chacha20poly1305.KeySize]byte // dialler → listener, listener → dialler
}

// keys derives a sealed session's record keys from the secret both sides
// proved and the transcript up to the welcome (the input of the
// listener's proof): HKDF-SHA256 with the secret as input key material,
// SHA-256 of the transcript as salt, and one label per direction.
func (t *transcript) keys(secret []byte) (sessionKeys, error) {
	salt := sha256.Sum256(t.b)
	prk, err := hkdf.Extract(sha256.New, secret, salt[:])
	if err != nil {
		return sessionKeys{}, err
	}
	var k sessionKeys
	for _, d := range []struct {
		key   *[chacha20poly1305.KeySize]byte
		label string
	}{{&k.dialler, labelDiallerKey}, {&k.listener, labelListenerKey}} {
		b, err := hkdf.Expand(sha256.New, prk, d.label, chacha20poly1305.KeySize)
		if err != nil {
			return sessionKeys{}, err
		}
		copy(d.key[:], b)
	}
	return k, nil
}

// ciphers returns the sealing cipher (for what this side sends) and the
// opening cipher (for what it receives).
func (k *sessionKeys) ciphers(dialler bool) (seal, open *recordCipher) {
	send, recv := k.dialler[:], k.listener[:]
	if !dialler {
		send, recv = recv, send
	}
	return newRecordCipher(send), newRecordCipher(recv)
}

// recordCipher seals or opens one direction's records, in order. Only the
// connection's writer (sealing) or reader (opening) uses it.
type recordCipher struct {
	aead  cipher.AEAD
	count uint64 // records sealed or opened so far: the next nonce
	nonce [chacha20poly1305.NonceSize]byte
}

func newRecordCipher(key []byte) *recordCipher {
	a, _ := chacha20poly1305.New(key) // fails only on a key of another size than KeySize
	return &recordCipher{aead: a}
}

// next returns the nonce of the next record: 4 zero bytes, then the
// record's number (u64). It never repeats within a direction: at ten
// million records a second the count takes 58,000 years to wrap.
func (c *recordCipher) next() []byte {
	binary.BigEndian.PutUint64(c.nonce[4:], c.count)
	c.count++
	return c.nonce[:]
}

// sealRound seals, in place, every record of a write round framed by
// appendRecord with room for the tags: each body is followed by
// sealOverhead bytes it is sealed into.
func (c *recordCipher) sealRound(out []byte) {
	for i := 0; i < len(out); {
		n := int(binary.BigEndian.Uint32(out[i+1 : i+recordHeaderSize]))
		hdr := out[i : i+recordHeaderSize]
		body := out[i+recordHeaderSize : i+recordHeaderSize+n]
		c.aead.Seal(body[:0], c.next(), body, hdr)
		i += recordHeaderSize + n + sealOverhead
	}
}

// open opens a sealed body (ciphertext and tag) in place and returns the
// plaintext, a prefix of body.
func (c *recordCipher) open(hdr, body []byte) ([]byte, error) {
	p, err := c.aead.Open(body[:0], c.next(), body, hdr)
	if err != nil {
		return nil, ErrRecordForged
	}
	return p, nil
}
