// tests/clients/sarama_new_it/cluster.go: IBM/sarama's driver for
// tests/integration/test_cluster_clients.py (issue #12), run as
//
//	sarama-it cluster produce BOOTSTRAP TOPIC N CHUNK
//	sarama-it cluster consume BOOTSTRAP TOPIC GROUP FIRST HALF
//
// The line protocol is described in test_cluster_clients.py. The producer is
// a SyncProducer, idempotent (one request in flight, as sarama requires),
// acks=all, records to explicit partitions, SendMessages per chunk; sarama's
// default retry budget (3 x 100 ms) is shorter than a failover, so it
// retries for up to 200 x 100 ms. The group members are ConsumerGroups
// (range, auto commit off, 4 KiB a partition per fetch so member 1 stops
// inside partitions): each marks what it delivers and Commit()s; sarama does
// not hand the commit's answer back, so the member reads the group's offsets
// back (OffsetFetch through ClusterAdmin) until they equal its marks, and
// prints those as committed. Member 1 pauses (inside its claim) after FIRST
// records until the test says `resume`.
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
	case len(args) == 6 && args[0] == "consume":
		clusterConsume(strings.Split(args[1], ","), args[2], args[3], atoi(args[4]), atoi(args[5]))
	default:
		fail("usage: cluster produce BOOTSTRAP TOPIC N CHUNK | cluster consume BOOTSTRAP TOPIC GROUP FIRST HALF")
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
// (closes done) once enough(next, count) holds after a record; once
// pauseAt(count) holds (if given) it commits, waits until the group's offsets
// show the marks, prints `paused` and waits for `resume`.
type clusterHandler struct {
	mu      *sync.Mutex
	next    map[int32]int64
	count   *int
	paused  *bool
	enough  func(map[int32]int64, int) bool
	pauseAt func(int) bool
	confirm func(map[int32]int64) bool
	in      *bufio.Reader
	done    chan struct{}
	once    *sync.Once
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
		if !*h.paused && h.pauseAt != nil && h.pauseAt(*h.count) {
			*h.paused = true
			h.commit(s)
			fmt.Println("paused")
			waitLine(h.in, "resume")
		}
		if h.enough(h.next, *h.count) {
			h.commit(s)
			h.once.Do(func() { close(h.done) })
		}
		h.mu.Unlock()
	}
	return nil
}

// commit calls the session's Commit() until the group's offsets show the
// marks (60 s at most): sarama's Commit() tries the coordinator it knows once
// and reports no outcome, so after a coordinator's death it has to be
// called again. Prints the offsets as `committed` lines.
func (h clusterHandler) commit(s sarama.ConsumerGroupSession) {
	deadline := time.Now().Add(60 * time.Second)
	for {
		s.Commit()
		if h.confirm(h.next) {
			return
		}
		if time.Now().After(deadline) {
			h.mu.Unlock()
			fail("the group's offsets never showed the marks %v", h.next)
		}
		fmt.Println("note Commit() did not reach the group, committing again")
	}
}

func waitLine(in *bufio.Reader, want string) []string {
	line, err := in.ReadString('\n')
	f := strings.Fields(line)
	if err != nil || len(f) < 1 || f[0] != want {
		fail("expected `%s`, got %q (%v)", want, line, err)
	}
	return f[1:]
}

// groupOffsets reads GROUP's committed offsets of topic (OffsetFetch through
// ClusterAdmin); nil on an error.
func groupOffsets(seeds []string, topic, group string, parts []int32) map[int32]int64 {
	adm, err := sarama.NewClusterAdmin(seeds, clusterConfig())
	if err != nil {
		return nil
	}
	defer adm.Close()
	res, err := adm.ListConsumerGroupOffsets(group, map[string][]int32{topic: parts})
	if err != nil || res.Err != sarama.ErrNoError {
		return nil
	}
	out := map[int32]int64{}
	for _, p := range parts {
		b := res.GetBlock(topic, p)
		if b == nil || b.Err != sarama.ErrNoError {
			return nil
		}
		out[p] = b.Offset
	}
	return out
}

// confirmed waits (2 s at most) until the group's offsets equal next, and
// prints them as `committed` lines.
func confirmed(seeds []string, topic, group string, next map[int32]int64) bool {
	var parts []int32
	for p := range next {
		parts = append(parts, p)
	}
	sort.Slice(parts, func(i, j int) bool { return parts[i] < parts[j] })
	deadline := time.Now().Add(2 * time.Second)
	for {
		got := groupOffsets(seeds, topic, group, parts)
		same := got != nil
		for _, p := range parts {
			same = same && got[p] == next[p]
		}
		if same {
			for _, p := range parts {
				fmt.Printf("committed %d %d\n", p, got[p])
			}
			return true
		}
		if time.Now().After(deadline) {
			fmt.Printf("note the group's offsets %v, marked %v\n", got, next)
			return false
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// member runs one ConsumerGroup member until enough holds (its handler then
// commits until the group's offsets show it) and leaves. Returns its next
// offsets.
func member(seeds []string, topic, group string, in *bufio.Reader, enough func(map[int32]int64, int) bool,
	pauseAt func(int) bool) map[int32]int64 {
	c := clusterConfig()
	c.Consumer.Fetch.Default = 4096
	c.Consumer.Group.Session.Timeout = 10 * time.Second
	c.Consumer.Group.Rebalance.Timeout = 10 * time.Second
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
	paused := false
	next := map[int32]int64{}
	h := clusterHandler{mu: &mu, next: next, count: &count, paused: &paused, enough: enough, pauseAt: pauseAt,
		confirm: func(n map[int32]int64) bool { return confirmed(seeds, topic, group, n) },
		in:      in, done: make(chan struct{}), once: &sync.Once{}}
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
	if err := g.Close(); err != nil { // its LeaveGroup may meet a dead coordinator: the session times out instead
		fmt.Printf("note ConsumerGroup Close: %v\n", err)
	}
	return next
}

func clusterConsume(seeds []string, topic, group string, first, half int) {
	in := bufio.NewReader(os.Stdin)
	mine := member(seeds, topic, group, in, func(_ map[int32]int64, count int) bool { return count >= half },
		func(count int) bool { return count >= first })
	fmt.Println("closed")
	ends := map[int32]int64{}
	for p, e := range waitLine(in, "go") {
		ends[int32(p)] = int64(atoi(e))
	}
	fmt.Println("member2")
	member(seeds, topic, group, in, func(n map[int32]int64, _ int) bool {
		for p, e := range ends {
			o, ok := n[p]
			if !ok {
				o = mine[p]
			}
			if o < e {
				return false
			}
		}
		return true
	}, nil)
	fmt.Println("done")
}
