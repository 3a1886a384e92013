package sweep_test

import (
	"fmt"
	"sync"
	"time"

	"github.com/casty-go/casty/internal/sweep"
)

// An owner keeps its deadlines where its waiters are, and a sweep function
// that fails those past due and says when the next one is.
func Example() {
	var (
		s        sweep.Sweeper
		mu       sync.Mutex
		waiting  = map[string]time.Time{}
		timedOut = make(chan string, 1)
	)
	expire := func() (watched int, next time.Duration) {
		mu.Lock()
		defer mu.Unlock()
		next = sweep.Threshold
		for name, at := range waiting {
			if left := time.Until(at); left > 0 {
				next = min(next, left)
				continue
			}
			delete(waiting, name)
			timedOut <- name
		}
		return len(waiting), next
	}

	mu.Lock()
	waiting["call 1"] = time.Now() // already due: the first sweep fails it
	mu.Unlock()
	if s.Start() {
		go s.Run(sweep.Every, expire, nil)
	}
	fmt.Println(<-timedOut, "timed out")
	// Output: call 1 timed out
}
