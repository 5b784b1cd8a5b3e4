// tests/clients/sarama_group/main.go: sarama 1.22.1 ConsumerGroup client
// (tests/integration/test_groups_sarama.py).
//
// Usage: sarama-group -broker 127.0.0.1:PORT -topic T -group G -n N
//
//  1. A SyncProducer (WaitForAll, manual partitioner) sends N keyed messages,
//     message i to partition i%3 of T (auto-created with 3 partitions), and
//     records each offset.
//  2. Session 1: a ConsumerGroup (Version V2_2_0_0) consumes T, checks every
//     message against what was sent and marks it (MarkMessage); after N/2
//     messages it cancels its context, so sarama's offset manager commits the
//     marks when the session ends, and closes the group (LeaveGroup).
//  3. ClusterAdmin.ListConsumerGroupOffsets (OffsetFetch) must return, per
//     partition, exactly one past the last marked message.
//  4. Session 2: a new ConsumerGroup with the same group id must start each
//     partition exactly there and read the rest; across both sessions every
//     message is read exactly once. Its marks are committed at the end too.
//  5. ListConsumerGroupOffsets equals the end offsets; DescribeConsumerGroups
//     says Empty.
//
// Exit 0 when all of that held. Build offline (Debian's sources):
// GOPATH=/usr/share/gocode GO111MODULE=off go build -o OUT .
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"sync"
	"time"

	"github.com/Shopify/sarama"
)

const parts = 3

func die(format string, args ...interface{}) {
	fmt.Fprintf(os.Stderr, "FAIL: "+format+"\n", args...)
	os.Exit(1)
}

type sent struct{ key, value string }

// handler reads claims until `stopAfter` messages were read in this session
// (0: until everything sent was read across sessions).
type handler struct {
	mu        sync.Mutex
	sent      map[int32]map[int64]sent
	seen      map[int32]map[int64]int // reads per message, over all sessions
	first     map[int32]int64         // first offset this session read per partition
	next      map[int32]int64         // one past the last marked message per partition
	session   int                     // reads this session
	stopAfter int
	total     int
	cancel    context.CancelFunc
	err       error
}

func (h *handler) Setup(s sarama.ConsumerGroupSession) error {
	fmt.Printf("session: member %s generation %d claims %v\n", s.MemberID(), s.GenerationID(), s.Claims())
	return nil
}

func (h *handler) Cleanup(sarama.ConsumerGroupSession) error { return nil }

func (h *handler) ConsumeClaim(s sarama.ConsumerGroupSession, c sarama.ConsumerGroupClaim) error {
	for m := range c.Messages() {
		h.mu.Lock()
		done := h.stopAfter > 0 && h.session >= h.stopAfter
		if !done {
			want, ok := h.sent[m.Partition][m.Offset]
			if !ok || string(m.Key) != want.key || string(m.Value) != want.value {
				h.err = fmt.Errorf("partition %d offset %d: got %q=%q, sent %+v", m.Partition, m.Offset, m.Key, m.Value, want)
			}
			if _, ok := h.first[m.Partition]; !ok {
				h.first[m.Partition] = m.Offset
			}
			h.seen[m.Partition][m.Offset]++
			h.session++
			s.MarkMessage(m, "")
			h.next[m.Partition] = m.Offset + 1
		}
		reads := 0
		for _, offs := range h.seen {
			reads += len(offs)
		}
		if h.err != nil || (h.stopAfter > 0 && h.session >= h.stopAfter) || (h.stopAfter == 0 && reads == h.total) {
			h.cancel()
		}
		h.mu.Unlock()
	}
	return nil
}

func runSession(brokers []string, group, topic string, config *sarama.Config, h *handler, stopAfter int) {
	h.mu.Lock()
	h.first = map[int32]int64{}
	h.session = 0
	h.stopAfter = stopAfter
	h.mu.Unlock()
	cg, err := sarama.NewConsumerGroup(brokers, group, config)
	if err != nil {
		die("NewConsumerGroup: %v", err)
	}
	go func() {
		for e := range cg.Errors() {
			fmt.Fprintf(os.Stderr, "consumer group error: %v\n", e)
		}
	}()
	ctx, cancel := context.WithTimeout(context.Background(), 40*time.Second)
	h.cancel = cancel
	for ctx.Err() == nil {
		if err := cg.Consume(ctx, []string{topic}, h); err != nil {
			die("Consume: %v", err)
		}
	}
	if err := cg.Close(); err != nil {
		die("Close: %v", err)
	}
	if ctx.Err() == context.DeadlineExceeded {
		die("session timed out after %d reads", h.session)
	}
	if h.err != nil {
		die("%v", h.err)
	}
}

