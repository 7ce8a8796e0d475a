package daemontest

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kfake"

	"github.com/icecdc/icecdc/cluster"
	"github.com/icecdc/icecdc/internal/scenario"
)

// TestClusterFileSink runs a cluster whose sink is a file (Kafka only
// coordinates and keeps the checkpoints): 2 members, each writing its own
// file, on 4 tables that hash to the 4 partitions of the coordination
// topic, so that each member follows 2. It checks, once every table is
// caught up:
//
//   - each table's events are in exactly one member's file, the file of
//     the member that owns it, and are the engine's stream exactly: same
//     ids, order and row images, nothing lost, no repeat (the members
//     never stop or fail while the tables are committed to, so the file
//     sink's at-least-once delivery has nothing to re-send);
//   - `icecdc status` names that member as the owner of each table, 0
//     snapshots behind, and the member at its generation as the last
//     writer of the checkpoint;
//   - /metrics: icecdc_cluster_tables_owned sums to 4,
//     icecdc_cluster_table_owned{table} is 1 on the owner only, both
//     members are in the same generation (icecdc_cluster_generation),
//     each counted an assignment (icecdc_cluster_rebalances_total) and
//     its table moves (icecdc_cluster_table_moves_total) add up to the
//     tables it owns.
//
// Then one member is stopped with SIGTERM (exit 0) and the other takes
// every table over; after one more commit to each table its file holds
// the new events of all 4, the stopped member's file is unchanged, and
// each table's events across the two files are still the engine's stream
// exactly: the graceful handover re-sends nothing.
func TestClusterFileSink(t *testing.T) {
	if testing.Short() {
		t.Skip("a cluster test runs several icecdc processes; skipped with -short")
	}
	const (
		nTables  = 4
		parts    = 4 // one table per coordination partition
		pipeline = "clusterfile"
		seed     = uint64(20261215)
	)
	c, err := kfake.NewCluster(kfake.NumBrokers(3), kfake.GroupMinSessionTimeout(time.Second))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Close)
	dir := t.TempDir()
	env := newEnv(t, filepath.Join(dir, "lake"))
	r := &clusterRig{t: t, bin: icecdcBinary(t), log: filepath.Join(dir, "members.log"), brokers: c.ListenAddrs()}
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("members' log (last lines):\n%s", tail(r.log, 60))
		}
	})
	ctx := t.Context()

	// Tables on distinct coordination partitions: a balanced group of 2
	// gives each member 2 of them.
	used := map[int32]bool{}
	for i := 0; len(r.tables) < nTables; i++ {
		name := fmt.Sprintf("shop.f%02d", i)
		if p := cluster.Partition(name, parts); !used[p] {
			used[p] = true
			r.tables = append(r.tables, name)
		}
	}
	writers := map[string]*writer{}
	byUUID := map[string]string{} // table uuid -> name
	for i, name := range r.tables {
		w, err := newWriter(ctx, env, name, seed+uint64(i))
		if err != nil {
			t.Fatal(err)
		}
		writers[name] = w
		byUUID[w.tbl.Metadata().TableUUID().String()] = name
	}

	// One configuration per member, differing only in the file's path
	// (not part of the fingerprint the members must share).
	q := make([]string, len(r.brokers))
	for i, b := range r.brokers {
		q[i] = strconv.Quote(b)
	}
	var cfgs, outs [2]string
	for i := range cfgs {
		cfgs[i] = filepath.Join(dir, fmt.Sprintf("member%d.yaml", i+1))
		outs[i] = filepath.Join(dir, fmt.Sprintf("events%d.jsonl", i+1))
		conf := daemonConf{Name: pipeline, Env: env, Poll: 100 * time.Millisecond, Chunk: 20,
			StatePath: filepath.Join(dir, "unused.db"), Sink: fileSink(outs[i])}
		for _, name := range r.tables {
			conf.Tables = append(conf.Tables, tableConf{Name: name, Start: "earliest"})
		}
		conf.write(t, cfgs[i])
		f, err := os.OpenFile(cfgs[i], os.O_APPEND|os.O_WRONLY, 0)
		if err != nil {
			t.Fatal(err)
		}
		fmt.Fprintf(f, "cluster: {type: kafka, group: %s, partitions: %d, session_timeout: 3s, kafka: {brokers: [%s]}}\n",
			pipeline, parts, strings.Join(q, ", "))
		f.Close()
	}

	// Both members join before any commit, so that no table moves once
	// it has events: each table is delivered by one member only.
	var ms [2]*member
	var names [2]string
	for i := range ms {
		ms[i] = r.startWith(cfgs[i])
	}
	for i, m := range ms {
		waitReady(t, m.listen, m.d, 60*time.Second)
		st, err := m.status()
		if err != nil {
			t.Fatalf("member %d /status: %v", m.n, err)
		}
		names[i] = st.Member
	}
	waitUntil(t, 60*time.Second, "a balanced assignment (2 tables per member)", func() (bool, string) {
		var owned [2][]string
		for i, m := range ms {
			mt, err := scrapeMetrics(m.listen)
			if err != nil {
				return false, err.Error()
			}
			owned[i] = ownedTables(mt)
		}
		all := slices.Sorted(slices.Values(append(slices.Clone(owned[0]), owned[1]...)))
		return len(owned[0]) == 2 && len(owned[1]) == 2 && slices.Equal(all, r.tables), fmt.Sprintf("member 1 owns %v, member 2 owns %v", owned[0], owned[1])
	})

	heads := map[string]int64{}
	for k := range 3 {
		for _, name := range r.tables {
			if _, err := writers[name].step(ctx, k, false); err != nil {
				t.Fatalf("%s: %v", name, err)
			}
			heads[name] = writers[name].tbl.CurrentSnapshot().SequenceNumber
		}
	}
	rows := waitClusterCaughtUp(t, r.bin, cfgs[0], heads, ms[:])

	// Status and metrics agree on one owner per table.
	var mets [2]map[string]float64
	for i, m := range ms {
		if mets[i], err = scrapeMetrics(m.listen); err != nil {
			t.Fatal(err)
		}
	}
	gen := mets[0]["icecdc_cluster_generation"]
	if gen < 1 || mets[1]["icecdc_cluster_generation"] != gen {
		t.Fatalf("icecdc_cluster_generation: member 1 %v, member 2 %v; want one generation of at least 1", gen, mets[1]["icecdc_cluster_generation"])
	}
	if sum := mets[0]["icecdc_cluster_tables_owned"] + mets[1]["icecdc_cluster_tables_owned"]; sum != nTables {
		t.Fatalf("icecdc_cluster_tables_owned sums to %v across the members, want %d", sum, nTables)
	}
	owner := map[string]int{} // table -> index of its member
	for _, name := range r.tables {
		var on []int
		for i := range mets {
			if mets[i][ownedSeries(name)] == 1 {
				on = append(on, i)
			}
		}
		if len(on) != 1 {
			t.Fatalf("%s: icecdc_cluster_table_owned is 1 on members %v, want exactly one", name, on)
		}
		owner[name] = on[0]
		row := rows[name]
		if row.Owner != names[on[0]] {
			t.Fatalf("%s: icecdc status names owner %q, /metrics member %d (%s)", name, row.Owner, on[0]+1, names[on[0]])
		}
		if want := fmt.Sprintf("%s@%d", names[on[0]], int(gen)); row.LastWriter != want {
			t.Fatalf("%s: icecdc status last writer %q, want %q", name, row.LastWriter, want)
		}
	}
	for i := range mets {
		checkMemberMetrics(t, i+1, mets[i], 1)
	}

	// Each table's events are in its owner's file only, and are the
	// engine's stream exactly.
	want := map[string][]event{}
	for _, name := range r.tables {
		if want[name], _, err = expectedEvents(ctx, env, name); err != nil {
			t.Fatal(err)
		}
	}
	var files1 [2]map[string][]event
	for i := range files1 {
		files1[i] = eventsByTable(t, outs[i], byUUID)
	}
	for _, name := range r.tables {
		o := owner[name]
		if n := len(files1[1-o][name]); n > 0 {
			t.Fatalf("%s: owned by member %d, but member %d's file holds %d of its events", name, o+1, 2-o, n)
		}
		if err := sameStream(files1[o][name], want[name]); err != nil {
			t.Fatalf("%s: member %d's file: %v", name, o+1, err)
		}
	}
	phase1 := 0
	for _, name := range r.tables {
		phase1 += len(want[name])
	}

	// The second member leaves; the first takes every table over.
	const leaver, survivor = 1, 0
	if err := ms[leaver].d.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	if code := ms[leaver].d.wait(t, 60*time.Second); code != 0 {
		t.Fatalf("member %d exited %d after SIGTERM, want 0", leaver+1, code)
	}
	waitUntil(t, 30*time.Second, "the survivor to own every table", func() (bool, string) {
		mt, err := scrapeMetrics(ms[survivor].listen)
		if err != nil {
			return false, err.Error()
		}
		owned := ownedTables(mt)
		return slices.Equal(owned, r.tables) && mt["icecdc_cluster_tables_owned"] == nTables, fmt.Sprintf("it owns %v", owned)
	})
	for _, name := range r.tables {
		w := writers[name]
		next, err := scenario.Append(ctx, w.tbl, w.rows(5, "late"))
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		w.tbl = next
		heads[name] = next.CurrentSnapshot().SequenceNumber
	}
	rows = waitClusterCaughtUp(t, r.bin, cfgs[0], heads, ms[survivor:survivor+1])
	mt, err := scrapeMetrics(ms[survivor].listen)
	if err != nil {
		t.Fatal(err)
	}
	gen2 := mt["icecdc_cluster_generation"]
	if gen2 <= gen {
		t.Fatalf("icecdc_cluster_generation of the survivor is %v after the other left, want more than %v", gen2, gen)
	}
	checkMemberMetrics(t, survivor+1, mt, 2)
	for _, name := range r.tables {
		row := rows[name]
		if row.Owner != names[survivor] {
			t.Fatalf("%s: icecdc status names owner %q after member %d left, want the survivor %s", name, row.Owner, leaver+1, names[survivor])
		}
		if want := fmt.Sprintf("%s@%d", names[survivor], int(gen2)); row.LastWriter != want {
			t.Fatalf("%s: icecdc status last writer %q, want %q", name, row.LastWriter, want)
		}
	}

	// The leaver's file is as it was; the survivor's has every new event,
	// and each table's events across both files are the engine's stream.
	var files2 [2]map[string][]event
	for i := range files2 {
		files2[i] = eventsByTable(t, outs[i], byUUID)
	}
	moved, events := 0, 0
	for _, name := range r.tables {
		if !slices.Equal(files2[leaver][name], files1[leaver][name]) {
			t.Fatalf("%s: member %d's file changed after it exited", name, leaver+1)
		}
		all, _, err := expectedEvents(ctx, env, name)
		if err != nil {
			t.Fatal(err)
		}
		late := all[len(want[name]):]
		if len(late) == 0 || late[0].Seq != heads[name] {
			t.Fatalf("%s: the engine has %d events after the first round, want those of seq %d", name, len(late), heads[name])
		}
		got := append(slices.Clone(files2[leaver][name]), files2[survivor][name]...)
		if err := sameStream(got, all); err != nil {
			t.Fatalf("%s: the two files together: %v", name, err)
		}
		if owner[name] == leaver {
			moved++
		}
		events += len(all)
	}
	if moved != 2 {
		t.Fatalf("%d tables moved from member %d, want the 2 it owned", moved, leaver+1)
	}
	t.Logf("%d tables, 2 members, file sinks: %d events delivered by their owners, then %d after member %d's SIGTERM moved %d tables to member %d (generation %d to %d); nothing lost or repeated",
		nTables, phase1, events-phase1, leaver+1, moved, survivor+1, int(gen), int(gen2))
}

