package control

import (
	"bufio"
	"bytes"
	"io"
	"os"
	"testing"
)

// BenchmarkBatchApply runs a batch file through a session in process (no
// socket, no client): the daemon's share of a `-batch` load. The file is
// $UROUTER_BATCH, with the config $UROUTER_CONF applied first.
func BenchmarkBatchApply(b *testing.B) {
	file, conf := os.Getenv("UROUTER_BATCH"), os.Getenv("UROUTER_CONF")
	if file == "" {
		b.Skip("UROUTER_BATCH not set")
	}
	data, err := os.ReadFile(file)
	if err != nil {
		b.Fatal(err)
	}
	for i := 0; i < b.N; i++ {
		b.StopTimer()
		r := NewRouter()
		if conf != "" {
			if err := r.ApplyConfig(conf); err != nil {
				b.Fatal(err)
			}
		}
		s := &session{r: r, opt: options{batch: true, batchName: file}, out: bufio.NewWriter(io.Discard), errOut: func(m string) { b.Fatal(m) }}
		b.StartTimer()
		if st := s.run(bufio.NewReaderSize(bytes.NewReader(data), 1<<18)); st != 0 {
			b.Fatal(st)
		}
	}
}
