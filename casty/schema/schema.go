package schema

// Version is the version of the Schema format casty.WriteSchema writes.
const Version = 1

// Schema describes every actor kind, service and registered message of a
// process, each list sorted by wire name.
type Schema struct {
	Version  int       `json:"version"`
	Kinds    []Kind    `json:"kinds"`
	Messages []Message `json:"messages"`
}

// Kind is one actor kind or service.
type Kind struct {
	Name     string   `json:"name"`    // wire name
	GoType   string   `json:"go_type"` // Go type, informative only
	Service  bool     `json:"service,omitempty"`
	Replicas int      `json:"replicas"`
	State    []Field  `json:"state"` // exported fields (none for a service)
	Methods  []Method `json:"methods"`
}

// Method is one handler.
type Method struct {
	Name   string `json:"name"`
	Shape  string `json:"shape"`            // "unary", "server-stream", "client-stream", "duplex"
	Arg    string `json:"arg,omitempty"`    // argument (or element) type; empty for none
	Result string `json:"result,omitempty"` // result (or element) type; empty for error only
}

// Message is one registered message struct.
type Message struct {
	Name   string  `json:"name"`    // wire name
	GoType string  `json:"go_type"` // Go type, informative only
	Fields []Field `json:"fields"`
}

// Field is one encoded field: its wire name (the Go name or its msgpack
// tag) and its type.
//
// Types are spelled: bool, string, int, int8 … int64, uint … uint64,
// float32, float64, bytes ([]byte), time (time.Time), []T (slices and
// arrays: both encode as arrays), map[K]V, msg(NAME) for a registered
// message, struct{name T; …} for an anonymous or embedded struct, and
// custom(GoType) for a type that encodes itself. A pointer is spelled as
// its pointee: it encodes as the pointee or nil.
type Field struct {
	Name string `json:"name"`
	Type string `json:"type"`
}
