package feed

import (
	"testing"
	"urouter/internal/realtable"

	"golang.org/x/sys/unix"
)

// fullTableStream is the real table as zebra sends it with nexthop
// groups: a nexthop, then one RTM_NEWROUTE per prefix through it, one
// message per frame.
func fullTableStream(tb testing.TB) []byte {
	ps := realtable.MustLoad(tb)
	out := frame(nhObj{id: 10, gw: gw1, oif: kidx}.encode(unix.RTM_NEWNEXTHOP))
	for _, p := range ps {
		r := newRoute(p.String())
		r.nhid = 10
		out = append(out, frame(r.encode(unix.RTM_NEWROUTE, unix.NLM_F_CREATE|unix.NLM_F_REPLACE))...)
	}
	return out
}

// BenchmarkFPMApply decodes and applies the real table's 160,147 IPv6
// prefixes sent as FPM frames, in chunks of the session's read buffer, to
// a new router each time: the load when zebra connects.
func BenchmarkFPMApply(b *testing.B) { benchLoad(b, false) }

// BenchmarkFPMApplySweep is BenchmarkFPMApply with the session's sweep
// after the load, as a reconnect settles: the whole of what a session's
// bookkeeping costs (one entry per route while it loads, none built at
// the sweep).
func BenchmarkFPMApplySweep(b *testing.B) { benchLoad(b, true) }

func benchLoad(b *testing.B, sweep bool) {
	stream := fullTableStream(b)
	const chunk = 1 << 20
	var msgs []Msg
	b.SetBytes(int64(len(stream)))
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		b.StopTimer()
		r, ap := testRouter(b)
		s := ap.Begin()
		b.StartTimer()
		for off := 0; off < len(stream); {
			var used int
			var err error
			msgs, used, _, err = DecodeFrames(stream[off:min(off+chunk, len(stream))], msgs[:0])
			if err != nil {
				b.Fatal(err)
			}
			ap.ApplyIn(s, msgs)
			off += used
		}
		if sweep && ap.SweepIn(s) != 0 {
			b.Fatal("the sweep of a first load removed routes")
		}
		b.StopTimer()
		if n := r.Tables.Main().Len(); n < 160147 {
			b.Fatalf("%d routes in main", n)
		}
		b.StartTimer()
	}
	b.ReportMetric(float64(160147*b.N)/b.Elapsed().Seconds(), "routes/s")
}
