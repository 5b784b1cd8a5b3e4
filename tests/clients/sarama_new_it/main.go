// tests/clients/sarama_new_it/main.go: today's IBM/sarama (Version 3.9) against the broker.
//
// Usage: sarama-it -broker HOST:PORT [-n N], or sarama-it cluster ... (cluster.go:
// the driver of tests/integration/test_cluster_clients.py).
//
// Built by deploy/install-deps.sh into build/go/sarama-it (module pinned by
// go.mod/go.sum beside this file; Debian's sarama 1.22 keeps its own tests in
// ../sarama_it and ../sarama_group) and run by
// tests/integration/test_go_clients.py. The same steps as ../franz_it, each
// failing the process (exit 1, the reason on stderr):
//
//	admin:   CreateTopic (3 partitions, a topic config), a duplicate create
//	         (TOPIC_ALREADY_EXISTS), ListTopics, DescribeConfig,
//	         CreatePartitions (3 -> 4);
//	produce: a SyncProducer, idempotent, acks=all, N keyed records to
//	         explicit partitions; offsets 0.. per partition;
//	consume: a PartitionConsumer per partition from the oldest offset reads
//	         exactly those records; GetOffset(newest) matches;
//	group:   member A reads everything, commits, leaves; the committed
//	         offsets (OffsetFetch) equal the end offsets; 40 more records;
//	         members B and C join together and read exactly the 40 new ones;
//	         DescribeConsumerGroups shows both, Stable, owning all partitions;
//	delete:  DeleteTopic, and the topic is gone from ListTopics.
//
// The group handlers run on sarama's goroutines; shared state is under mu.
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

	"github.com/IBM/sarama"
)

const (
	topic = "sarama-new-topic"
	group = "sarama-new-group"
)

func fail(format string, a ...any) {
	fmt.Fprintf(os.Stderr, "FAIL: "+format+"\n", a...)
	os.Exit(1)
}

type key struct {
	p int32
	o int64
}

func config(id string) *sarama.Config {
	c := sarama.NewConfig()
	c.Version = sarama.V3_9_0_0
	c.ClientID = id
	c.Consumer.MaxWaitTime = 200 * time.Millisecond
	c.Consumer.Offsets.Initial = sarama.OffsetOldest
	c.Consumer.Offsets.AutoCommit.Enable = false
	c.Consumer.Group.Rebalance.GroupStrategies = []sarama.BalanceStrategy{sarama.NewBalanceStrategyRange()}
	c.Metadata.AllowAutoTopicCreation = false
	return c
}