// sameStream checks a delivered stream against the expected one exactly:
// the same events, row images included, in the same order, no repeat.
func sameStream(got, want []event) error {
	for i := range min(len(got), len(want)) {
		if got[i] != want[i] {
			return fmt.Errorf("event %d is %s, want %s", i, got[i], want[i])
		}
	}
	if len(got) != len(want) {
		return fmt.Errorf("%d events delivered, want %d", len(got), len(want))
	}
	return nil
}

// eventsByTable reads a file sink's output and splits it by table, in
// the order of the file.
func eventsByTable(t *testing.T, path string, byUUID map[string]string) map[string][]event {
	t.Helper()
	out := map[string][]event{}
	if _, err := os.Stat(path); os.IsNotExist(err) {
		return out
	}
	evs, err := readEventFile(path)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range evs {
		uuid, _, _ := strings.Cut(e.ID, ":")
		name, ok := byUUID[uuid]
		if !ok {
			t.Fatalf("%s: event %s of no table of the test", path, e)
		}
		out[name] = append(out[name], e)
	}
	return out
}

// checkMemberMetrics checks a member's cluster counters: at least
// assigned rebalances, and table moves that add up to the tables it owns.
func checkMemberMetrics(t *testing.T, n int, mt map[string]float64, assigned float64) {
	t.Helper()
	if v := mt[`icecdc_cluster_rebalances_total{kind="assigned"}`]; v < assigned {
		t.Fatalf("member %d: icecdc_cluster_rebalances_total{kind=\"assigned\"} is %v, want at least %v", n, v, assigned)
	}
	moves := func(dir string) float64 { return mt[`icecdc_cluster_table_moves_total{direction="`+dir+`"}`] }
	if net, owned := moves("acquired")-moves("released")-moves("lost"), mt["icecdc_cluster_tables_owned"]; net != owned {
		t.Fatalf("member %d: icecdc_cluster_table_moves_total: %v acquired, %v released, %v lost, but %v tables owned",
			n, moves("acquired"), moves("released"), moves("lost"), owned)
	}
	if v := len(ownedTables(mt)); float64(v) != mt["icecdc_cluster_tables_owned"] {
		t.Fatalf("member %d: icecdc_cluster_table_owned is 1 for %d tables, but icecdc_cluster_tables_owned is %v", n, v, mt["icecdc_cluster_tables_owned"])
	}
}

