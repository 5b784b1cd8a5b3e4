// tests/clients/franz_it/main.go: franz-go (kgo + kadm) against the broker.
//
// Usage: franz-it -broker HOST:PORT [-n N], or franz-it cluster ... (cluster.go:
// the driver of tests/integration/test_cluster_clients.py).
//
// Built by deploy/install-deps.sh into build/go/franz-it (module pinned by
// go.mod/go.sum beside this file) and run by
// tests/integration/test_go_clients.py. One run, in order, each step failing
// the process (exit 1, the reason on stderr) on any error or mismatch:
//
//	admin:   CreateTopics (3 partitions, a topic config), a duplicate create
//	         (TOPIC_ALREADY_EXISTS), Metadata (ListTopics), DescribeConfigs,
//	         CreatePartitions (3 -> 4);
//	produce: N keyed records, acks=all (idempotent, franz-go's default), to
//	         explicit partitions; offsets 0.. per partition;
//	consume: a direct (group-less) consumer from the start reads exactly
//	         those records at those offsets; ListOffsets end offsets match;
//	group:   member A reads everything, commits, leaves; OffsetFetch equals
//	         the end offsets; 40 more records; members B and C join together
//	         and read exactly the 40 new ones (resuming at the commits);
//	         DescribeGroups shows both, Stable, owning all partitions;
//	delete:  DeleteTopics, and the topic is gone from Metadata.
//
// Members B and C poll on their own goroutines; what they read is under mu.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"sort"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
)

const (
	topic = "franz-topic"
	group = "franz-group"
)

func fail(format string, a ...any) {
	fmt.Fprintf(os.Stderr, "FAIL: "+format+"\n", a...)
	os.Exit(1)
}

type key struct {
	p int32
	o int64
}

func newClient(broker string, opts ...kgo.Opt) *kgo.Client {
	base := []kgo.Opt{kgo.SeedBrokers(broker), kgo.ClientID("ck-it-franz"),
		kgo.FetchMaxWait(200 * time.Millisecond)}
	cl, err := kgo.NewClient(append(base, opts...)...)
	if err != nil {
		fail("NewClient: %v", err)
	}
	return cl
}

// produce sends n records round-robin over parts partitions, starting at
// index from; returns partition/offset -> value.
func produce(ctx context.Context, broker string, parts int32, from, n int) map[key]string {
	cl := newClient(broker, kgo.RequiredAcks(kgo.AllISRAcks()), kgo.RecordPartitioner(kgo.ManualPartitioner()))
	defer cl.Close()
	recs := make([]*kgo.Record, 0, n)
	for i := from; i < from+n; i++ {
		recs = append(recs, &kgo.Record{Topic: topic, Partition: int32(i) % parts,
			Key: []byte(fmt.Sprintf("key-%d", i)), Value: []byte(fmt.Sprintf("value-%d", i))})
	}
	res := cl.ProduceSync(ctx, recs...)
	if err := res.FirstErr(); err != nil {
		fail("produce: %v", err)
	}
	out := map[key]string{}
	for _, r := range res {
		out[key{r.Record.Partition, r.Record.Offset}] = string(r.Record.Value)
	}
	return out
}

// poll reads from cl until got holds want records or the deadline passes.
func poll(ctx context.Context, cl *kgo.Client, mu *sync.Mutex, got map[key]string, want int, what string) {
	deadline := time.Now().Add(40 * time.Second)
	for {
		mu.Lock()
		n := len(got)
		mu.Unlock()
		if n >= want {
			return
		}
		if time.Now().After(deadline) {
			fail("%s: read %d of %d records in 40 s", what, n, want)
		}
		pctx, cancel := context.WithTimeout(ctx, time.Second)
		fs := cl.PollFetches(pctx)
		cancel()
		for _, fe := range fs.Errors() {
			if !errors.Is(fe.Err, context.DeadlineExceeded) {
				fail("%s: fetch %s/%d: %v", what, fe.Topic, fe.Partition, fe.Err)
			}
		}
		mu.Lock()
		fs.EachRecord(func(r *kgo.Record) {
			k := key{r.Partition, r.Offset}
			if _, dup := got[k]; dup {
				fail("%s: record %d/%d read twice", what, r.Partition, r.Offset)
			}
			got[k] = string(r.Value)
		})
		mu.Unlock()
	}
}

