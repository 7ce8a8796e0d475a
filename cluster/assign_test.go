package cluster

import (
	"fmt"
	"runtime"
	"slices"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/icecdc/icecdc/cdc"
)

// The assignment at scale is simulated in-process: three members, each
// with 100,000 tables, cannot run on one small machine. What decides it
// runs for real: Partition (the tables' mapping) and franz-go's
// cooperative-sticky balancer (the one the members use), fed the join
// metadata a member sends, round after round until no partition is in
// flight, as the group does.

const scaleTables = 100_000

// scaleNames are table names in the shape of a large catalog: a hundred
// namespaces of a thousand tables.
func scaleNames(n int) []string {
	out := make([]string, n)
	for i := range out {
		out[i] = fmt.Sprintf("ns%03d.table_%06d", i/1000, i)
	}
	return out
}

// assignment is which member owns which partitions.
type assignment map[string][]int32

// rebalance runs the group's rebalances for members (their current
// partitions: nil for a member joining) until the assignment is stable,
// and returns it with the number of rounds. Cooperative balancing takes
// a partition from its owner in one round and gives it to its new owner
// in the next.
func rebalance(t testing.TB, topic string, partitions int32, members assignment, gen int32) (assignment, int) {
	t.Helper()
	bal := kgo.CooperativeStickyBalancer()
	cur := assignment{}
	for m, ps := range members {
		cur[m] = slices.Clone(ps)
	}
	for round := 1; round <= 10; round++ {
		ids := make([]string, 0, len(cur))
		for m := range cur {
			ids = append(ids, m)
		}
		slices.Sort(ids)
		joins := make([]kmsg.JoinGroupResponseMember, len(ids))
		for i, m := range ids {
			var owned map[string][]int32
			if len(cur[m]) > 0 {
				owned = map[string][]int32{topic: cur[m]}
			}
			joins[i] = kmsg.JoinGroupResponseMember{MemberID: m, ProtocolMetadata: bal.JoinGroupMetadata([]string{topic}, owned, gen)}
		}
		mb, _, err := bal.MemberBalancer(joins)
		if err != nil {
			t.Fatal(err)
		}
		var plan kgo.IntoSyncAssignment
		if me, ok := mb.(kgo.GroupMemberBalancerOrError); ok {
			if plan, err = me.BalanceOrError(map[string]int32{topic: partitions}); err != nil {
				t.Fatal(err)
			}
		} else {
			plan = mb.Balance(map[string]int32{topic: partitions})
		}
		next := assignment{}
		for _, a := range plan.IntoSyncAssignment() {
			parsed, err := bal.ParseSyncAssignment(a.MemberAssignment)
			if err != nil {
				t.Fatal(err)
			}
			ps := slices.Clone(parsed[topic])
			slices.Sort(ps)
			next[a.MemberID] = ps
		}
		for _, m := range ids {
			if _, ok := next[m]; !ok {
				next[m] = nil
			}
		}
		gen++
		stable := true
		for m := range cur {
			if !slices.Equal(cur[m], next[m]) {
				stable = false
			}
		}
		cur = next
		if stable {
			return cur, round
		}
	}
	t.Fatal("the balancer did not settle in 10 rounds")
	return nil, 0
}

// spread is the most and fewest of counts.
func spread(counts []int) (lo, hi int) {
	return slices.Min(counts), slices.Max(counts)
}

