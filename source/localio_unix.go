//go:build unix

package source

import (
	"io/fs"
	"os"
	"syscall"
)

// openRegular opens the file at real, named p in errors, and refuses it
// unless it is a regular file. O_NONBLOCK makes the open of a named pipe
// return at once instead of waiting for a writer (and is cleared again:
// it means nothing to a regular file's reads); fstat then says what was
// opened. noFollow refuses a symbolic link as the last component.
func openRegular(p, real string, noFollow bool) (*os.File, error) {
	flags := syscall.O_RDONLY | syscall.O_NONBLOCK | syscall.O_CLOEXEC
	if noFollow {
		flags |= syscall.O_NOFOLLOW
	}
	var fd int
	err := retryEINTR(func() (err error) { fd, err = syscall.Open(real, flags, 0); return err })
	if err == syscall.ENXIO { // what opening a socket answers
		var st syscall.Stat_t
		if syscall.Stat(real, &st) == nil && st.Mode&syscall.S_IFMT == syscall.S_IFSOCK {
			err = &errNotRegular{kindOf(fs.ModeSocket)}
		}
	}
	if err != nil {
		return nil, &fs.PathError{Op: "open", Path: p, Err: err}
	}
	var st syscall.Stat_t
	if err := retryEINTR(func() error { return syscall.Fstat(fd, &st) }); err != nil {
		syscall.Close(fd)
		return nil, &fs.PathError{Op: "open", Path: p, Err: err}
	}
	if st.Mode&syscall.S_IFMT != syscall.S_IFREG {
		syscall.Close(fd)
		return nil, &fs.PathError{Op: "open", Path: p, Err: &errNotRegular{kindOf(unixMode(uint32(st.Mode)))}}
	}
	if err := syscall.SetNonblock(fd, false); err != nil {
		syscall.Close(fd)
		return nil, &fs.PathError{Op: "open", Path: p, Err: err}
	}
	return os.NewFile(uintptr(fd), p), nil
}

func retryEINTR(call func() error) error {
	for {
		if err := call(); err != syscall.EINTR {
			return err
		}
	}
}

// unixMode is the fs.FileMode type bits of a stat mode.
func unixMode(m uint32) fs.FileMode {
	switch m & syscall.S_IFMT {
	case syscall.S_IFIFO:
		return fs.ModeNamedPipe
	case syscall.S_IFSOCK:
		return fs.ModeSocket
	case syscall.S_IFCHR:
		return fs.ModeDevice | fs.ModeCharDevice
	case syscall.S_IFBLK:
		return fs.ModeDevice
	case syscall.S_IFDIR:
		return fs.ModeDir
	case syscall.S_IFLNK:
		return fs.ModeSymlink
	}
	return fs.ModeIrregular
}
