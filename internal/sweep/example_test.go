package sweep_test

import (
	"fmt"
	"sync"
	"time"

	"github.com/casty-go/casty/internal/sweep"
)

// An owner keeps its deadlines where its waiters are, and a sweep function
// that fails those past due.
func Example() {
	var (
		s        sweep.Sweeper
		mu       sync.Mutex
		waiting  = map[string]time.Time{}
		timedOut = make(chan string, 1)
	)
	expire := func() (watched int) {
		mu.Lock()
		defer mu.Unlock()
		for name, at := range waiting {
			if !time.Now().Before(at) {
				delete(waiting, name)
				timedOut <- name
			}
		}
		return len(waiting)
	}

	mu.Lock()
	waiting["call 1"] = time.Now() // already due: the first sweep fails it
	mu.Unlock()
	if s.Start() {
		go s.Run(expire, nil)
	}
	fmt.Println(<-timedOut, "timed out")
	// Output: call 1 timed out
}
