// Command tagswitch makes the netns it runs in an 802.1Q/802.1ad access
// switch out of tc BPF programs, for kernels without the 8021q driver or
// bridge VLAN filtering (these machines): the tests and labs tag their
// hosts' frames with it. One interface is the trunk; each access port
// pushes its tags onto what its host sends and redirects it out of the
// trunk, and the trunk's program pops the tags of what comes in and
// redirects it to the port they name (an untagged frame to the untagged
// port, if any); a frame no port claims is dropped.
//
//	tagswitch TRUNK PORT=TAGS...
//
// TAGS is "untagged", or tags outer first, comma-separated: q100 (802.1Q
// VID 100), ad300,q10 (802.1ad 300 around 802.1Q 10); q0 is a priority
// tag: its port sends with one, and takes the untagged frames. The programs are
// cls_bpf direct-action filters on clsact qdiscs, held by the kernel
// after tagswitch exits; deleting the interfaces (or the netns) removes
// them. Run it as root in the switch's netns (ip netns exec NS
// tagswitch ...).
package main

import (
	"fmt"
	"net"
	"os"
	"strconv"
	"strings"

	"github.com/cilium/ebpf"
	"github.com/cilium/ebpf/asm"
	"github.com/vishvananda/netlink"
	"golang.org/x/sys/unix"
)

// tag is one VLAN tag of a port's.
type tag struct {
	tpid uint16
	vid  uint16
}

type accessPort struct {
	name  string
	index int
	tags  []tag // outer first; none: the untagged port
}

// __sk_buff's fields the programs read.
const (
	skbVLANTCI   = 24
	skbVLANProto = 28
)

func main() {
	if len(os.Args) < 3 {
		fmt.Fprintln(os.Stderr, "usage: tagswitch TRUNK PORT=TAGS...")
		os.Exit(2)
	}
	if err := run(os.Args[1], os.Args[2:]); err != nil {
		fmt.Fprintln(os.Stderr, "tagswitch:", err)
		os.Exit(1)
	}
}

func run(trunkName string, specs []string) error {
	trunk, err := net.InterfaceByName(trunkName)
	if err != nil {
		return err
	}
	var ports []accessPort
	for _, s := range specs {
		p, err := parsePort(s)
		if err != nil {
			return err
		}
		ports = append(ports, p)
	}
	for _, p := range ports {
		if err := attach(p.index, p.name, accessProgram(p.tags, trunk.Index)); err != nil {
			return err
		}
	}
	return attach(trunk.Index, trunk.Name, trunkProgram(ports))
}

func parsePort(s string) (accessPort, error) {
	name, spec, ok := strings.Cut(s, "=")
	if !ok {
		return accessPort{}, fmt.Errorf("%q: not PORT=TAGS", s)
	}
	ifi, err := net.InterfaceByName(name)
	if err != nil {
		return accessPort{}, err
	}
	p := accessPort{name: name, index: ifi.Index}
	if spec == "untagged" {
		return p, nil
	}
	for _, t := range strings.Split(spec, ",") {
		tpid := uint16(unix.ETH_P_8021Q)
		num, ok := strings.CutPrefix(t, "q")
		if !ok {
			if num, ok = strings.CutPrefix(t, "ad"); !ok {
				return accessPort{}, fmt.Errorf("%q: a tag is qVID or adVID", t)
			}
			tpid = unix.ETH_P_8021AD
		}
		vid, err := strconv.ParseUint(num, 10, 12)
		if err != nil {
			return accessPort{}, fmt.Errorf("%q: %w", t, err)
		}
		p.tags = append(p.tags, tag{tpid, uint16(vid)})
	}
	return p, nil
}

func htons(v uint16) int32 { return int32(v>>8 | v<<8&0xff00) }

// accessProgram pushes tags (innermost first: a push moves the tag
// already held into the frame) and redirects to the trunk's egress.
func accessProgram(tags []tag, trunk int) asm.Instructions {
	insns := asm.Instructions{asm.Mov.Reg(asm.R6, asm.R1)}
	for i := len(tags) - 1; i >= 0; i-- {
		insns = append(insns,
			asm.Mov.Reg(asm.R1, asm.R6),
			asm.Mov.Imm(asm.R2, htons(tags[i].tpid)),
			asm.Mov.Imm(asm.R3, int32(tags[i].vid)),
			asm.FnSkbVlanPush.Call(),
			asm.JNE.Imm(asm.R0, 0, "drop"),
		)
	}
	if len(tags) == 0 {
		return append(insns, redirect(trunk, "")...) // nothing jumps to a drop
	}
	return append(insns, redirect(trunk, "drop")...)
}