// TestAssignmentAtScale: 100,000 tables over the default 64 partitions
// and 3 members. The partitions hold nearly equal shares (within 10%),
// each member owns 21 or 22 of them, so its tables are within the
// partitions' spread times 22/21 of another's; when a fourth member joins
// exactly the 16 partitions it needs move (no partition moves between
// the three), and when a member leaves only its partitions move.
func TestAssignmentAtScale(t *testing.T) {
	const topic = "icecdc.cluster.g"
	const partitions = 64
	names := scaleNames(scaleTables)
	perPart := make([]int, partitions)
	for _, n := range names {
		perPart[Partition(n, partitions)]++
	}
	plo, phi := spread(perPart)
	t.Logf("tables per partition (%d partitions): min %d, max %d, max/min %.3f", partitions, plo, phi, float64(phi)/float64(plo))
	if float64(phi) > 1.10*float64(plo) {
		t.Errorf("tables per partition range from %d to %d: more than 10%% apart", plo, phi)
	}
	tablesOf := func(a assignment, m string) int {
		n := 0
		for _, p := range a[m] {
			n += perPart[p]
		}
		return n
	}
	// checkBalance fails unless the members' partition counts differ by
	// at most one, and their tables by no more than the partitions'
	// spread allows.
	checkBalance := func(what string, a assignment) {
		t.Helper()
		var parts, tables []int
		for m := range a {
			parts = append(parts, len(a[m]))
			tables = append(tables, tablesOf(a, m))
		}
		lo, hi := spread(parts)
		tlo, thi := spread(tables)
		t.Logf("%s: %d members, partitions per member %d to %d, tables per member %d to %d (max/min %.3f)",
			what, len(a), lo, hi, tlo, thi, float64(thi)/float64(tlo))
		if hi-lo > 1 {
			t.Errorf("%s: partitions per member range from %d to %d", what, lo, hi)
		}
		if bound := float64(hi) / float64(lo) * float64(phi) / float64(plo); float64(thi) > bound*float64(tlo) {
			t.Errorf("%s: tables per member range from %d to %d, past the bound %.3f", what, tlo, thi, bound)
		}
	}
	// moved counts the partitions, and their tables, whose owner changed.
	moved := func(before, after assignment) (parts, tables int) {
		owner := map[int32]string{}
		for m, ps := range before {
			for _, p := range ps {
				owner[p] = m
			}
		}
		for m, ps := range after {
			for _, p := range ps {
				if owner[p] != m {
					parts++
					tables += perPart[p]
				}
			}
		}
		return parts, tables
	}

	three, rounds := rebalance(t, topic, partitions, assignment{"m1": nil, "m2": nil, "m3": nil}, 1)
	checkBalance("3 members start", three)
	total := 0
	for m := range three {
		total += len(three[m])
	}
	if total != partitions {
		t.Fatalf("3 members own %d partitions, want %d", total, partitions)
	}

	join := maps(three)
	join["m4"] = nil
	four, joinRounds := rebalance(t, topic, partitions, join, 10)
	checkBalance("a 4th member joined", four)
	jp, jt := moved(three, four)
	t.Logf("a 4th member joined (%d rounds, the last confirming): %d partitions moved (minimum %d), %d tables moved (an even share: %d)",
		joinRounds, jp, partitions/4, jt, scaleTables/4)
	if jp != partitions/4 || len(four["m4"]) != jp {
		t.Errorf("a 4th member joined: %d partitions moved, %d to it; want the %d it needs and no other", jp, len(four["m4"]), partitions/4)
	}

	leave := maps(three)
	gone := leave["m2"]
	delete(leave, "m2")
	two, leaveRounds := rebalance(t, topic, partitions, leave, 20)
	checkBalance("a member left", two)
	lp, lt := moved(three, two)
	t.Logf("a member left (%d rounds, the last confirming): %d partitions moved (minimum %d: its own), %d tables moved (its own: %d)",
		leaveRounds, lp, len(gone), lt, tablesOf(three, "m2"))
	if lp != len(gone) {
		t.Errorf("a member left: %d partitions moved, want only its %d", lp, len(gone))
	}
	t.Logf("rounds to the first assignment: %d (the last one confirming it)", rounds)
}

