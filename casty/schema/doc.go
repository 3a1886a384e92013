// Package schema is the data form of a Casty program's wire contract: every
// actor kind, service and registered message a process declared, with the
// encoded type of each state field, argument and result.
//
// What users need to declare and call actors is in package casty; what
// operators and tools read is here, so that `go doc casty` stays short. A
// program writes its schema with casty.WriteSchema (typically behind a flag
// of its own, e.g. -casty-schema) or gets it with casty.Schemas; cmd/castyctl
// reads it back (`castyctl schema FILE`) and compares two of them in CI
// (`castyctl schema check OLD NEW`).
//
// Every node of a rolling deploy must agree on the contract where it matters
// (wire/SPEC.md, "Schema evolution"): a field keeps its type, a wire name
// keeps its meaning, a kind keeps its replica count. A Schema is stable:
// sorted by name, with types spelled the same way on every platform and Go
// version, so two schemas of unchanged code are byte-identical in JSON. The
// JSON field names are part of the format, versioned by Version.
package schema
