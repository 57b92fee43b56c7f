package client

import (
	"bufio"
	"encoding/binary"
	"fmt"
	"io"
	"net"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"urouter/control/wire"

	"github.com/gopacket/gopacket"
	"github.com/gopacket/gopacket/layers"
	"github.com/gopacket/gopacket/pcapgo"
)

// The capture client: the daemon streams pcapng in its 'o' frames, which
// go as they come to the file or stdout of -w, or are read back and
// printed a line per packet. Ctrl-C closes the client's side, and the
// daemon ends the stream whole (with its statistics block); a reader that
// goes away (the pipe into tcpdump closes) ends the client, and with it
// the capture.

// captureMain runs `capture ARGS...` (args[0] is the object's word).
func captureMain(o wire.Options, socket string, args []string) int {
	var rest []string
	file := ""
	// -w is the client's, before the filter (whose words are the
	// filter's, a "-w" among them too)
	for i := 1; i < len(args); i++ {
		switch args[i] {
		case "-w":
			if i+1 == len(args) {
				fmt.Fprintln(os.Stderr, "Error: argument \"-w\" is required: a file, or - for stdout")
				return 255
			}
			file = args[i+1]
			i++
			continue
		case "dev", "count", "snaplen":
			if i+1 < len(args) {
				rest = append(rest, args[i])
				i++
			}
		case "drops", "in", "out", "help":
		default:
			rest = append(rest, args[i:]...)
			i = len(args)
			continue
		}
		rest = append(rest, args[i])
	}
	var sink io.Writer
	var printed chan struct{}
	switch file {
	case "":
		pr, pw := io.Pipe()
		defer func() { _ = pw.Close() }() // the printer's end of input
		printed = make(chan struct{})
		go func() {
			defer close(printed)
			printPackets(pr, os.Stdout)
		}()
		sink = pw
	case "-":
		sink = os.Stdout
	default:
		lf := &lazyFile{name: file}
		defer lf.close()
		sink = lf
	}
	c, err := net.Dial("unix", wire.SocketPath(socket))
	if err != nil {
		say(os.Stderr, "urouter: cannot reach the daemon at %s: %v\n", wire.SocketPath(socket), err)
		return 1
	}
	defer func() { _ = c.Close() }() // read to its end
	uc := c.(*net.UnixConn)
	line := string(wire.QuoteArgs(append([]string{"capture"}, rest...)))
	if _, err := uc.Write([]byte(o.Header() + line + "\n")); err != nil {
		say(os.Stderr, "urouter: the daemon closed the connection\n")
		return 1
	}
	sigs := make(chan os.Signal, 2)
	signal.Notify(sigs, os.Interrupt, syscall.SIGTERM)
	go func() {
		<-sigs
		_ = uc.CloseWrite() // the daemon ends the stream
		<-sigs
		os.Exit(130) // a second Ctrl-C: now
	}()
	st := captureFrames(uc, sink)
	if pw, ok := sink.(*io.PipeWriter); ok {
		_ = pw.Close()
		<-printed
	}
	return st
}

// lazyFile is -w FILE, made with the stream's first bytes: a capture the
// daemon refuses (a bad filter) leaves no empty file behind.
type lazyFile struct {
	name string
	f    *os.File
}

func (l *lazyFile) Write(b []byte) (int, error) {
	if l.f == nil {
		f, err := os.Create(l.name)
		if err != nil {
			say(os.Stderr, "Error: cannot write \"%s\": %s\n", l.name, strerrorOf(err))
			return 0, err
		}
		l.f = f
	}
	return l.f.Write(b)
}

func (l *lazyFile) close() {
	if l.f != nil {
		_ = l.f.Close() // written with each frame: a close error loses nothing more
	}
}

// captureFrames copies the daemon's stream to sink, each frame as it
// comes, and returns the exit status.
func captureFrames(uc *net.UnixConn, sink io.Writer) int {
	r := bufio.NewReaderSize(uc, 64<<10)
	var hdr [5]byte
	for {
		if _, err := io.ReadFull(r, hdr[:]); err != nil {
			say(os.Stderr, "urouter: the daemon closed the connection\n")
			return 1
		}
		n := int64(binary.BigEndian.Uint32(hdr[1:]))
		switch hdr[0] {
		case 'o':
			if _, err := io.CopyN(sink, r, n); err != nil {
				return 1 // the reader went away: so does the capture
			}
		case 'e':
			if _, err := io.CopyN(os.Stderr, r, n); err != nil {
				return 1
			}
		case 'x':
			var b [1]byte
			if _, err := io.ReadFull(r, b[:]); err != nil {
				return 1
			}
			return int(b[0])
		default:
			say(os.Stderr, "urouter: garbled answer from the daemon\n")
			return 1
		}
	}
}

// printPackets prints a line per packet of a pcapng stream, as tcpdump's
// first line of one: time, link, direction, addresses, what it carries.
func printPackets(r io.Reader, out io.Writer) {
	ng, err := pcapgo.NewNgReader(r, pcapgo.NgReaderOptions{WantMixedLinkType: true})
	if err != nil {
		_, _ = io.Copy(io.Discard, r) // nothing to print; let the stream end
		return
	}
	w := bufio.NewWriter(out)
	for {
		data, ci, opts, err := ng.ReadPacketDataWithOptions()
		if err != nil {
			_ = w.Flush() // stdout gone: nobody to tell
			_, _ = io.Copy(io.Discard, r)
			return
		}
		name := ""
		if intf, err := ng.Interface(ci.InterfaceIndex); err == nil {
			name = intf.Name
		}
		dir := "   "
		if opts.Flags != nil {
			switch opts.Flags.Direction {
			case pcapgo.NgEpbFlagDirectionInbound:
				dir = "In "
			case pcapgo.NgEpbFlagDirectionOutbound:
				dir = "Out"
			}
		}
		fmt.Fprintf(w, "%s %s %s %s", ci.Timestamp.Format("15:04:05.000000000"), name, dir, summary(data, ci.Length))
		for _, c := range opts.Comments {
			fmt.Fprintf(w, " [%s]", c)
		}
		w.WriteString("\n")
		if err := w.Flush(); err != nil {
			_, _ = io.Copy(io.Discard, r)
			return
		}
	}
}

// summary is what a raw IPv6 packet is, in a few of tcpdump's words.
func summary(data []byte, length int) string {
	p := gopacket.NewPacket(data, layers.LayerTypeIPv6, gopacket.DecodeOptions{Lazy: true, NoCopy: true})
	ip, _ := p.Layer(layers.LayerTypeIPv6).(*layers.IPv6)
	if ip == nil {
		return fmt.Sprintf("not IPv6, length %d", length)
	}
	var b strings.Builder
	fmt.Fprintf(&b, "IP6 %s > %s: ", ip.SrcIP, ip.DstIP)
	switch l := p.TransportLayer().(type) {
	case *layers.TCP:
		fmt.Fprintf(&b, "TCP %d > %d", l.SrcPort, l.DstPort)
	case *layers.UDP:
		fmt.Fprintf(&b, "UDP %d > %d", l.SrcPort, l.DstPort)
	default:
		if ic, ok := p.Layer(layers.LayerTypeICMPv6).(*layers.ICMPv6); ok {
			fmt.Fprintf(&b, "ICMP6, %s", ic.TypeCode)
		} else {
			fmt.Fprintf(&b, "next header %d", ip.NextHeader)
		}
	}
	fmt.Fprintf(&b, ", length %d", length)
	return b.String()
}
