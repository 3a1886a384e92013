package ring

import "testing"

// TestSpecVectors reproduces the vectors of SPEC.md §2 (and Point of §3),
// which every implementation of the ring must match.
func TestSpecVectors(t *testing.T) {
	id, err := ParseNodeID("00000000-0000-0000-0000-000000000001")
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name string
		got  uint64
		want uint64
	}{
		{"token(…0001, 0)", Token(id, 0), 15258524739324641029},
		{"token(…0001, 1)", Token(id, 1), 3611124066911778106},
		{`H("user:42")`, HashString("user:42"), 15647646390214308482},
		{`H("")`, Hash(nil), 16476032584258269876},
		{`H([]byte("user:42"))`, Hash([]byte("user:42")), 15647646390214308482},
		{`Point("user", "42") = H("user/42")`, Point("user", "42"), HashString("user/42")},
	} {
		if tc.got != tc.want {
			t.Errorf("%s = %d, want %d", tc.name, tc.got, tc.want)
		}
	}
}