func ownedSeries(table string) string { return `icecdc_cluster_table_owned{table="` + table + `"}` }

// ownedTables lists, sorted, the tables whose icecdc_cluster_table_owned
// is 1.
func ownedTables(mt map[string]float64) []string {
	var out []string
	for k, v := range mt {
		if name, ok := strings.CutPrefix(k, `icecdc_cluster_table_owned{table="`); ok && v == 1 {
			out = append(out, strings.TrimSuffix(name, `"}`))
		}
	}
	slices.Sort(out)
	return out
}

// scrapeMetrics reads a daemon's /metrics: each sample's value by its
// series as the text format writes it (name{labels}).
func scrapeMetrics(listen string) (map[string]float64, error) {
	c := http.Client{Timeout: 2 * time.Second}
	resp, err := c.Get("http://" + listen + "/metrics")
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		return nil, err
	}
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("/metrics: %s", resp.Status)
	}
	out := map[string]float64{}
	sc := bufio.NewScanner(bytes.NewReader(b))
	for sc.Scan() {
		line := sc.Text()
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		i := strings.LastIndexByte(line, ' ')
		if i < 0 {
			return nil, fmt.Errorf("/metrics: cannot parse %q", line)
		}
		v, err := strconv.ParseFloat(line[i+1:], 64)
		if err != nil {
			return nil, fmt.Errorf("/metrics: cannot parse %q: %v", line, err)
		}
		out[line[:i]] = v
	}
	return out, sc.Err()
}

