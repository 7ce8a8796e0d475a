//go:build !unix

package source

import (
	"io/fs"
	"os"
)

// openRegular opens the file at real, named p in errors, and refuses it
// unless it is a regular file. Without O_NONBLOCK the open itself may
// wait; localTimeout bounds it.
func openRegular(p, real string, _ bool) (*os.File, error) {
	f, err := os.Open(real)
	if err != nil {
		return nil, &fs.PathError{Op: "open", Path: p, Err: err}
	}
	st, err := f.Stat()
	if err != nil {
		f.Close()
		return nil, &fs.PathError{Op: "open", Path: p, Err: err}
	}
	if !st.Mode().IsRegular() {
		f.Close()
		return nil, &fs.PathError{Op: "open", Path: p, Err: &errNotRegular{kindOf(st.Mode())}}
	}
	return f, nil
}