func produce(broker string, parts int32, from, n int) map[key]string {
	c := config("ck-it-sarama-producer")
	c.Producer.Return.Successes = true
	c.Producer.RequiredAcks = sarama.WaitForAll
	c.Producer.Idempotent = true
	c.Net.MaxOpenRequests = 1
	c.Producer.Partitioner = sarama.NewManualPartitioner
	p, err := sarama.NewSyncProducer([]string{broker}, c)
	if err != nil {
		fail("NewSyncProducer: %v", err)
	}
	defer p.Close()
	msgs := make([]*sarama.ProducerMessage, 0, n)
	for i := from; i < from+n; i++ {
		msgs = append(msgs, &sarama.ProducerMessage{Topic: topic, Partition: int32(i) % parts,
			Key: sarama.StringEncoder(fmt.Sprintf("key-%d", i)), Value: sarama.StringEncoder(fmt.Sprintf("value-%d", i))})
	}
	if err := p.SendMessages(msgs); err != nil {
		fail("SendMessages: %v", err)
	}
	out := map[key]string{}
	for _, m := range msgs {
		v, _ := m.Value.Encode()
		out[key{m.Partition, m.Offset}] = string(v)
	}
	return out
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

// handler collects records into got (under mu), marking each; commits when
// got holds want records and at the end of each session (Cleanup).
type handler struct {
	mu   *sync.Mutex
	got  map[key]string
	want int
	what string
	done chan struct{}
	once *sync.Once
}

func (h handler) Setup(sarama.ConsumerGroupSession) error { return nil }
func (h handler) Cleanup(s sarama.ConsumerGroupSession) error {
	s.Commit() // before a rebalance hands the partitions on: no record read twice
	return nil
}
func (h handler) ConsumeClaim(s sarama.ConsumerGroupSession, c sarama.ConsumerGroupClaim) error {
	for m := range c.Messages() {
		h.mu.Lock()
		k := key{m.Partition, m.Offset}
		if _, dup := h.got[k]; dup {
			h.mu.Unlock()
			fail("%s: record %d/%d read twice", h.what, m.Partition, m.Offset)
		}
		h.got[k] = string(m.Value)
		n := len(h.got)
		h.mu.Unlock()
		s.MarkMessage(m, "")
		if n >= h.want {
			s.Commit()
			h.once.Do(func() { close(h.done) })
		}
	}
	return nil
}

// members runs count group members until got holds want records; returns
// the live groups (call closeAll) so DescribeConsumerGroups can see them.
func members(broker string, count int, got map[key]string, want int, what string) ([]sarama.ConsumerGroup, context.CancelFunc, *sync.WaitGroup) {
	var mu sync.Mutex
	h := handler{mu: &mu, got: got, want: want, what: what, done: make(chan struct{}), once: &sync.Once{}}
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	gs := []sarama.ConsumerGroup{}
	for i := 0; i < count; i++ {
		g, err := sarama.NewConsumerGroup([]string{broker}, group, config(fmt.Sprintf("ck-it-sarama-%s-%d", what, i)))
		if err != nil {
			fail("NewConsumerGroup: %v", err)
		}
		gs = append(gs, g)
		wg.Add(1)
		go func() {
			defer wg.Done()
			for ctx.Err() == nil {
				if err := g.Consume(ctx, []string{topic}, h); err != nil && !errors.Is(err, sarama.ErrClosedConsumerGroup) {
					fail("%s: Consume: %v", what, err)
				}
			}
		}()
		go func() {
			for err := range g.Errors() {
				fail("%s: group error: %v", what, err)
			}
		}()
	}
	select {
	case <-h.done:
	case <-time.After(40 * time.Second):
		mu.Lock()
		n := len(got)
		mu.Unlock()
		fail("%s: read %d of %d records in 40 s", what, n, want)
	}
	return gs, cancel, &wg
}

func closeAll(gs []sarama.ConsumerGroup, cancel context.CancelFunc, wg *sync.WaitGroup) {
	cancel()
	wg.Wait()
	for _, g := range gs {
		if err := g.Close(); err != nil {
			fail("consumer group Close: %v", err)
		}
	}
}

func main() {
	if len(os.Args) > 1 && os.Args[1] == "cluster" {
		runCluster(os.Args[2:]) // cluster.go
		return
	}
	broker := flag.String("broker", "", "bootstrap HOST:PORT")
	n := flag.Int("n", 400, "records to produce")
	flag.Parse()
	go func() { time.Sleep(100 * time.Second); fail("not done in 100 s") }()

	client, err := sarama.NewClient([]string{*broker}, config("ck-it-sarama-admin"))
	if err != nil {
		fail("NewClient: %v", err)
	}
	adm, err := sarama.NewClusterAdminFromClient(client)
	if err != nil {
		fail("NewClusterAdmin: %v", err)
	}
	defer adm.Close()

	// admin
	retention := "3600000"
	detail := &sarama.TopicDetail{NumPartitions: 3, ReplicationFactor: 1,
		ConfigEntries: map[string]*string{"retention.ms": &retention}}
	if err := adm.CreateTopic(topic, detail, false); err != nil {
		fail("CreateTopic: %v", err)
	}
	if err := adm.CreateTopic(topic, detail, false); !errors.Is(err, sarama.ErrTopicAlreadyExists) {
		fail("duplicate CreateTopic: %v, want TOPIC_ALREADY_EXISTS", err)
	}
	topics, err := adm.ListTopics()
	if err != nil || topics[topic].NumPartitions != 3 {
		fail("ListTopics: %v %+v", err, topics[topic])
	}
	entries, err := adm.DescribeConfig(sarama.ConfigResource{Type: sarama.TopicResource, Name: topic})
	if err != nil {
		fail("DescribeConfig: %v", err)
	}
	found := false
	for _, e := range entries {
		if e.Name == "retention.ms" && e.Value == retention {
			found = true
		}
	}
	if !found {
		fail("DescribeConfig: retention.ms=%s missing", retention)
	}
	parts := int32(4)
	if err := adm.CreatePartitions(topic, parts, nil, false); err != nil {
		fail("CreatePartitions: %v", err)
	}
	deadline := time.Now().Add(10 * time.Second)
	for {
		_ = client.RefreshMetadata(topic)
		ps, err := client.Partitions(topic)
		if err == nil && len(ps) == int(parts) {
			break
		}
		if time.Now().After(deadline) {
			fail("after CreatePartitions: %v %v", err, ps)
		}
		time.Sleep(50 * time.Millisecond)
	}
	fmt.Println("admin ok")

	// produce
	sent := produce(*broker, parts, 0, *n)
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
	cons, err := sarama.NewConsumer([]string{*broker}, config("ck-it-sarama-consumer"))
	if err != nil {
		fail("NewConsumer: %v", err)
	}
	got := map[key]string{}
	upTo := int64(0) // records in partitions 0..p
	for p := int32(0); p < parts; p++ {
		upTo += perPart[p]
		pc, err := cons.ConsumePartition(topic, p, sarama.OffsetOldest)
		if err != nil {
			fail("ConsumePartition %d: %v", p, err)
		}
		for int64(len(got)) < upTo {
			select {
			case m := <-pc.Messages():
				got[key{m.Partition, m.Offset}] = string(m.Value)
			case e := <-pc.Errors():
				fail("partition consumer %d: %v", p, e)
			case <-time.After(20 * time.Second):
				fail("partition consumer %d: stalled at %d records", p, len(got))
			}
		}
		pc.Close()
	}
	cons.Close()
	same("direct consumer", got, sent)
	ends := map[int32]int64{}
	for p := int32(0); p < parts; p++ {
		ends[p], err = client.GetOffset(topic, p, sarama.OffsetNewest)
		if err != nil || ends[p] != perPart[p] {
			fail("end offset of partition %d: %d %v, want %d", p, ends[p], err, perPart[p])
		}
	}
	fmt.Println("consume ok")

	// group: A reads all, commits, leaves
	gotA := map[key]string{}
	gs, cancel, wg := members(*broker, 1, gotA, len(sent), "member A")
	closeAll(gs, cancel, wg)
	same("member A", gotA, sent)
	fo, err := adm.ListConsumerGroupOffsets(group, nil)
	if err != nil {
		fail("ListConsumerGroupOffsets: %v", err)
	}
	for p := int32(0); p < parts; p++ {
		b := fo.GetBlock(topic, p)
		if b == nil || b.Err != sarama.ErrNoError || b.Offset != ends[p] {
			fail("committed offset of partition %d: %+v, want %d", p, b, ends[p])
		}
	}
	more := produce(*broker, parts, *n, 40)

	// B and C together resume at the commits.
	gotBC := map[key]string{}
	gs, cancel, wg = members(*broker, 2, gotBC, len(more), "members B+C")
	same("members B+C", gotBC, more)
	deadline = time.Now().Add(30 * time.Second)
	for {
		dg, err := adm.DescribeConsumerGroups([]string{group})
		owned := []int32{}
		state, count := "", 0
		if err == nil && len(dg) == 1 {
			state, count = dg[0].State, len(dg[0].Members)
			for _, m := range dg[0].Members {
				if a, err := m.GetMemberAssignment(); err == nil && a != nil {
					owned = append(owned, a.Topics[topic]...)
				}
			}
		}
		sort.Slice(owned, func(i, j int) bool { return owned[i] < owned[j] })
		if state == "Stable" && count == 2 && fmt.Sprint(owned) == "[0 1 2 3]" {
			fmt.Printf("group ok: %s, 2 members own %v\n", state, owned)
			break
		}
		if time.Now().After(deadline) {
			fail("DescribeConsumerGroups: %v state %q, %d members owning %v", err, state, count, owned)
		}
		time.Sleep(100 * time.Millisecond)
	}
	closeAll(gs, cancel, wg)

	// delete
	if err := adm.DeleteTopic(topic); err != nil {
		fail("DeleteTopic: %v", err)
	}
	deadline = time.Now().Add(10 * time.Second)
	for {
		all, err := adm.ListTopics()
		if _, still := all[topic]; err == nil && !still {
			break
		}
		if time.Now().After(deadline) {
			fail("%s still listed after DeleteTopic (%v)", topic, err)
		}
		time.Sleep(50 * time.Millisecond)
	}
	fmt.Println("delete ok")
}
