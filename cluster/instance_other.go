//go:build !unix

package cluster

import (
	"errors"
	"os"
)

// tryLock cannot lock without flock: the member must be given
// cluster.instance_id, or it joins with a dynamic membership.
func tryLock(*os.File) (bool, error) {
	return false, errors.ErrUnsupported
}
