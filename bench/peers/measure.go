package main

import (
	"fmt"
	"os"
	"slices"
	"strings"
	"sync"
	"time"
)

// sample is one timed run of one contestant in one shape.
type sample struct {
	ops     int           // calls completed
	elapsed time.Duration // wall time of the run
	p50     time.Duration // median call latency
	cpus    float64       // CPU (user + system) of this process and the server's, over wall time
}

func (s sample) rate() float64 {
	if s.elapsed <= 0 {
		return 0
	}
	return float64(s.ops) / s.elapsed.Seconds()
}

// contestant is one side of a shape: call(w, i) makes one call for caller
// w on key i (the contestant maps i onto its own keys).
type contestant struct {
	name string
	call func(w, i int) error
}

// run times callers goroutines calling for d: caller w walks the keys
// 0..keys-1 from w*stride on, one call per step, timing each call. CPU
// is this process's and that of the processes in pids.
func run(d time.Duration, callers, keys int, pids []int, call func(w, i int) error) (sample, error) {
	lats := make([][]time.Duration, callers)
	counts := make([]int, callers)
	errs := make([]error, callers)
	cpu0 := totalCPU(pids)
	start := time.Now()
	deadline := start.Add(d)
	var wg sync.WaitGroup
	for w := range callers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			l := make([]time.Duration, 0, 1<<14)
			i := w * 31
			for t0 := time.Now(); t0.Before(deadline); {
				i = (i + 1) % keys
				if err := call(w, i); err != nil {
					errs[w] = err
					break
				}
				t1 := time.Now()
				l = append(l, t1.Sub(t0))
				t0 = t1
			}
			lats[w], counts[w] = l, len(l)
		}()
	}
	wg.Wait()
	elapsed := time.Since(start)
	cpu := totalCPU(pids) - cpu0
	all := slices.Concat(lats...)
	s := sample{elapsed: elapsed, cpus: float64(cpu) / float64(elapsed)}
	for _, c := range counts {
		s.ops += c
	}
	if len(all) > 0 {
		slices.Sort(all)
		s.p50 = all[len(all)/2]
	}
	for _, err := range errs {
		if err != nil {
			return s, err
		}
	}
	if s.ops == 0 {
		return s, fmt.Errorf("no call completed in %v", d)
	}
	return s, nil
}

// rounds runs the contestants of one shape in turn, runs times (the first
// of each round rotating), after a warm-up of each, and returns each
// contestant's fastest run, so that a shared machine's load hits them
// alike.
func rounds(runs int, d time.Duration, callers, keys int, pids []int, cs ...contestant) ([]sample, error) {
	best := make([]sample, len(cs))
	for _, c := range cs {
		if _, err := run(d/4, callers, keys, pids, c.call); err != nil {
			return nil, fmt.Errorf("%s warm-up: %w", c.name, err)
		}
	}
	for r := range runs {
		for k := range cs {
			j := (r + k) % len(cs)
			s, err := run(d, callers, keys, pids, cs[j].call)
			if err != nil {
				return nil, fmt.Errorf("%s: %w", cs[j].name, err)
			}
			fmt.Fprintf(os.Stderr, "    %s: %s\n", cs[j].name, cell(s))
			if s.rate() > best[j].rate() {
				best[j] = s
			}
		}
	}
	return best, nil
}

// totalCPU is the CPU time this process and the processes in pids have
// used so far.
func totalCPU(pids []int) time.Duration {
	t := processCPU()
	for _, p := range pids {
		t += pidCPU(p)
	}
	return t
}

// pidCPU is the user and system time process pid has used so far (Linux;
// 0 elsewhere).
func pidCPU(pid int) time.Duration {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0
	}
	s := string(b)
	f := strings.Fields(s[strings.LastIndexByte(s, ')')+2:])
	var ut, st int64
	fmt.Sscan(f[11], &ut)
	fmt.Sscan(f[12], &st)
	return time.Duration(ut+st) * 10 * time.Millisecond
}

// rateString prints calls per second with a unit.
func rateString(r float64) string {
	switch {
	case r >= 1e6:
		return fmt.Sprintf("%.2f M/s", r/1e6)
	case r >= 1e3:
		return fmt.Sprintf("%.1f k/s", r/1e3)
	}
	return fmt.Sprintf("%.0f /s", r)
}

// latString prints a latency in µs.
func latString(d time.Duration) string {
	us := float64(d.Nanoseconds()) / 1e3
	if us < 10 {
		return fmt.Sprintf("%.1f µs", us)
	}
	return fmt.Sprintf("%.0f µs", us)
}

// cell formats a sample for the table.
func cell(s sample) string {
	return fmt.Sprintf("%s, p50 %s, %.2f CPUs", rateString(s.rate()), latString(s.p50), s.cpus)
}