// clusterStatusRow is one table line of `icecdc status` in cluster mode.
type clusterStatusRow struct {
	Table, Owner string
	CPSeq        int64
	Position     string
	HeadSeq      int64
	Behind       int
	LastWriter   string // member@generation
}

// icecdcClusterStatus runs `icecdc status -c cfg` on a cluster
// configuration and parses its table.
func icecdcClusterStatus(ctx context.Context, bin, cfg string) (map[string]clusterStatusRow, error) {
	var out, errOut bytes.Buffer
	cmd := exec.CommandContext(ctx, bin, "status", "-c", cfg)
	cmd.Stdout, cmd.Stderr = &out, &errOut
	// Exit 3 is a status printed with a table failing; its row says why.
	if err := cmd.Run(); err != nil && cmd.ProcessState.ExitCode() != 3 {
		return nil, fmt.Errorf("icecdc status: %v: %s", err, errOut.String())
	}
	rows := map[string]clusterStatusRow{}
	sc := bufio.NewScanner(&out)
	header := true
	for sc.Scan() {
		if header {
			if f := strings.Fields(sc.Text()); len(f) < 2 || f[1] != "OWNER" {
				return nil, fmt.Errorf("icecdc status: header %q, want the cluster table", sc.Text())
			}
			header = false
			continue
		}
		if sc.Text() == "" {
			break
		}
		// TABLE OWNER CHECKPOINT_SEQ SNAPSHOT POSITION HEAD_SEQ
		// SNAPSHOTS_BEHIND SECONDS_BEHIND LAST_WRITER SAVED; POSITION may
		// be several words.
		f := strings.Fields(sc.Text())
		if len(f) < 10 {
			return nil, fmt.Errorf("icecdc status: cannot parse %q", sc.Text())
		}
		n := len(f)
		r := clusterStatusRow{Table: f[0], Owner: f[1], Position: strings.Join(f[4:n-5], " "), LastWriter: f[n-2]}
		var errs [3]error
		r.CPSeq, errs[0] = strconv.ParseInt(f[2], 10, 64)
		r.HeadSeq, errs[1] = strconv.ParseInt(f[n-5], 10, 64)
		r.Behind, errs[2] = strconv.Atoi(f[n-4])
		for _, err := range errs {
			if err != nil {
				return nil, fmt.Errorf("icecdc status: cannot parse %q: %v", sc.Text(), err)
			}
		}
		rows[r.Table] = r
	}
	return rows, sc.Err()
}

