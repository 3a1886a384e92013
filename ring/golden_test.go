package ring

import (
	"bytes"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// Regenerate the golden files with: go test -run Golden -update
// A diff in testdata/ after that is a protocol change: every node of a
// cluster must compute the same ring.
var update = flag.Bool("update", false, "rewrite testdata/*.golden from the current implementation")

// goldenIDs are the node ids whose tokens are pinned in testdata/tokens.golden.
var goldenIDs = []string{
	"00000000-0000-0000-0000-000000000001",
	"00000000-0000-0000-0000-000000000002",
	"ffffffff-ffff-ffff-ffff-ffffffffffff",
	"6ba7b810-9dad-11d1-80b4-00c04fd430c8",
}

// placementMembers is the fixed five-member ring of testdata/placement.golden.
var placementMembers = []string{
	"11111111-1111-4111-8111-111111111111",
	"22222222-2222-4222-8222-222222222222",
	"33333333-3333-4333-8333-333333333333",
	"44444444-4444-4444-8444-444444444444",
	"55555555-5555-4555-8555-555555555555",
}

// placementKeys are the (kind, key) pairs of testdata/placement.golden.
func placementKeys() [][2]string {
	keys := [][2]string{
		{"user", "42"}, {"user", ""}, {"", ""}, {"", "x"}, {"shop.StockItem", "sku-1234"},
		{"github.com/casty-go/casty/examples.Greeter", "front-door"},
		{"user", "ключ"}, {"user", "日本語"}, {"user", "emoji-🙂"}, {"user", "a/b/c"},
		{"user", "with space"}, {"user", "tab\there"},
	}
	for i := range 100 {
		keys = append(keys, [2]string{"test", "key-" + strconv.Itoa(i)})
	}
	return keys
}

func goldenTokens(t *testing.T) []byte {
	var b bytes.Buffer
	b.WriteString("# ring tokens: node id, vnode index, token = H(id bytes || uint32 BE index), decimal\n")
	for _, s := range goldenIDs {
		id, err := ParseNodeID(s)
		if err != nil {
			t.Fatal(err)
		}
		for i := uint32(0); i < VNodes; i++ {
			fmt.Fprintf(&b, "%s %d %d\n", id, i, Token(id, i))
		}
	}
	return b.Bytes()
}

func goldenPlacement(t *testing.T) []byte {
	ids := make([]NodeID, len(placementMembers))
	for i, s := range placementMembers {
		id, err := ParseNodeID(s)
		if err != nil {
			t.Fatal(err)
		}
		ids[i] = id
	}
	r := mustNew(t, ids)
	var b bytes.Buffer
	b.WriteString("# placement on the five-member ring of " + strings.Join(placementMembers, ", ") + "\n")
	b.WriteString("# columns (tab-separated): kind (Go-quoted), key (Go-quoted), point = H(kind + \"/\" + key),\n")
	b.WriteString("# owner, replicas for n = 3 (owner first), replicas for n = 5\n")
	for _, kk := range placementKeys() {
		p := Point(kk[0], kk[1])
		owner, _ := r.Owner(p)
		fmt.Fprintf(&b, "%q\t%q\t%d\t%s\t%s\t%s\n", kk[0], kk[1], p, owner,
			joinIDs(r.Replicas(p, 3)), joinIDs(r.Replicas(p, 5)))
	}
	return b.Bytes()
}

func joinIDs(ids []NodeID) string {
	s := make([]string, len(ids))
	for i, id := range ids {
		s[i] = id.String()
	}
	return strings.Join(s, ",")
}

func checkGolden(t *testing.T, name string, got []byte) {
	t.Helper()
	path := filepath.Join("testdata", name)
	if *update {
		if err := os.WriteFile(path, got, 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run go test -run Golden -update to create it)", err)
	}
	if !bytes.Equal(got, want) {
		gl, wl := strings.Split(string(got), "\n"), strings.Split(string(want), "\n")
		for i := range min(len(gl), len(wl)) {
			if gl[i] != wl[i] {
				t.Fatalf("%s differs at line %d:\n got: %s\nwant: %s", path, i+1, gl[i], wl[i])
			}
		}
		t.Fatalf("%s differs: got %d lines, want %d", path, len(gl), len(wl))
	}
}

func TestGoldenTokens(t *testing.T)    { checkGolden(t, "tokens.golden", goldenTokens(t)) }
func TestGoldenPlacement(t *testing.T) { checkGolden(t, "placement.golden", goldenPlacement(t)) }