func committed(admin sarama.ClusterAdmin, group, topic string) map[int32]int64 {
	res, err := admin.ListConsumerGroupOffsets(group, map[string][]int32{topic: {0, 1, 2}})
	if err != nil {
		die("ListConsumerGroupOffsets: %v", err)
	}
	out := map[int32]int64{}
	for p := int32(0); p < parts; p++ {
		b := res.GetBlock(topic, p)
		if b == nil || b.Err != sarama.ErrNoError {
			die("ListConsumerGroupOffsets %s/%d: %+v", topic, p, b)
		}
		out[p] = b.Offset
	}
	return out
}

func main() {
	broker := flag.String("broker", "", "host:port")
	topic := flag.String("topic", "sarama-group", "topic")
	group := flag.String("group", "ck-it-sarama-group", "group id")
	n := flag.Int("n", 600, "messages")
	flag.Parse()
	brokers := []string{*broker}

	config := sarama.NewConfig()
	config.ClientID = "ck-it-sarama-group"
	config.Version = sarama.V2_2_0_0
	config.Producer.Return.Successes = true
	config.Producer.RequiredAcks = sarama.WaitForAll
	config.Producer.Partitioner = sarama.NewManualPartitioner
	config.Consumer.Offsets.Initial = sarama.OffsetOldest
	config.Consumer.Offsets.CommitInterval = 200 * time.Millisecond
	config.Consumer.Group.Session.Timeout = 10 * time.Second
	config.Consumer.Group.Heartbeat.Interval = 1 * time.Second
	config.Consumer.MaxWaitTime = 200 * time.Millisecond

	// 1. produce
	prod, err := sarama.NewSyncProducer(brokers, config)
	if err != nil {
		die("NewSyncProducer: %v", err)
	}
	h := &handler{sent: map[int32]map[int64]sent{}, seen: map[int32]map[int64]int{}, next: map[int32]int64{}, total: *n}
	for p := int32(0); p < parts; p++ {
		h.sent[p] = map[int64]sent{}
		h.seen[p] = map[int64]int{}
	}
	var msgs []*sarama.ProducerMessage
	for i := 0; i < *n; i++ {
		msgs = append(msgs, &sarama.ProducerMessage{Topic: *topic, Partition: int32(i % parts),
			Key: sarama.StringEncoder(fmt.Sprintf("k%d", i)), Value: sarama.StringEncoder(fmt.Sprintf("v%d", i))})
	}
	if err := prod.SendMessages(msgs); err != nil {
		die("SendMessages: %v", err)
	}
	for i, m := range msgs {
		h.sent[m.Partition][m.Offset] = sent{fmt.Sprintf("k%d", i), fmt.Sprintf("v%d", i)}
	}
	prod.Close()
	fmt.Printf("produced %d\n", *n)

	admin, err := sarama.NewClusterAdmin(brokers, config)
	if err != nil {
		die("NewClusterAdmin: %v", err)
	}
	defer admin.Close()

	// 2. session 1 stops half way; 3. its marks are the committed offsets.
	runSession(brokers, *group, *topic, config, h, *n/2)
	marked := map[int32]int64{}
	for p := int32(0); p < parts; p++ {
		marked[p] = h.next[p]
		if _, ok := h.next[p]; !ok {
			marked[p] = -1 // nothing read: no commit
		}
	}
	got := committed(admin, *group, *topic)
	fmt.Printf("session 1 read %d, marked %v, committed %v\n", h.session, marked, got)
	for p := int32(0); p < parts; p++ {
		if got[p] != marked[p] {
			die("partition %d: committed %d after session 1, marked up to %d", p, got[p], marked[p])
		}
	}

	// 4. session 2 resumes exactly at the commits and reads the rest once.
	runSession(brokers, *group, *topic, config, h, 0)
	for p := int32(0); p < parts; p++ {
		want := got[p]
		if want < 0 {
			want = 0
		}
		if f, ok := h.first[p]; ok && f != want {
			die("partition %d: session 2 started at %d, committed %d", p, f, want)
		}
		for o := range h.sent[p] {
			if h.seen[p][o] != 1 {
				die("partition %d offset %d read %d times over both sessions", p, o, h.seen[p][o])
			}
		}
	}
	fmt.Printf("session 2 read %d from %v\n", h.session, h.first)

	// 5. everything committed; the group is empty.
	got = committed(admin, *group, *topic)
	for p := int32(0); p < parts; p++ {
		if got[p] != int64(len(h.sent[p])) {
			die("partition %d: committed %d at the end, end offset %d", p, got[p], len(h.sent[p]))
		}
	}
	desc, err := admin.DescribeConsumerGroups([]string{*group})
	if err != nil || len(desc) != 1 || desc[0].State != "Empty" || len(desc[0].Members) != 0 {
		die("DescribeConsumerGroups: %v %+v", err, desc)
	}
	fmt.Printf("ok: committed %v, group %s\n", got, desc[0].State)
}
