package cluster

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
)

// maxSlots bounds the members of one group that take an instance id on
// one host.
const maxSlots = 1024

// instanceSlot is the group.instance.id a member takes when
// cluster.instance_id is not set: <host>-<n>, with n the lowest slot no
// other live member of the group on this host holds. A slot is held by
// an exclusive lock on a file under the user's temporary directory, which
// the kernel releases when the process ends however it ends, so that a
// member restarted on the same host (after a crash, a SIGKILL, an
// upgrade) takes the slot and so the static membership of the process it
// replaces: it rejoins the group with that one's assignment, without a
// rebalance. Two members on one host never share a slot, so neither
// fences the other. release frees the slot.
func instanceSlot(group string) (id string, release func(), err error) {
	host, err := os.Hostname()
	if err != nil || host == "" {
		host = "localhost"
	}
	sum := sha256.Sum256([]byte(group))
	dir := filepath.Join(os.TempDir(), fmt.Sprintf("icecdc-%d", os.Getuid()), "cluster-"+hex.EncodeToString(sum[:8]))
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return "", nil, fmt.Errorf("cluster: instance id slot directory %s: %w", dir, err)
	}
	for n := range maxSlots {
		f, err := os.OpenFile(filepath.Join(dir, strconv.Itoa(n)+".lock"), os.O_RDWR|os.O_CREATE, 0o600)
		if err != nil {
			return "", nil, fmt.Errorf("cluster: instance id slot: %w", err)
		}
		ok, err := tryLock(f)
		if err != nil {
			f.Close()
			return "", nil, fmt.Errorf("cluster: instance id slot %s: %w", f.Name(), err)
		}
		if ok {
			return host + "-" + strconv.Itoa(n), func() { f.Close() }, nil
		}
		f.Close()
	}
	return "", nil, fmt.Errorf("cluster: instance id: all %d slots of group %s on this host are held (under %s); set cluster.instance_id", maxSlots, group, dir)
}
