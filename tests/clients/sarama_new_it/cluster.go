// tests/clients/sarama_new_it/cluster.go: IBM/sarama's driver for
// tests/integration/test_cluster_clients.py (issue #12), run as
//
//	sarama-it cluster produce BOOTSTRAP TOPIC N CHUNK
//	sarama-it cluster consume BOOTSTRAP TOPIC GROUP HALF
//
// The line protocol is described in test_cluster_clients.py. The producer is
// a SyncProducer, idempotent (one request in flight, as sarama requires),
// acks=all, records to explicit partitions, SendMessages per chunk; sarama's
// default retry budget (3 x 100 ms) is shorter than a failover, so it
// retries for up to 200 x 100 ms. The group members are ConsumerGroups
// (range, auto commit off, 4 KiB a partition per fetch so member 1 stops
// inside partitions): each marks what it delivers and Commit()s; sarama does
// not hand the commit's answer back, so the member reads the group's offsets
// back (OffsetFetch through ClusterAdmin) and prints those as committed.
// Claims run on sarama's goroutines; the output and counts are under mu.
package main

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"os"
	"runtime/debug"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/IBM/sarama"
)

func saramaVersion() string {
	if bi, ok := debug.ReadBuildInfo(); ok {
		for _, d := range bi.Deps {
			if d.Path == "github.com/IBM/sarama" {
				return d.Version
			}
		}
	}
	return "unknown"
}

func atoi(s string) int {
	n, err := strconv.Atoi(s)
	if err != nil {
		fail("not a number: %q", s)
	}
	return n
}

func clusterConfig() *sarama.Config {
	c := config("ck-cc-sarama")
	c.Metadata.Retry.Max = 100
	c.Metadata.Retry.Backoff = 100 * time.Millisecond
	return c
}

func runCluster(args []string) {
	go func() { time.Sleep(150 * time.Second); fail("cluster %v: not done in 150 s", args) }()
	fmt.Printf("client IBM/sarama %s idempotent=1\n", saramaVersion())
	switch {
	case len(args) == 5 && args[0] == "produce":
		clusterProduce(strings.Split(args[1], ","), args[2], atoi(args[3]), atoi(args[4]))
	case len(args) == 5 && args[0] == "consume":
		clusterConsume(strings.Split(args[1], ","), args[2], args[3], atoi(args[4]))
	default:
		fail("usage: cluster produce BOOTSTRAP TOPIC N CHUNK | cluster consume BOOTSTRAP TOPIC GROUP HALF")
	}
}

func clusterProduce(seeds []string, topic string, n, chunk int) {
	c := clusterConfig()
	c.Producer.Return.Successes = true
	c.Producer.RequiredAcks = sarama.WaitForAll
	c.Producer.Idempotent = true
	c.Net.MaxOpenRequests = 1
	c.Producer.Partitioner = sarama.NewManualPartitioner
	c.Producer.Retry.Max = 200
	c.Producer.Retry.Backoff = 100 * time.Millisecond
	p, err := sarama.NewSyncProducer(seeds, c)
	if err != nil {
		fail("NewSyncProducer: %v", err)
	}
	defer p.Close()
	acked, failed := 0, 0
	for start := 0; start < n; start += chunk {
		var msgs []*sarama.ProducerMessage
		for i := start; i < n && i < start+chunk; i++ {
			msgs = append(msgs, &sarama.ProducerMessage{Topic: topic, Partition: int32(i % 3), Metadata: i,
				Key: sarama.StringEncoder(fmt.Sprintf("k%d", i)), Value: sarama.StringEncoder(fmt.Sprintf("v%06d", i))})
		}
		bad := map[int]error{}
		if err := p.SendMessages(msgs); err != nil {
			var pe sarama.ProducerErrors
			if !errors.As(err, &pe) {
				fail("SendMessages: %v", err)
			}
			for _, e := range pe {
				bad[e.Msg.Metadata.(int)] = e.Err
			}
		}
		for _, m := range msgs {
			i := m.Metadata.(int)
			if e, ok := bad[i]; ok {
				fmt.Printf("err %d %v\n", i, e)
				failed++
				continue
			}
			fmt.Printf("ack %d %d %d\n", m.Partition, m.Offset, i)
			acked++
		}
	}
	fmt.Printf("produced %d %d\n", acked, failed)
}

// clusterHandler prints each record it is given, marks it, and stops
// (closes done) once enough(next, count) holds after a record.
type clusterHandler struct {
	mu     *sync.Mutex
	next   map[int32]int64
	count  *int
	enough func(map[int32]int64, int) bool
	done   chan struct{}
	once   *sync.Once
}

