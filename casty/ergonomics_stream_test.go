package casty_test

import (
	"context"
	"errors"
	"io"
	"iter"
	"slices"
	"strings"
	"testing"

	"github.com/casty-go/casty/casty"
)

// named and named2 are a caller's own sequence types: Upload and Duplex
// take them as they take the iter types they have the shape of.
type (
	named  func(yield func(string) bool)
	named2 func(yield func(string, error) bool)
)

// Upload and Duplex take a plain iter.Seq as well as an iter.Seq2 with
// errors, on one node and to another node's actor.
func TestStreamsTakePlainSequences(t *testing.T) {
	ctx := context.Background()
	local := newSys(t)
	nodes := startCluster(t, 2)
	remote := Logs.Ref(nodes[0], keyOn(t, nodes[1], nodes[0], Logs.Name()))
	for name, ref := range map[string]casty.Ref[Log]{"local": Logs.Ref(local, "plain"), "remote": remote} {
		t.Run(name, func(t *testing.T) {
			want := lines(40)
			if n, err := casty.Upload(ctx, ref, (*Log).Ingest, slices.Values(want)); err != nil || n != len(want) {
				t.Fatalf("upload of an iter.Seq: %d, %v", n, err)
			}
			var seq named = func(yield func(string) bool) {
				for _, l := range want {
					if !yield(l) {
						return
					}
				}
			}
			if n, err := casty.Upload(ctx, ref, (*Log).Ingest, seq); err != nil || n != len(want) {
				t.Fatalf("upload of a named sequence type: %d, %v", n, err)
			}
			var seq2 named2 = func(yield func(string, error) bool) {
				for l := range seq {
					if !yield(l, nil) {
						return
					}
				}
				yield("", errors.New("named2 broke"))
			}
			if _, err := casty.Upload(ctx, ref, (*Log).Ingest, seq2); err == nil || !strings.Contains(err.Error(), "named2 broke") {
				t.Fatalf("upload of a named iter.Seq2 type must carry its error: %v", err)
			}
			var got []int
			for n, err := range casty.Duplex(ctx, ref, (*Log).Lengths, slices.Values(want)) {
				if err != nil {
					t.Fatal(err)
				}
				got = append(got, n)
			}
			for i, l := range want {
				if i >= len(got) || got[i] != len(l) {
					t.Fatalf("duplex of an iter.Seq: got %v for %q", got, want)
				}
			}
			if n, err := casty.Upload(ctx, ref, (*Log).Ingest, iter.Seq[string](nil)); err != nil || n != 0 {
				t.Fatalf("upload of a nil sequence: %d, %v", n, err)
			}
		})
	}
}

// Lines feeds a reader's lines, and a read error ends the upload with it.
func TestLinesFeedsAReaderAndSurfacesItsError(t *testing.T) {
	ctx := context.Background()
	sys := newSys(t)
	ref := Logs.Ref(sys, "lines")
	n, err := casty.Upload(ctx, ref, (*Log).Ingest, casty.Lines(strings.NewReader("a\nbb\r\nccc")))
	if err != nil || n != 3 {
		t.Fatalf("upload of 3 lines: %d, %v", n, err)
	}
	var got []string
	for e, err := range casty.Stream(ctx, ref, (*Log).Tail, 0) {
		if err != nil {
			t.Fatal(err)
		}
		got = append(got, e)
	}
	if !slices.Equal(got, []string{"a", "bb", "ccc"}) {
		t.Fatalf("lines: %q", got)
	}

	boom := errors.New("disk gone")
	r := errReader{strings.NewReader("x\ny\n"), boom} // fails where EOF was
	_, err = casty.Upload(ctx, Logs.Ref(sys, "broken"), (*Log).Ingest, casty.Lines(r))
	if !errors.Is(err, boom) {
		t.Fatalf("a read error must end the upload with it, got %v", err)
	}
}

// errReader reads r until its first error, then returns err instead.
type errReader struct {
	r   io.Reader
	err error
}

func (e errReader) Read(p []byte) (int, error) {
	n, err := e.r.Read(p)
	if err != nil {
		err = e.err
	}
	return n, err
}

// What Upload's doc says of an upload that fails midway: the handler sees
// the error in-band, and what it appended before stays (the default
// supervisor keeps a failed activation's state), on one node and across.
func TestFailedUploadKeepsWhatTheHandlerDidUnderKeep(t *testing.T) {
	ctx := context.Background()
	local := newSys(t)
	nodes := startCluster(t, 2)
	remote := Logs.Ref(nodes[0], keyOn(t, nodes[1], nodes[0], Logs.Name()))
	boom := errors.New("source broke")
	for name, ref := range map[string]casty.Ref[Log]{"local": Logs.Ref(local, "partial"), "remote": remote} {
		t.Run(name, func(t *testing.T) {
			broken := func(yield func(string, error) bool) {
				for _, l := range []string{"a", "b", "c"} {
					if !yield(l, nil) {
						return
					}
				}
				yield("", boom)
			}
			if _, err := casty.Upload(ctx, ref, (*Log).Ingest, broken); err == nil || !strings.Contains(err.Error(), boom.Error()) {
				t.Fatalf("upload that failed midway: %v", err)
			}
			if n, err := casty.Call0(ctx, ref, (*Log).Len); err != nil || n != 3 {
				t.Fatalf("after the failed upload the log holds %d entries (%v), want the 3 appended before the error", n, err)
			}
		})
	}
}
