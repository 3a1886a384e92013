package hlc_test

import (
	"fmt"

	"github.com/casty-go/casty/hlc"
)

// Two nodes exchange a message; the physical clock of b runs behind a's and
// then jumps back, yet b's stamps still order after everything it has seen.
func Example() {
	physA, physB := int64(10_000), int64(9_000) // milliseconds
	a, _ := hlc.New(hlc.Config{Node: [16]byte{15: 0xa}, Physical: func() int64 { return physA }})
	b, _ := hlc.New(hlc.Config{Node: [16]byte{15: 0xb}, Physical: func() int64 { return physB }})

	sent := a.Now()                // a stamps a message
	received, _ := b.Observe(sent) // b receives it: after the send
	physB -= 5_000                 // b's clock steps back 5 s
	next := b.Now()                // still after everything b has seen
	fmt.Println(sent.Wall, sent.Counter)
	fmt.Println(received.Wall, received.Counter, sent.Less(received))
	fmt.Println(next.Wall, next.Counter, received.Less(next))
	// Output:
	// 10000 0
	// 10000 1 true
	// 10000 2 true
}

// The zero Timestamp is "no version" and encodes as a single msgpack nil.
func ExampleTimestamp_AppendMsgpack() {
	var none hlc.Timestamp
	fmt.Printf("%x\n", none.AppendMsgpack(nil))
	ts := hlc.Timestamp{Wall: 1_764_000_000_000, Counter: 3, Node: [16]byte{15: 1}}
	b := ts.AppendMsgpack(nil)
	back, n, err := hlc.DecodeMsgpack(b)
	fmt.Println(len(b), n, back == ts, err)
	// Output:
	// c0
	// 29 29 true <nil>
}

// A counter at its limit moves the wall forward by one millisecond instead of
// wrapping.
func ExampleClock_Observe() {
	c, _ := hlc.New(hlc.Config{Physical: func() int64 { return 500 }})
	ts, err := c.Observe(hlc.Timestamp{Wall: 500, Counter: 1<<32 - 1})
	fmt.Println(ts.Wall, ts.Counter, err)
	// Output: 501 0 <nil>
}