func (h clusterHandler) Setup(sarama.ConsumerGroupSession) error   { return nil }
func (h clusterHandler) Cleanup(sarama.ConsumerGroupSession) error { return nil }
func (h clusterHandler) ConsumeClaim(s sarama.ConsumerGroupSession, c sarama.ConsumerGroupClaim) error {
	for m := range c.Messages() {
		h.mu.Lock()
		if h.enough(h.next, *h.count) { // finished: deliver nothing more
			h.mu.Unlock()
			return nil
		}
		fmt.Printf("rec %d %d %s\n", m.Partition, m.Offset, m.Value)
		h.next[m.Partition] = m.Offset + 1
		*h.count++
		s.MarkMessage(m, "")
		if h.enough(h.next, *h.count) {
			s.Commit()
			h.once.Do(func() { close(h.done) })
		}
		h.mu.Unlock()
	}
	return nil
}

// member runs one ConsumerGroup member until enough holds, then commits,
// leaves, and prints the offsets the group then has (OffsetFetch).
func member(seeds []string, topic, group string, next map[int32]int64, enough func(map[int32]int64, int) bool) {
	c := clusterConfig()
	c.Consumer.Fetch.Default = 4096
	c.Consumer.Group.Session.Timeout = 10 * time.Second
	c.Consumer.Group.Heartbeat.Interval = time.Second
	c.Consumer.Retry.Backoff = 100 * time.Millisecond
	c.Consumer.Offsets.Retry.Max = 100
	c.Consumer.Group.Rebalance.Retry.Max = 100
	c.Consumer.Group.Rebalance.Retry.Backoff = 200 * time.Millisecond
	c.Consumer.Return.Errors = true
	g, err := sarama.NewConsumerGroup(seeds, group, c)
	if err != nil {
		fail("NewConsumerGroup: %v", err)
	}
	var mu sync.Mutex
	count := 0
	before := map[int32]int64{}
	for p, o := range next {
		before[p] = o
	}
	h := clusterHandler{mu: &mu, next: next, count: &count, enough: enough, done: make(chan struct{}), once: &sync.Once{}}
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		for ctx.Err() == nil {
			if err := g.Consume(ctx, []string{topic}, h); err != nil && !errors.Is(err, sarama.ErrClosedConsumerGroup) {
				mu.Lock()
				fmt.Printf("note Consume: %v\n", err)
				mu.Unlock()
				time.Sleep(200 * time.Millisecond)
			}
		}
	}()
	go func() {
		for err := range g.Errors() {
			mu.Lock()
			fmt.Printf("note group error: %v\n", err)
			mu.Unlock()
		}
	}()
	select {
	case <-h.done:
	case <-time.After(90 * time.Second):
		mu.Lock()
		fail("member of %s: %d records in 90 s (next offsets %v)", group, count, next)
	}
	cancel()
	wg.Wait()
	if err := g.Close(); err != nil {
		fail("ConsumerGroup Close: %v", err)
	}
	// What this member delivered, as the group's offsets now say.
	var parts []int
	for p, o := range next {
		if o != before[p] {
			parts = append(parts, int(p))
		}
	}
	sort.Ints(parts)
	adm, err := sarama.NewClusterAdmin(seeds, clusterConfig())
	if err != nil {
		fail("NewClusterAdmin: %v", err)
	}
	defer adm.Close()
	want := map[string][]int32{topic: {}}
	for _, p := range parts {
		want[topic] = append(want[topic], int32(p))
	}
	deadline := time.Now().Add(30 * time.Second)
	for {
		res, err := adm.ListConsumerGroupOffsets(group, want)
		if err == nil && res.Err == sarama.ErrNoError {
			ok := true
			for _, p := range parts {
				b := res.GetBlock(topic, int32(p))
				if b == nil || b.Err != sarama.ErrNoError {
					ok = false
				}
			}
			if ok {
				for _, p := range parts {
					fmt.Printf("committed %d %d\n", p, res.GetBlock(topic, int32(p)).Offset)
				}
				return
			}
		}
		if time.Now().After(deadline) {
			fail("OffsetFetch of %s: %v %+v", group, err, res)
		}
		time.Sleep(200 * time.Millisecond)
	}
}

func clusterConsume(seeds []string, topic, group string, half int) {
	next := map[int32]int64{}
	member(seeds, topic, group, next, func(_ map[int32]int64, count int) bool { return count >= half })
	fmt.Println("closed")
	line, err := bufio.NewReader(os.Stdin).ReadString('\n')
	f := strings.Fields(line)
	if err != nil || len(f) < 1 || f[0] != "go" {
		fail("expected `go`, got %q (%v)", line, err)
	}
	ends := map[int32]int64{}
	for p, e := range f[1:] {
		ends[int32(p)] = int64(atoi(e))
	}
	fmt.Println("member2")
	member(seeds, topic, group, next, func(n map[int32]int64, _ int) bool {
		for p, e := range ends {
			if n[p] < e {
				return false
			}
		}
		return true
	})
	fmt.Println("done")
}
