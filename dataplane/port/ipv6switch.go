package port

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"log"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
)

// An interface the router attaches to (AF_PACKET) has the kernel's own
// IPv6 switched off (disable_ipv6), so that only the router answers on it,
// and given back as it was when the link goes. What it was is also kept in
// a file while a daemon names one (RecordIPv6Switches): the kernel keeps
// the switch off after a daemon killed with SIGKILL, and the next daemon
// restores it from the file, so no interface keeps urouter's value.
//
// Interfaces are known by index, which stays while the interface does,
// whatever its name becomes; the record names its network namespace, and
// a daemon in another one restores nothing of it.
var ipv6Switches switchRecord

type switchRecord struct {
	sync.Mutex
	path string // "": kept in memory only
	was  map[int]taken
}

type taken struct {
	name  string // when it was taken, for the reader of the file
	value string // its disable_ipv6 before the router took it
	links int    // the links attached to it
}

// sysctlPath is interface dev's net.ipv6.conf knob.
func sysctlPath(dev, knob string) string { return "/proc/sys/net/ipv6/conf/" + dev + "/" + knob }

// netnsID is the daemon's network namespace, as the kernel numbers it.
func netnsID() string {
	fi, err := os.Stat("/proc/self/ns/net")
	if err != nil {
		return "?"
	}
	return strconv.FormatUint(fi.Sys().(*syscall.Stat_t).Ino, 10)
}

// setIPv6 writes the disable_ipv6 of the interface of index i, by its
// name now; an interface gone has nothing to set.
func setIPv6(i int, value string) error {
	ifi, err := net.InterfaceByIndex(i)
	if err != nil {
		return nil
	}
	return os.WriteFile(sysctlPath(ifi.Name, "disable_ipv6"), []byte(value), 0)
}

// RecordIPv6Switches keeps the interfaces' IPv6 switches in the file at
// path from now on, after giving back those a daemon before left there
// (it died with them taken). One daemon owns path at a time (the control
// socket's owner): the file must be a regular file of the daemon's user.
func RecordIPv6Switches(path string) error {
	s := &ipv6Switches
	s.Lock()
	defer s.Unlock()
	fi, err := os.Lstat(path)
	switch {
	case errors.Is(err, fs.ErrNotExist):
	case err != nil:
		return err
	case !fi.Mode().IsRegular() || int(fi.Sys().(*syscall.Stat_t).Uid) != os.Geteuid():
		return fmt.Errorf("%s: not a regular file of this user: not read", path)
	default:
		if err := s.restore(path); err != nil {
			return fmt.Errorf("%s: %w", path, err)
		}
	}
	s.path = path
	return s.save()
}

// restore gives back what the record at path says (under the lock).
func (s *switchRecord) restore(path string) error {
	b, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	sc := bufio.NewScanner(bytes.NewReader(b))
	if !sc.Scan() || sc.Text() != "netns "+netnsID() {
		log.Printf("%s: left by a daemon of another network namespace (%q): nothing given back", path, sc.Text())
		return nil
	}
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		if len(f) != 3 || f[2] != "0" && f[2] != "1" {
			continue
		}
		i, err := strconv.Atoi(f[0])
		if _, mine := s.was[i]; err != nil || mine {
			continue
		}
		if err := setIPv6(i, f[2]); err != nil {
			log.Printf("giving interface %d (%s) back its disable_ipv6 %s: %v", i, f[1], f[2], err)
		}
	}
	return sc.Err()
}

// takeIPv6 switches ifi's IPv6 off, remembering what it was.
func takeIPv6(ifi *net.Interface) error {
	s := &ipv6Switches
	s.Lock()
	defer s.Unlock()
	if t, ok := s.was[ifi.Index]; ok {
		t.links++
		s.was[ifi.Index] = t
		return nil
	}
	old, err := os.ReadFile(sysctlPath(ifi.Name, "disable_ipv6"))
	if err != nil {
		return nil // no IPv6 in the kernel there: nothing to switch
	}
	if s.was == nil {
		s.was = map[int]taken{}
	}
	s.was[ifi.Index] = taken{name: ifi.Name, value: strings.TrimSpace(string(old)), links: 1}
	if err := s.save(); err != nil {
		delete(s.was, ifi.Index)
		return fmt.Errorf("recording disable_ipv6: %w", err)
	}
	if err := os.WriteFile(sysctlPath(ifi.Name, "disable_ipv6"), []byte("1"), 0); err != nil {
		delete(s.was, ifi.Index)
		return errors.Join(err, s.save())
	}
	return nil
}

// giveIPv6 gives interface i its IPv6 switch back once its last link
// lets go. The link goes either way; a failure is returned to whoever
// removes it (the interface keeps the kernel's IPv6 off until someone
// sets it), and a record that could not be saved is said too.
func giveIPv6(i int) error {
	s := &ipv6Switches
	s.Lock()
	defer s.Unlock()
	t, ok := s.was[i]
	if !ok {
		return nil
	}
	if t.links--; t.links > 0 {
		s.was[i] = t
		return nil
	}
	delete(s.was, i)
	var errs []error
	if err := setIPv6(i, t.value); err != nil {
		errs = append(errs, fmt.Errorf("giving %s back its disable_ipv6 %s: %w", t.name, t.value, err))
	}
	if err := s.save(); err != nil {
		errs = append(errs, fmt.Errorf("%s: %w", s.path, err))
	}
	return errors.Join(errs...)
}

// save writes the record (under the lock): the namespace, then one
// "INDEX NAME VALUE" line per interface taken, written whole to a new
// file of its own and renamed into place, so a daemon killed while it
// writes leaves the last whole record; none when nothing is taken.
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
	b := bytes.NewBufferString("netns " + netnsID() + "\n")
	for i, t := range s.was {
		fmt.Fprintf(b, "%d %s %s\n", i, t.name, t.value)
	}
	f, err := os.CreateTemp(filepath.Dir(s.path), filepath.Base(s.path)+".*")
	if err != nil {
		return err
	}
	_, err = f.Write(b.Bytes())
	if err = errors.Join(err, f.Close()); err == nil {
		err = os.Rename(f.Name(), s.path)
	}
	if err != nil {
		_ = os.Remove(f.Name()) // the new file is no record; err says why
	}
	return err
}