// TestMemberIndexAtScale: every member indexes every table of the
// pipeline by partition, so at 100,000 tables the index must cost a few
// bytes a table (it held a copy of each, 178 bytes, 17 MiB per member),
// and still give each partition its tables.
func TestMemberIndexAtScale(t *testing.T) {
	const topic = "icecdc.cluster.g"
	names := scaleNames(scaleTables)
	tables := make([]Table, len(names))
	for i, n := range names {
		tables[i] = Table{TableSpec: cdc.TableSpec{Name: n}}
	}
	cfg := Config{Type: TypeKafka, Group: "g", Topic: topic, InstanceID: "test-1"}.WithDefaults(nil)
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	m, err := New(Options{Pipeline: "p", Config: cfg, Tables: tables})
	if err != nil {
		t.Fatal(err)
	}
	runtime.GC()
	runtime.ReadMemStats(&after)
	perTable := float64(int64(after.HeapAlloc)-int64(before.HeapAlloc)) / scaleTables
	t.Logf("the member's index of %d tables: %.1f bytes a table", scaleTables, perTable)
	if perTable > 32 {
		t.Errorf("the member's index of %d tables takes %.1f bytes a table, want at most 32", scaleTables, perTable)
	}
	all := make([]int32, cfg.Partitions)
	for i := range all {
		all[i] = int32(i)
	}
	got := m.tablesOf(map[string][]int32{topic: {3}})
	for _, tb := range got {
		if Partition(tb.Name, cfg.Partitions) != 3 {
			t.Fatalf("%s is among partition 3's tables, but hashes to %d", tb.Name, Partition(tb.Name, cfg.Partitions))
		}
	}
	if n := len(m.tablesOf(map[string][]int32{topic: all})); n != scaleTables || len(got) == 0 {
		t.Fatalf("the partitions hold %d tables (partition 3: %d), want all %d", n, len(got), scaleTables)
	}
	runtime.KeepAlive(tables)
}

func maps(a assignment) assignment {
	out := assignment{}
	for m, ps := range a {
		out[m] = slices.Clone(ps)
	}
	return out
}

// BenchmarkAssignment100k measures what a member of a 3-member group
// spends on 100,000 tables: New's index of the tables by partition (every
// member holds it), one assignment by the cooperative-sticky balancer,
// and the tables of the member's partitions. It reports the time of one
// such assignment (and of its two parts: New's index, the balancing with
// the member's tables) and the heap New's index takes, per member and
// per table.
func BenchmarkAssignment100k(b *testing.B) {
	const topic = "icecdc.cluster.g"
	names := scaleNames(scaleTables)
	tables := make([]Table, len(names))
	for i, n := range names {
		tables[i] = Table{TableSpec: cdc.TableSpec{Name: n}}
	}
	cfg := Config{Type: TypeKafka, Group: "g", Topic: topic, InstanceID: "bench-1"}.WithDefaults(nil)
	var heap uint64
	var owned int
	var indexing, balancing time.Duration
	for b.Loop() {
		var before, after runtime.MemStats
		runtime.GC()
		runtime.ReadMemStats(&before)
		t0 := time.Now()
		m, err := New(Options{Pipeline: "p", Config: cfg, Tables: tables})
		if err != nil {
			b.Fatal(err)
		}
		index := time.Since(t0)
		runtime.GC()
		runtime.ReadMemStats(&after)
		heap = after.HeapAlloc - before.HeapAlloc
		t0 = time.Now()
		a, _ := rebalance(b, topic, cfg.Partitions, assignment{"m1": nil, "m2": nil, "m3": nil}, 1)
		owned = len(m.tablesOf(map[string][]int32{topic: a["m1"]}))
		indexing += index
		balancing += time.Since(t0)
		runtime.KeepAlive(m)
	}
	b.ReportMetric(float64((indexing+balancing).Microseconds())/1000/float64(b.N), "ms/assignment")
	b.ReportMetric(float64(indexing.Microseconds())/1000/float64(b.N), "index-ms")
	b.ReportMetric(float64(balancing.Microseconds())/1000/float64(b.N), "balance-ms")
	b.ReportMetric(float64(heap)/(1<<20), "index-MiB/member")
	b.ReportMetric(float64(heap)/scaleTables, "index-B/table")
	b.ReportMetric(float64(owned), "tables/member")
}
