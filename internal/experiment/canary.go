package experiment

import (
	"runtime"
	"time"

	"golang.org/x/sys/unix"
)

// canaryCPUs bounds how many CPUs the canary times: on a large machine
// the first ones stand for the rest (about 8 ms each).
const canaryCPUs = 16

// canaryTries: each CPU's time is the fastest of this many loops, so that
// an interrupt or a preemption inside one loop does not count; what
// slows every loop (another guest on the host, a slower clock, a busy
// sibling hyperthread) does.
const canaryTries = 5

// canaryTable is the loop's working set: 32 KiB, an L1 data cache, so
// that the loop times the core and its nearest cache, not memory.
var canaryTable [4096]uint64

// canarySink keeps the loop's result alive, so the compiler cannot drop it.
var canarySink uint64

// canary times a fixed amount of CPU work on each CPU the process may run
// on (up to canaryCPUs) and returns the mean of the CPUs' fastest times,
// in milliseconds: the machine's own speed just before a run, which no
// workload setting can change. Two identical workloads that differ while
// this differs as much differ by the machine, not by themselves
// (compare's check on interleaved runs). 0 when it could not be timed.
func canary() float64 {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	var orig unix.CPUSet
	if err := unix.SchedGetaffinity(0, &orig); err != nil {
		return 0
	}
	defer unix.SchedSetaffinity(0, &orig)
	var sum float64
	n := 0
	for cpu := 0; cpu < 1024 && n < canaryCPUs; cpu++ {
		if !orig.IsSet(cpu) {
			continue
		}
		var one unix.CPUSet
		one.Set(cpu)
		if unix.SchedSetaffinity(0, &one) != nil {
			continue
		}
		best := time.Duration(-1)
		for range canaryTries {
			start := time.Now()
			canarySink += canaryLoop()
			if d := time.Since(start); best < 0 || d < best {
				best = d
			}
		}
		sum += best.Seconds() * 1e3
		n++
	}
	if n == 0 {
		return 0
	}
	return sum / float64(n)
}

// canaryLoop is the fixed work: a xorshift stream whose every step reads
// and writes the table at a place the last step chose, about 2 ms on a
// 2020s server core.
func canaryLoop() uint64 {
	x := uint64(88172645463325252)
	for range 1 << 18 {
		x ^= x << 13
		x ^= x >> 7
		x ^= x << 17
		i := x & (uint64(len(canaryTable)) - 1)
		canaryTable[i] += x
		x += canaryTable[(i*7)&(uint64(len(canaryTable))-1)]
	}
	return x
}
