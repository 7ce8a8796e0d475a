package daemontest

import (
	"path/filepath"
	"testing"
	"time"

	"github.com/icecdc/icecdc/internal/scenario"
)

// rig is a catalog, one daemon configuration following its tables from
// the earliest snapshot, and the files of a test.
type rig struct {
	t        *testing.T
	bin      string
	env      *scenario.Env
	cfg      string // icecdc.yaml
	log      string // the daemon's stdout and stderr, all runs
	state    string
	pipeline string
	listen   string // http.listen
	table    string // the first table
	conf     daemonConf
}

// start starts the daemon and waits until it is ready.
func (r *rig) start() *daemon {
	r.t.Helper()
	d := startDaemon(r.t, r.bin, r.cfg, r.log)
	waitReady(r.t, r.listen, d, 30*time.Second)
	return d
}

// newRig makes a rig; tables default to shop.orders. The tables are not
// created.
func newRig(t *testing.T, sink func(dir string) string, tables ...string) *rig {
	t.Helper()
	if len(tables) == 0 {
		tables = []string{"shop.orders"}
	}
	dir := t.TempDir()
	env := newEnv(t, filepath.Join(dir, "lake"))
	r := &rig{
		t: t, bin: icecdcBinary(t), env: env,
		cfg: filepath.Join(dir, "icecdc.yaml"), log: filepath.Join(dir, "daemon.log"),
		state: filepath.Join(dir, "state.db"), pipeline: "daemontest", table: tables[0],
		listen: freeAddr(t),
	}
	conf := daemonConf{
		Name: r.pipeline, Env: env, Poll: 50 * time.Millisecond, Chunk: crashChunk,
		StatePath: r.state, Listen: r.listen, Sink: sink(dir),
	}
	for _, name := range tables {
		conf.Tables = append(conf.Tables, tableConf{Name: name, Start: "earliest"})
	}
	conf.write(t, r.cfg)
	r.conf = conf
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("daemon log (last lines):\n%s", tail(r.log, 40))
		}
	})
	return r
}

// rewrite writes the configuration again after a change to r.conf.
func (r *rig) rewrite() {
	r.t.Helper()
	r.conf.write(r.t, r.cfg)
}

// fileRig is a rig whose sink is a file; it returns the file's path too.
func fileRig(t *testing.T, tables ...string) (*rig, string) {
	var events string
	r := newRig(t, func(dir string) string {
		events = filepath.Join(dir, "events.jsonl")
		return fileSink(events)
	}, tables...)
	return r, events
}