func same(what string, got, want map[key]string) {
	if len(got) != len(want) {
		fail("%s: %d records, want %d", what, len(got), len(want))
	}
	for k, v := range want {
		if got[k] != v {
			fail("%s: partition %d offset %d is %q, want %q", what, k.p, k.o, got[k], v)
		}
	}
}

func endOffsets(ctx context.Context, adm *kadm.Client) map[int32]int64 {
	lo, err := adm.ListEndOffsets(ctx, topic)
	if err != nil || lo.Error() != nil {
		fail("ListEndOffsets: %v %v", err, lo.Error())
	}
	out := map[int32]int64{}
	lo.Each(func(o kadm.ListedOffset) { out[o.Partition] = o.Offset })
	return out
}

func main() {
	if len(os.Args) > 1 && os.Args[1] == "cluster" {
		runCluster(os.Args[2:]) // cluster.go
		return
	}
	broker := flag.String("broker", "", "bootstrap HOST:PORT")
	n := flag.Int("n", 400, "records to produce")
	flag.Parse()
	ctx, cancel := context.WithTimeout(context.Background(), 100*time.Second)
	defer cancel()

	admCl := newClient(*broker)
	defer admCl.Close()
	adm := kadm.NewClient(admCl)

	// admin
	retention := "3600000"
	ct, err := adm.CreateTopics(ctx, 3, 1, map[string]*string{"retention.ms": &retention}, topic)
	if err != nil || ct[topic].Err != nil {
		fail("CreateTopics: %v %v", err, ct[topic].Err)
	}
	dup, err := adm.CreateTopics(ctx, 3, 1, nil, topic)
	if err != nil || !errors.Is(dup[topic].Err, kerr.TopicAlreadyExists) {
		fail("duplicate CreateTopics: %v %v, want TOPIC_ALREADY_EXISTS", err, dup[topic].Err)
	}
	td, err := adm.ListTopics(ctx, topic)
	if err != nil || td[topic].Err != nil || len(td[topic].Partitions) != 3 {
		fail("ListTopics: %v %+v", err, td[topic])
	}
	rc, err := adm.DescribeTopicConfigs(ctx, topic)
	if err != nil || len(rc) != 1 || rc[0].Err != nil {
		fail("DescribeTopicConfigs: %v %+v", err, rc)
	}
	found := false
	for _, c := range rc[0].Configs {
		if c.Key == "retention.ms" && c.MaybeValue() == retention {
			found = true
		}
	}
	if !found {
		fail("DescribeTopicConfigs: retention.ms=%s missing", retention)
	}
	cp, err := adm.CreatePartitions(ctx, 1, topic)
	if err != nil || cp[topic].Err != nil {
		fail("CreatePartitions: %v %v", err, cp[topic].Err)
	}
	parts := int32(4)
	deadline := time.Now().Add(10 * time.Second)
	for {
		td, err = adm.ListTopics(ctx, topic)
		if err == nil && len(td[topic].Partitions) == int(parts) && td[topic].Partitions.NumReplicas() == 1 {
			break
		}
		if time.Now().After(deadline) {
			fail("after CreatePartitions: %v %+v", err, td[topic])
		}
		time.Sleep(50 * time.Millisecond)
	}
	fmt.Println("admin ok")

	// produce
	sent := produce(ctx, *broker, parts, 0, *n)
	perPart := map[int32]int64{}
	for k := range sent {
		perPart[k.p]++
	}
	for k := range sent {
		if k.o >= perPart[k.p] {
			fail("produce: offset %d on partition %d of %d records", k.o, k.p, perPart[k.p])
		}
	}
	fmt.Printf("produce ok: %d records\n", len(sent))

	// consume (no group)
	offs := map[int32]kgo.Offset{}
	for p := int32(0); p < parts; p++ {
		offs[p] = kgo.NewOffset().AtStart()
	}
	cons := newClient(*broker, kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{topic: offs}))
	var mu sync.Mutex
	got := map[key]string{}
	poll(ctx, cons, &mu, got, len(sent), "direct consumer")
	cons.Close()
	same("direct consumer", got, sent)
	ends := endOffsets(ctx, adm)
	for p := int32(0); p < parts; p++ {
		if ends[p] != perPart[p] {
			fail("end offset of partition %d is %d, want %d", p, ends[p], perPart[p])
		}
	}
	fmt.Println("consume ok")

	// group: A reads all and commits
	a := newClient(*broker, kgo.ConsumerGroup(group), kgo.ConsumeTopics(topic), kgo.DisableAutoCommit(),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	gotA := map[key]string{}
	poll(ctx, a, &mu, gotA, len(sent), "member A")
	same("member A", gotA, sent)
	if err := a.CommitUncommittedOffsets(ctx); err != nil {
		fail("member A commit: %v", err)
	}
	a.LeaveGroup()
	a.Close()
	fo, err := adm.FetchOffsets(ctx, group)
	if err != nil || fo.Error() != nil {
		fail("FetchOffsets: %v %v", err, fo.Error())
	}
	for p := int32(0); p < parts; p++ {
		r, ok := fo.Lookup(topic, p)
		if !ok || r.At != ends[p] {
			fail("committed offset of partition %d: %+v, want %d", p, r, ends[p])
		}
	}
	more := produce(ctx, *broker, parts, *n, 40)

	// B and C join together and resume at the commits.
	gotBC := map[key]string{}
	var wg sync.WaitGroup
	members := []*kgo.Client{}
	for i := 0; i < 2; i++ {
		m := newClient(*broker, kgo.ConsumerGroup(group), kgo.ConsumeTopics(topic), kgo.DisableAutoCommit(),
			kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()), kgo.ClientID(fmt.Sprintf("ck-it-franz-%d", i)))
		members = append(members, m)
	}
	for _, m := range members {
		wg.Add(1)
		go func(m *kgo.Client) { defer wg.Done(); poll(ctx, m, &mu, gotBC, len(more), "members B+C") }(m)
	}
	wg.Wait()
	same("members B+C", gotBC, more)
	deadline = time.Now().Add(30 * time.Second)
	for {
		dg, err := adm.DescribeGroups(ctx, group)
		g := dg[group]
		owned := []int32{}
		if err == nil && g.Err == nil {
			for _, m := range g.Members {
				if c, ok := m.Assigned.AsConsumer(); ok {
					for _, t := range c.Topics {
						owned = append(owned, t.Partitions...)
					}
				}
			}
		}
		sort.Slice(owned, func(i, j int) bool { return owned[i] < owned[j] })
		if err == nil && g.State == "Stable" && len(g.Members) == 2 && fmt.Sprint(owned) == "[0 1 2 3]" {
			fmt.Printf("group ok: %s, 2 members own %v\n", g.State, owned)
			break
		}
		if time.Now().After(deadline) {
			fail("DescribeGroups: %v state %q, %d members owning %v", err, g.State, len(g.Members), owned)
		}
		time.Sleep(100 * time.Millisecond)
	}
	for _, m := range members {
		m.Close()
	}

	// delete
	dt, err := adm.DeleteTopics(ctx, topic)
	if err != nil || dt[topic].Err != nil {
		fail("DeleteTopics: %v %v", err, dt[topic].Err)
	}
	deadline = time.Now().Add(10 * time.Second)
	for {
		all, err := adm.ListTopics(ctx)
		if err == nil && !all.Has(topic) {
			break
		}
		if time.Now().After(deadline) {
			fail("%s still listed after DeleteTopics (%v)", topic, err)
		}
		time.Sleep(50 * time.Millisecond)
	}
	fmt.Println("delete ok")
}
