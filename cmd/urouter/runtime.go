package main

import (
	"log"
	"math"
	"os"
	"runtime"
	"runtime/debug"
	"strconv"

	"github.com/KimMachineGun/automemlimit/memlimit"

	"urouter/fib6"
)

// memLimitRatio is the share of a container's memory limit (its cgroup's,
// v1 or v2) the Go runtime keeps its own memory under. The rest is what
// the limit counts and the runtime does not: the AF_PACKET and TUN
// sockets' queues (4 MiB of receive buffer a host link may fill), the
// state file's page cache, the threads' kernel stacks.
const memLimitRatio = 0.8

// tuneRuntime sets the collector's pace, its memory limit from the
// container's and Go's Ps, unless the environment does, and logs what it
// chose.
func tuneRuntime(nice int) {
	if os.Getenv("GOGC") == "" {
		debug.SetGCPercent(fib6.GCPercent)
	}
	// Go does not read a cgroup's memory limit: at GOGC=400 the garbage of
	// a flood refused grows the heap past a small container's limit.
	// automemlimit reads cgroup v1 and v2; GOMEMLIMIT (or AUTOMEMLIMIT=off)
	// given in the environment wins.
	limit, err := memlimit.Set(memlimit.WithRatio(memLimitRatio), memlimit.WithProvider(memlimit.FromCgroup))
	if err != nil {
		log.Printf("urouter daemon: no memory limit read from the cgroup: %v", err)
	}
	// Since Go 1.25 GOMAXPROCS is the CPU quota's (a container's --cpus),
	// rounded up, at least 2; setting it stops its updates, so it is
	// raised only when the control plane runs lowered and no quota holds
	// it below the machine's CPUs.
	if p := runtime.GOMAXPROCS(0); nice > 0 && os.Getenv("GOMAXPROCS") == "" && p >= runtime.NumCPU() {
		// A lowered writer's thread holds one of Go's Ps while the kernel
		// keeps it off the CPU: a spare P lets a worker whose read
		// returns run at once (bench/README.md, the route storm). Under a
		// quota that thread's time would be the workers'.
		runtime.GOMAXPROCS(p + 1)
	}
	mem := "none"
	if limit > 0 && limit < math.MaxInt64 {
		mem = strconv.FormatInt(limit>>20, 10) + " MiB"
	}
	gc := debug.SetGCPercent(-1) // read, and set back
	debug.SetGCPercent(gc)
	log.Printf("urouter daemon: GOMAXPROCS %d of %d CPUs, GOGC %d, memory limit %s",
		runtime.GOMAXPROCS(0), runtime.NumCPU(), gc, mem)
}