// trunkProgram pops the tags of a frame from the trunk and redirects it
// to the port they name; the rest is dropped. (A frame whose outer tag
// one port's matches, and not its inner one, is dropped: no two ports
// share an outer tag here.)
func trunkProgram(ports []accessPort) asm.Instructions {
	insns := asm.Instructions{asm.Mov.Reg(asm.R6, asm.R1)}
	for i, p := range ports {
		next := labelAfter(i, len(ports))
		var block asm.Instructions
		if p.untagged() {
			block = append(block,
				asm.LoadMem(asm.R2, asm.R6, skbVLANProto, asm.Word),
				asm.JNE.Imm(asm.R2, 0, next),
			)
		}
		for j, t := range p.popped() {
			miss := next
			if j > 0 {
				miss = "drop" // its outer tag is popped
			}
			block = append(block,
				asm.LoadMem(asm.R2, asm.R6, skbVLANProto, asm.Word),
				asm.JNE.Imm(asm.R2, htons(t.tpid), miss),
				asm.LoadMem(asm.R2, asm.R6, skbVLANTCI, asm.Word),
				asm.And.Imm(asm.R2, 0xfff),
				asm.JNE.Imm(asm.R2, int32(t.vid), miss),
				asm.Mov.Reg(asm.R1, asm.R6),
				asm.FnSkbVlanPop.Call(), // the next tag, if any, takes its place
				asm.JNE.Imm(asm.R0, 0, "drop"),
			)
		}
		block = append(block, redirect(p.index, "")...)
		block[0] = block[0].WithSymbol(fmt.Sprintf("test%d", i))
		insns = append(insns, block...)
	}
	return append(insns, asm.Mov.Imm(asm.R0, 2).WithSymbol("drop"), asm.Return())
}

// untagged reports whether the port takes the trunk's untagged frames:
// it has no tag, or a priority tag (VID 0) alone, which a host sends and
// a router does not answer with.
func (p accessPort) untagged() bool {
	return len(p.tags) == 0 || len(p.tags) == 1 && p.tags[0].vid == 0
}

// popped are the tags the trunk pops to find the port: none for an
// untagged one (a priority tag is tested as no tag).
func (p accessPort) popped() []tag {
	if p.untagged() {
		return nil
	}
	return p.tags
}

// labelAfter is the label of port i+1's test, or the drop after the last.
func labelAfter(i, n int) string {
	if i+1 == n {
		return "drop"
	}
	return fmt.Sprintf("test%d", i+1)
}

// redirect ends a program: out of interface index (TC_ACT_REDIRECT), and
// a drop (TC_ACT_SHOT) labelled drop if it is given.
func redirect(index int, drop string) asm.Instructions {
	insns := asm.Instructions{
		asm.Mov.Imm(asm.R1, int32(index)),
		asm.Mov.Imm(asm.R2, 0),
		asm.FnRedirect.Call(),
		asm.Return(),
	}
	if drop != "" {
		insns = append(insns, asm.Mov.Imm(asm.R0, 2).WithSymbol(drop), asm.Return())
	}
	return insns
}

// attach loads insns and puts them on the interface's ingress as a
// direct-action filter, under a clsact qdisc.
func attach(index int, name string, insns asm.Instructions) error {
	prog, err := ebpf.NewProgram(&ebpf.ProgramSpec{Type: ebpf.SchedCLS, Instructions: insns, License: "GPL"})
	if err != nil {
		return fmt.Errorf("%s: loading its program: %w", name, err)
	}
	defer func() { _ = prog.Close() }() // the filter holds the program; this descriptor is only ours
	qd := &netlink.GenericQdisc{QdiscAttrs: netlink.QdiscAttrs{LinkIndex: index, Handle: netlink.MakeHandle(0xffff, 0),
		Parent: netlink.HANDLE_CLSACT}, QdiscType: "clsact"}
	if err := netlink.QdiscReplace(qd); err != nil {
		return fmt.Errorf("%s: clsact: %w", name, err)
	}
	f := &netlink.BpfFilter{
		FilterAttrs: netlink.FilterAttrs{LinkIndex: index, Parent: netlink.HANDLE_MIN_INGRESS, Handle: 1,
			Protocol: unix.ETH_P_ALL, Priority: 1},
		Fd: prog.FD(), Name: "tagswitch", DirectAction: true,
	}
	if err := netlink.FilterReplace(f); err != nil {
		return fmt.Errorf("%s: cls_bpf: %w", name, err)
	}
	return nil
}
