package control

import (
	"bufio"
	"bytes"
	"io"
	"os"
	"strings"
	"testing"

	"urouter/control/wire"
	"urouter/router"
)

// loadBench is a router loaded as BenchmarkBatchApply loads it: the
// config $UROUTER_CONF, then the batch $UROUTER_BATCH.
func loadBench(b *testing.B) *router.Router {
	file, conf := os.Getenv("UROUTER_BATCH"), os.Getenv("UROUTER_CONF")
	if file == "" {
		b.Skip("UROUTER_BATCH not set")
	}
	d, err := os.ReadFile(file)
	if err != nil {
		b.Fatal(err)
	}
	r := router.New()
	if conf != "" {
		if _, err := applyConfig(r, conf); err != nil {
			b.Fatal(err)
		}
	}
	s := &Session{r: r, opt: wire.Options{Batch: true, BatchName: "bench"}, out: bufio.NewWriter(io.Discard), errOut: func(m string) { b.Fatal(m) }}
	if st := s.Run(bufio.NewReaderSize(bytes.NewReader(d), 1<<18)); st != 0 {
		b.Fatal("exit status", st)
	}
	return r
}

// BenchmarkRouteShow is the daemon's share of `-6 route show table all`
// of the loaded table (see loadBench), printed into a discarding frame
// writer: the printer, the walk and the frames, without the socket.
func BenchmarkRouteShow(b *testing.B) {
	r := loadBench(b)
	var n countingWriter
	for i := 0; i < b.N; i++ {
		s := &Session{r: r, opt: wire.Options{Inet6: true}, out: bufio.NewWriterSize(&wire.FrameWriter{W: &n, Kind: 'o'}, WriteBuf), errOut: func(m string) { b.Fatal(m) }}
		if st := s.Run(bufio.NewReader(strings.NewReader("route show table all\n"))); st != 0 {
			b.Fatal("exit status", st)
		}
		s.flush()
	}
	b.SetBytes(n.n / int64(b.N))
}

type countingWriter struct{ n int64 }

func (c *countingWriter) Write(p []byte) (int, error) { c.n += int64(len(p)); return len(p), nil }
