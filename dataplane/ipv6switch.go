package dataplane

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"log"
	"os"
	"strings"
	"sync"
)

// An interface the router attaches to (AF_PACKET) has the kernel's own
// IPv6 switched off (disable_ipv6), so that only the router answers on it,
// and given back as it was when the link goes. What it was is also kept in
// a file while a daemon names one (RecordIPv6Switches): the kernel keeps
// the switch off after a daemon killed with SIGKILL, and the next daemon
// restores it from the file, so no interface keeps urouter's value.
var ipv6Switches switchRecord

type switchRecord struct {
	sync.Mutex
	path string // "": kept in memory only
	was  map[string]taken
}

type taken struct {
	value string // the interface's disable_ipv6 before the router took it
	links int    // the links attached to it
}

func sysctlPath(dev string) string { return "/proc/sys/net/ipv6/conf/" + dev + "/disable_ipv6" }

// RecordIPv6Switches keeps the interfaces' IPv6 switches in the file at
// path from now on, after giving back those a daemon before left there
// (it died with them taken). One daemon owns path at a time.
func RecordIPv6Switches(path string) error {
	s := &ipv6Switches
	s.Lock()
	defer s.Unlock()
	s.path = path
	b, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return s.save()
	}
	if err != nil {
		return err
	}
	sc := bufio.NewScanner(bytes.NewReader(b))
	for sc.Scan() {
		dev, v, ok := strings.Cut(sc.Text(), " ")
		if !ok || v != "0" && v != "1" {
			continue
		}
		if _, mine := s.was[dev]; mine {
			continue
		}
		if err := os.WriteFile(sysctlPath(dev), []byte(v), 0); err != nil {
			log.Printf("giving %s back its disable_ipv6 %s: %v", dev, v, err) // gone, or moved away
		}
	}
	return s.save()
}

// takeIPv6 switches dev's IPv6 off, remembering what it was.
func takeIPv6(dev string) error {
	s := &ipv6Switches
	s.Lock()
	defer s.Unlock()
	if t, ok := s.was[dev]; ok {
		t.links++
		s.was[dev] = t
		return nil
	}
	old, err := os.ReadFile(sysctlPath(dev))
	if err != nil {
		return nil // no IPv6 in the kernel there: nothing to switch
	}
	if s.was == nil {
		s.was = map[string]taken{}
	}
	s.was[dev] = taken{value: strings.TrimSpace(string(old)), links: 1}
	if err := s.save(); err != nil {
		delete(s.was, dev)
		return fmt.Errorf("recording disable_ipv6: %w", err)
	}
	if err := os.WriteFile(sysctlPath(dev), []byte("1"), 0); err != nil {
		delete(s.was, dev)
		s.save()
		return err
	}
	return nil
}

// giveIPv6 gives dev its IPv6 switch back once its last link lets go.
func giveIPv6(dev string) error {
	s := &ipv6Switches
	s.Lock()
	defer s.Unlock()
	t, ok := s.was[dev]
	if !ok {
		return nil
	}
	if t.links--; t.links > 0 {
		s.was[dev] = t
		return nil
	}
	delete(s.was, dev)
	err := os.WriteFile(sysctlPath(dev), []byte(t.value), 0)
	return errors.Join(err, s.save())
}

// save writes the record (under the lock): one "DEV VALUE" line per
// interface taken, written whole and renamed into place, so a daemon
// killed while it writes leaves the last whole record.
func (s *switchRecord) save() error {
	if s.path == "" {
		return nil
	}
	if len(s.was) == 0 {
		if err := os.Remove(s.path); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return err
		}
		return nil
	}
	var b bytes.Buffer
	for dev, t := range s.was {
		fmt.Fprintf(&b, "%s %s\n", dev, t.value)
	}
	tmp := s.path + ".new"
	if err := os.WriteFile(tmp, b.Bytes(), 0o600); err != nil {
		return err
	}
	return os.Rename(tmp, s.path)
}