// waitClusterCaughtUp polls `icecdc status` until every table of heads
// has its head as a whole checkpoint and 0 snapshots behind, with an
// owner; it fails the test if a member of live exits or after a minute.
func waitClusterCaughtUp(t *testing.T, bin, cfg string, heads map[string]int64, live []*member) map[string]clusterStatusRow {
	t.Helper()
	var rows map[string]clusterStatusRow
	waitUntil(t, 60*time.Second, "every table caught up in icecdc status", func() (bool, string) {
		for _, m := range live {
			if m.d.exited() {
				t.Fatalf("member %d exited (%v)", m.n, m.d.err)
			}
		}
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		var err error
		if rows, err = icecdcClusterStatus(ctx, bin, cfg); err != nil {
			return false, err.Error()
		}
		for name, head := range heads {
			r, ok := rows[name]
			if !ok || r.Position != "done" || r.CPSeq != head || r.HeadSeq != head || r.Behind != 0 || r.Owner == "-" {
				return false, fmt.Sprintf("%s: %+v, head %d", name, r, head)
			}
		}
		return true, ""
	})
	return rows
}

// waitUntil polls cond every 200ms until it holds, and fails the test
// with what it last said after timeout.
func waitUntil(t *testing.T, timeout time.Duration, what string, cond func() (bool, string)) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for {
		ok, last := cond()
		if ok {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("waited %s for %s: %s", timeout, what, last)
		}
		time.Sleep(200 * time.Millisecond)
	}
}
