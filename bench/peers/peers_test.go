package main

import (
	"bytes"
	"fmt"
	"os"
	"strings"
	"testing"
	"time"
)

// TestMain makes the test binary the server process when re-executed
// as one (startServer runs os.Executable).
func TestMain(m *testing.M) {
	if os.Getenv(serveEnv) != "" {
		if err := serve(os.Stdin, os.Stdout); err != nil {
			fmt.Fprintln(os.Stderr, "peers server:", err)
			os.Exit(1)
		}
		os.Exit(0)
	}
	os.Exit(m.Run())
}

// TestEveryShapeRunsOnBothSides runs every shape briefly and checks that
// Casty and Proto.Actor each completed calls in it, that the remote shapes
// measured their floor, and that the table has a row for each.
func TestEveryShapeRunsOnBothSides(t *testing.T) {
	if raceDetector {
		// Proto.Actor races with itself: remote.Start sets gRPC's global
		// logger while another member's gRPC goroutines log, and its
		// cluster gossip shares a math/rand source between goroutines.
		t.Skip("Proto.Actor's remote and cluster packages race under -race; run without it")
	}
	rs, err := bench(options{duration: 200 * time.Millisecond, runs: 1})
	if err != nil {
		t.Fatal(err)
	}
	byName := map[string]result{}
	for _, r := range rs {
		byName[r.name] = r
	}
	for _, s := range shapes {
		r, ok := byName[s.name]
		if !ok {
			t.Errorf("shape %s was not measured", s.name)
			continue
		}
		if r.casty.ops == 0 || r.proto.ops == 0 {
			t.Errorf("shape %s: Casty made %d calls, Proto.Actor %d; want both > 0", s.name, r.casty.ops, r.proto.ops)
		}
		if _, remote := floorTitles[s.name]; remote && (r.floor == nil || r.floor.ops == 0) {
			t.Errorf("shape %s: no floor measured", s.name)
		}
	}
	var out bytes.Buffer
	printTable(&out, rs)
	table := out.String()
	var titles []string
	for _, s := range shapes {
		titles = append(titles, s.title)
	}
	for _, name := range []string{"remote", "remote-64"} {
		titles = append(titles, floorTitles[name])
	}
	for _, title := range titles {
		if !strings.Contains(table, "| "+title+" | ") {
			t.Errorf("no row %q in the table:\n%s", title, table)
		}
	}
	if strings.Contains(table, "NaN") || strings.Contains(table, "Inf") {
		t.Errorf("the table holds a figure that is not a number:\n%s", table)
	}
	t.Logf("\n%s", table)
}

// TestOnlyPicksShapes checks -only runs the shapes whose name contains it,
// and refuses a name no shape has.
func TestOnlyPicksShapes(t *testing.T) {
	rs, err := bench(options{only: "local-64", duration: 50 * time.Millisecond, runs: 1})
	if err != nil {
		t.Fatal(err)
	}
	if len(rs) != 1 || rs[0].name != "local-64" {
		t.Errorf("-only local-64 ran %d shapes (%v); want local-64 alone", len(rs), rs)
	}
	if _, err := bench(options{only: "nothing"}); err == nil {
		t.Error("-only nothing: no error; want one naming the missing shape")
	}
}
