package simq

import "testing"

func TestEventsComeOutByTimeThenPushOrder(t *testing.T) {
	var q Queue[int64, string]
	q.Push(5, "c")
	q.Push(1, "a")
	q.Push(5, "d")
	q.Push(3, "b")
	if at, ok := q.Next(); !ok || at != 1 {
		t.Fatalf("next at %d, %v", at, ok)
	}
	var got string
	for q.Len() > 0 {
		_, e, _ := q.Pop()
		got += e
	}
	if got != "abcd" {
		t.Fatalf("popped %q, want abcd", got)
	}
	if _, _, ok := q.Pop(); ok {
		t.Fatal("pop of an empty queue")
	}
}
