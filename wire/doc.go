// Package wire is Casty's serialization layer: a registry of message types
// under stable wire names, recursive validation of what may cross the wire,
// and the msgpack encoding every node speaks.
//
// # What it guarantees
//
// A type is checked once, when it is registered (in Casty: at package
// initialisation, through casty.Message and casty.Actor), never at send
// time. Validation walks the type recursively and rejects anything that
// cannot be encoded faithfully — channels, functions, complex numbers,
// unsafe pointers, interfaces and uintptrs — with an error naming the full
// field path of each such field, and how to leave it out:
//
//	shop.Order.Lines[].Sku: chan int is not serializable (to leave the field out, unexport it or tag it `msgpack:"-"`)
//
// A named struct type a registered type uses is validated when it is
// registered itself, in any order; Registry.Unregistered reports those
// never registered, with their path:
//
//	shop.Order.Lines[]: shop.Line is not registered
//
// Self-referential types (a tree of *Node) are allowed. time.Time, []byte,
// slices, arrays, pointers, maps keyed by strings or integers and nested
// registered structs are all supported, and so is any type that encodes
// itself (msgpack.Marshaler or msgpack.CustomEncoder).
//
// Encoding is msgpack with exported field names as map keys (a `msgpack`
// struct tag renames a field, `msgpack:"-"` skips it), so schemas evolve in
// both directions: a receiver ignores fields it does not know and leaves
// fields the sender did not know at their zero value. See SPEC.md.
//
// Decoding never trusts a length prefix: before any allocation, Unmarshal
// scans the input and refuses a container that claims more elements than
// bytes remain, nesting deeper than MaxDepth, or trailing bytes. Bad input
// yields an error wrapping ErrMalformed, never a panic.
//
// AppendValue and UnmarshalValue are the typed entry points a hot path
// uses when it knows its Go type (Casty's calls do): they encode and decode
// int, int64, uint, uint64, float64, bool and string themselves, with no
// encoder and no heap-allocated destination, and hand every other type to
// AppendMarshal and Unmarshal. The bytes and values are the same either
// way.
//
// # What the caller must do
//
// Register every named struct type that crosses the wire, in any order
// (Go initialises package-level variables file by file, so an order would
// depend on file names), and check with Unregistered once registration is
// done (Casty does when a system starts). Give a type an explicit name
// with Register's name argument before renaming it in Go, so old and new
// binaries still agree.
//
// # On its own
//
// The module depends on no other Casty module (only msgpack): a program that
// wants msgpack messages checked once at registration and named stably
// across renames can take it alone with go get
// github.com/casty-go/casty/wire.
package wire
