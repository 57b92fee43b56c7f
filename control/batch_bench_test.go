package control

import (
	"bufio"
	"bytes"
	"io"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"urouter/control/statefile"
	"urouter/control/wire"
	"urouter/router"
)

// BenchmarkBatchApply runs a batch file through a session in process (no
// socket, no client): the daemon's share of a `-batch` load. The file is
// $UROUTER_BATCH, with the config $UROUTER_CONF applied first. Several
// files, comma-separated, run as parallel sessions (as parallel clients).
// With UROUTER_STATE=1, the router has a state file (in a temp dir) and
// each session's changes are sealed in it, as with --state.
func BenchmarkBatchApply(b *testing.B) {
	files, conf := os.Getenv("UROUTER_BATCH"), os.Getenv("UROUTER_CONF")
	if files == "" {
		b.Skip("UROUTER_BATCH not set")
	}
	var data [][]byte
	for _, f := range strings.Split(files, ",") {
		d, err := os.ReadFile(f)
		if err != nil {
			b.Fatal(err)
		}
		data = append(data, d)
	}
	for i := 0; i < b.N; i++ {
		b.StopTimer()
		r := router.New()
		if conf != "" {
			if _, err := applyConfig(r, conf); err != nil {
				b.Fatal(err)
			}
		}
		var state *statefile.State
		if os.Getenv("UROUTER_STATE") == "1" {
			st, ld, err := statefile.Read(filepath.Join(b.TempDir(), "urouter.state"), NewStateLanguage(r))
			if err == nil {
				err = st.Apply(ld, nil)
			}
			if err != nil {
				b.Fatal(err)
			}
			st.Run()
			state = st
		}
		b.StartTimer()
		var wg sync.WaitGroup
		for _, d := range data {
			wg.Add(1)
			go func() {
				defer wg.Done()
				s := &Session{r: r, opt: wire.Options{Batch: true, BatchName: "bench", Size: int64(len(d))}, out: bufio.NewWriter(io.Discard), errOut: func(m string) { b.Error(m) }}
				if state != nil {
					s.rec = state.Recorder()
				}
				if st := s.Run(bufio.NewReaderSize(bytes.NewReader(d), 1<<18)); st != 0 {
					b.Error("exit status", st)
				}
				if s.rec != nil {
					if err := s.rec.Seal(); err != nil {
						b.Error(err)
					}
				}
			}()
		}
		wg.Wait()
		if state != nil {
			b.StopTimer()
			_ = state.Close() // a temp file
			b.StartTimer()
		}
	}
}

// BenchmarkBatchParse is the part of BenchmarkBatchApply that needs no
// router: each line of $UROUTER_BATCH split into words and, for a route
// command, its arguments parsed.
func BenchmarkBatchParse(b *testing.B) {
	file := os.Getenv("UROUTER_BATCH")
	if file == "" {
		b.Skip("UROUTER_BATCH not set")
	}
	d, err := os.ReadFile(file)
	if err != nil {
		b.Fatal(err)
	}
	b.SetBytes(int64(len(d)))
	var args [][]byte
	var pm parseMemo
	var q routeReq
	for i := 0; i < b.N; i++ {
		for rest := d; len(rest) > 0; {
			line := rest
			if j := bytes.IndexByte(rest, '\n'); j >= 0 {
				line, rest = rest[:j+1], rest[j+1:]
			} else {
				rest = nil
			}
			args, _ = splitLine(line, args)
			if len(args) > 2 && is(args[0], "route") {
				if err := parseRouteModify(&q, args[2:], &pm); err != nil {
					b.Fatal(err.msg)
				}
			}
		}
	}
}
