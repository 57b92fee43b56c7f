package control

import (
	"io"

	"golang.org/x/sys/unix"
)

func umask(m int) int { return unix.Umask(m) }

var errEOF = io.EOF
